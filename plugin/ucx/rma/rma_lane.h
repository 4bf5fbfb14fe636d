// RmaLane: batches as plain UCP RMA — ucp_put_nbx / ucp_get_nbx per
// operation, then one ucp_ep_flush_nbx whose completion completes the batch.
//
// Where it runs (the plugin's header comment, ucx_plugin.cc):
//  - the RDMA lane where an InfiniBand device exists (UCP RMA is then truly
//    one-sided), or where ADXL_UCX_RDMA_PROTOCOL=rma;
//  - device memory (CUDA/ROCm, where the UCX build and its protocols handle
//    it: DeviceMemorySupport in ucx_context.cc), on either lane, every
//    operation of a batch that touches device memory anywhere: registered
//    with its memory type, moved with its memh and memory type, so that UCX
//    picks cuda_ipc / cuda_copy / GPUDirect RDMA where built in.  Never cma
//    (process_vm_readv reaches host pages only), the direct mapping or the
//    AM lane (both memcpy on the CPU).  Needs a UCX built with CUDA or ROCm
//    and a GPU (Debian's UCX has neither, nor do the CI machines);
//  - a batch of no operations on the RDMA lane (a flush: wire-up).
//
// Completion: the flush's callback runs inside ucp_worker_progress, under
// UCP's worker lock, on whichever thread progresses (usually the progress
// thread, which Post wakes); it stores the status and drops the lane's
// reference.  No locks of its own.
#ifndef ADXL_PLUGIN_UCX_RMA_RMA_LANE_H_
#define ADXL_PLUGIN_UCX_RMA_RMA_LANE_H_

#include <cstddef>

#include "adxl/plugin/adxl_plugin.h"
#include "ucx_handles.h"

class RmaLane {
 public:
  // Posts `count` operations of `iov` on ep->ep and the flush that completes
  // `batch`.  `device`: the batch touches device memory; every operation
  // then needs a UCP endpoint and a UCP remote key, else the batch fails
  // with ERR_UNSUPPORTED.  Errors end up in the batch's status.
  static void Post(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, bool device,
                   adxl_plugin_batch *batch);
};

#endif  // ADXL_PLUGIN_UCX_RMA_RMA_LANE_H_
