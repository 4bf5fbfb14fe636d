// HccsLane: the HCCS lane's (same node) batches of host memory.  Each
// operation goes over the direct mapping of a region its owner shared
// (mapped_lane.h: a memcpy by the posting thread) or else over UCT's
// cross-memory attach (cma_lane.h: process_vm_readv/writev by the posting
// thread and the cma copy threads).  Both are truly one-sided and
// synchronous: the batch is complete (or failed) when Post returns.
//
// Device memory on this lane moves as UCP RMA instead (rma_lane.h); the
// choice is the plugin's Post (ucx_plugin.cc).
//
// Thread-safety: Post may run on any number of threads at once; it keeps no
// state of its own (the endpoint's atomics, and CmaLane's locks).
#ifndef ADXL_PLUGIN_UCX_HCCS_HCCS_LANE_H_
#define ADXL_PLUGIN_UCX_HCCS_HCCS_LANE_H_

#include <cstddef>
#include <cstdint>

#include "adxl/plugin/adxl_plugin.h"
#include "ucx_handles.h"

class HccsLane {
 public:
  // Moves `count` operations of `iov` between this process and ep's peer;
  // sets batch->status before returning.  A peer found gone (cma's ESRCH,
  // or kill(pid, 0) for mapped regions) also marks the endpoint failed.
  static void Post(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count,
                   adxl_plugin_batch *batch);

 private:
  // Operations a batch keeps on the stack: a small batch (a 4 KiB
  // TransferSync) allocates nothing on the shortest path.
  static constexpr size_t kStackOps = 16;
  // Least time between two liveness checks of a peer reached by mapping
  // (kill(pid, 0) costs a system call per batch otherwise): 100 us.
  static constexpr int64_t kAliveCheckNs = 100 * 1000;
};

#endif  // ADXL_PLUGIN_UCX_HCCS_HCCS_LANE_H_
