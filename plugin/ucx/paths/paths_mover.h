// PathsMover: the RDMA lane's mover over several network paths
// (ADXL_UCX_RDMA_PATHS, net_path.h): one connection per path paired with
// the peer's, batches striped over them with failover (net_paths.h).
//
// Registration: a host region registered with every path's UCP context and
// entered in every path's AM transport, so that peers reach it over each path.
// All paths or none: a path that cannot register it fails the registration
// (logged), since a striped batch may touch the region on any path.
// Without paths it does nothing.
//
// Binding (ucx_bind.h): an RDMA-lane endpoint over active messages whose
// paths pair with the peer's is bound to this mover, and so are the host
// keys unpacked for it.  Its main UCP endpoint (the AM mover's, am_mover.h)
// carries only the wire-up probe and the remote keys; its failure does not
// fail the link.
//
// Thread-safety: as Mover (core/mover.h); PathLink's atomics (path_link.h)
// and each path's AmTransport.
#ifndef ADXL_PLUGIN_UCX_PATHS_PATHS_MOVER_H_
#define ADXL_PLUGIN_UCX_PATHS_PATHS_MOVER_H_

#include <memory>
#include <string>
#include <vector>

#include "core/mover.h"
#include "core/plugin_log.h"

class AmMover;
class NetPath;

class PathsMover final : public Mover {
 public:
  // `main`: the AM mover of the context's own worker (the link's main endpoint).
  PathsMover(const std::vector<std::unique_ptr<NetPath>> &paths, AmMover &main, const PluginLog &log)
      : paths_(paths), main_(main), log_(log) {}
  const char *name() const override { return "paths"; }
  int Register(void *addr, size_t len, adxl_plugin_mem *mem) override;
  void Deregister(adxl_plugin_mem *mem) override;
  // count 0: the wire-up probe of every connection of the link.
  void Post(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
            adxl_plugin_batch *batch) override;
  // The path connections (ClosePaths), then the main endpoint (AmMover).
  void Cancel(adxl_plugin_ep *ep, bool force) override;
  // The main endpoint's batches end; the link keeps its paths (false).
  bool EndpointFailed(adxl_plugin_ep *ep, int why) override;
  // "am:tcp/eth1+tcp/eth2" ("down/eth2" for a path down).
  std::string DescribeEndpoint(const adxl_plugin_ep *ep) const override;
  std::string DescribeKey(const adxl_plugin_rkey *rkey) const override;

 private:
  const std::vector<std::unique_ptr<NetPath>> &paths_;  // the context's: fixed while it is open
  AmMover &main_;                                       // the context's
  const PluginLog &log_;                                // the context's
};

#endif  // ADXL_PLUGIN_UCX_PATHS_PATHS_MOVER_H_
