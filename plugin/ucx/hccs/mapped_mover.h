// MappedMover: the HCCS lane's mover over the direct mapping of a peer
// region its owner shared as a file (shared_mapping.h): the pages are mapped
// here when the key is unpacked, and each operation is a memcpy of the
// posting thread.  Truly one-sided and synchronous: a batch is complete (or
// failed) when Post returns.  The copy goes in pieces of at most
// CopyStop::kPieceBytes and stops early (copy_stop.h) when the endpoint is
// cancelled (the batch ends CANCELED) or post_by's deadline passes (ERR_IO).
//
// Registration: host memory that is one shared file mapping is found from
// this process's mappings (no option); its file stays open for the
// registration's life and same-node peers map it through /proc/<pid>/fd/<fd>.
// A region the engine gave a share_path (MallocMem memory) keeps that one.
// A region that is no shared mapping is no error: it moves over cma
// (cma_mover.h).
//
// Binding (ucx_bind.h): a peer's key on an HCCS endpoint is bound to this
// mover when its region could be mapped here; never an endpoint (those are
// cma's, cma_mover.h).
//
// Thread-safety: as Mover (core/mover.h); no locks (an endpoint's liveness
// check is an atomic of the endpoint).
#ifndef ADXL_PLUGIN_UCX_HCCS_MAPPED_MOVER_H_
#define ADXL_PLUGIN_UCX_HCCS_MAPPED_MOVER_H_

#include <cstdint>
#include <string>

#include "core/mover.h"
#include "core/plugin_log.h"
#include "core/ucx_blob.h"

class MappedMover final : public Mover {
 public:
  // piece_delay_us: the test build's seam (CopyStop::piece_delay_us), 0 otherwise.
  MappedMover(const PluginLog &log, unsigned piece_delay_us) : log_(log), piece_delay_us_(piece_delay_us) {}
  const char *name() const override { return "mapped"; }
  // Post: a peer that is gone (kill(pid, 0): the mapping outlives it) fails
  // the batch and the endpoint.
  ADXL_MOVER_DATA_OVERRIDES;
  bool Synchronous() const override { return true; }
  // Never an endpoint's mover: nothing to cancel, describe or report.
  void Cancel(adxl_plugin_ep *, bool) override {}
  bool EndpointFailed(adxl_plugin_ep *ep, int why) override;
  std::string DescribeEndpoint(const adxl_plugin_ep *) const override { return "mapped"; }
  // "mapped/<memfd|shm|hugetlbfs|file>"
  std::string DescribeKey(const adxl_plugin_rkey *rkey) const override;
  void ReleaseKey(adxl_plugin_rkey *rkey) override;

  // Binding: maps the region of key `k` (which its owner shared) into
  // `rkey`; false, logged, when it has no shared file or it cannot be
  // mapped here.
  bool UnpackKey(const ucx_blob::Key &k, adxl_plugin_rkey *rkey);

 private:
  // Least time between two liveness checks of a peer reached by mapping
  // (kill(pid, 0) costs a system call per batch otherwise): 100 us.
  static constexpr int64_t kAliveCheckNs = 100 * 1000;

  const PluginLog &log_;  // the context's, which outlives its movers
  const unsigned piece_delay_us_;
};

#endif  // ADXL_PLUGIN_UCX_HCCS_MAPPED_MOVER_H_
