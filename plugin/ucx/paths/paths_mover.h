// PathsMover: the RDMA lane's mover over several network paths
// (ADXL_UCX_RDMA_PATHS, net_path.h): one connection per path paired with
// the peer's, batches striped over them with failover (net_paths.h).
//
// Ownership: the paths (each a UCP context, worker and AM transport of its
// own) and their PathFailover are this mover's: made by Open when the
// rdma_paths parameter names some (or finds two or more interfaces), freed
// by Close.  The context drives the paths' workers through the
// ProgressSource interface (core/progress_source.h), which this mover
// implements: the paths' workers and the carrier watch in the progress
// thread's epoll set, the paths' deferred work and the failover worker
// (PathFailover::Run) in its polling loop, the failover's timer as its
// epoll timeout.  Without paths the context does not register it as a
// source and the mover does nothing.
//
// Registration: a host region registered with every path's UCP context and
// entered in every path's AM transport, so that peers reach it over each path.
// All paths or none: a path that cannot register it fails the registration
// (logged), since a striped batch may touch the region on any path.
// Without paths it does nothing.
//
// Binding (ucx_bind.h): an RDMA-lane endpoint over active messages whose
// paths pair with the peer's (Connect) is bound to this mover, and so are
// the host keys unpacked for it.  Its main UCP endpoint (the AM mover's,
// am_mover.h) carries only the wire-up probe and the remote keys; its
// failure does not fail the link.
//
// Locks: none of its own.  The paths and the failover are fixed between
// Open and Close; PathLink's atomics (path_link.h), each path's AmTransport
// and the failover's mu_ (a leaf) do the rest, nested as ucx_context.h says.
//
// Thread-safety: Open, Stop and Close from the context's open/close (Stop
// and Close after the progress thread stopped); the Mover part as Mover
// (core/mover.h); the ProgressSource part as ProgressSource; AddAddresses
// and Connect from any thread (get_address, ep_create).
#ifndef ADXL_PLUGIN_UCX_PATHS_PATHS_MOVER_H_
#define ADXL_PLUGIN_UCX_PATHS_PATHS_MOVER_H_

#include <memory>
#include <string>
#include <vector>

#include "core/mover.h"
#include "core/progress_source.h"
#include "core/ucp_core.h"
#include "core/ucx_blob.h"
#include "core/ucx_params.h"

class AmMover;
class NetPath;
class PathFailover;

class PathsMover final : public Mover, public ProgressSource {
 public:
  // `core`: the context's (its worker, log and wake-up); `main`: the AM
  // mover of the context's own worker (the link's main endpoint).  Both
  // outlive this mover.
  PathsMover(const UcpCore &core, AmMover &main);
  ~PathsMover() override;

  // Opens the paths (the header comment; `over_am`: the RDMA lane runs
  // over active messages, which paths need; `rx_seg_size`: UCX's TCP
  // receive segment for each path's context, empty for UCX's) and, with
  // some, the failover with its carrier watch.  Paths named by the user:
  // false (logged, nothing left open) when one cannot open.
  bool Open(const UcxParams &params, bool over_am, const std::string &rx_seg_size);
  // After the progress thread stopped: a last failover pass ends the striped
  // batches still queued for a re-post, and the carrier watch closes.
  void Stop();
  // Frees the paths (each: its target requests, staging, worker, context),
  // then the failover.  Before the context's main worker is destroyed.
  void Close();
  bool HasPaths() const { return !paths_.empty(); }
  // ",paths(eth1,eth2)" for Query's transports; empty without paths.
  std::string DescribeTransports() const;

  // The paths' worker addresses and subnets, into the address blob.  False
  // (logged) when UCP gives no address.
  bool AddAddresses(ucx_blob::Address *a) const;
  // Pairs this side's paths with the peer's and connects each pair
  // (net_paths.h); sets ep->paths and returns true when some pair exists.
  bool Connect(adxl_plugin_ep *ep, const ucx_blob::Address &peer);

  // Mover.
  const char *name() const override { return "paths"; }
  // Post with count 0: the wire-up probe of every connection of the link.
  ADXL_MOVER_DATA_OVERRIDES;
  // Cancel: the path connections (ClosePaths), then the main endpoint
  // (AmMover).  EndpointFailed: the main endpoint's batches end; the link
  // keeps its paths (false).  DescribeEndpoint: "am:tcp/eth1+tcp/eth2"
  // ("down/eth2" for a path down).
  ADXL_MOVER_ENDPOINT_OVERRIDES;

  // ProgressSource (core/progress_source.h), over the paths' workers.
  unsigned Progress() override;
  // The paths' AM transports' deferred work, then the failover worker when due.
  bool RunDue() override;
  ucs_status_t Arm() override;
  // The failover's timer.
  int TimeoutMs() const override;
  // Each path's worker event fd, and the carrier watch's.
  std::vector<int> EpollFds() const override;
  // The carrier watch's fd: the failover worker reads it when due.
  void Readable(int fd) override;
  TargetMarks MarkTargetOps() override;
  bool TargetOpsBefore(const TargetMarks &marks) override;

 private:
  const UcpCore &core_;
  AmMover &main_;
  std::vector<std::unique_ptr<NetPath>> paths_;  // fixed between Open and Close
  std::unique_ptr<PathFailover> failover_;       // with paths only; fixed between Open and Close
};

#endif  // ADXL_PLUGIN_UCX_PATHS_PATHS_MOVER_H_
