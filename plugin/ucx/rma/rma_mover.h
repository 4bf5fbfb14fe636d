// RmaMover: the mover of plain UCP RMA — ucp_put_nbx / ucp_get_nbx per
// operation, then one ucp_ep_flush_nbx whose completion completes the batch.
//
// Where it runs:
//  - the RDMA lane where an InfiniBand device exists (UCP RMA is then truly
//    one-sided), or where ADXL_UCX_RDMA_PROTOCOL=rma;
//  - device memory (CUDA/ROCm, where the UCX build and its protocols handle
//    it: DeviceMemorySupport in ucx_context.cc), on either lane, every
//    operation of a batch that touches device memory anywhere: registered
//    with its memory type, moved with its memh and memory type, so that UCX
//    picks cuda_ipc / cuda_copy / GPUDirect RDMA where built in.  Never cma
//    (process_vm_readv reaches host pages only), the direct mapping or the
//    AM mover (both memcpy on the CPU).  Needs a UCX built with CUDA or ROCm
//    and a GPU (Debian's UCX has neither, nor do the CI machines);
//  - a batch of no operations on such an RDMA-lane endpoint (a flush: wire-up).
//
// Completion: the flush's callback runs inside ucp_worker_progress, under
// UCP's worker lock, on whichever thread progresses (usually the progress
// thread, which Post wakes); it stores the status and drops the mover's
// reference.  No locks of its own.
//
// Its endpoints are the plugin's own (core/owned_endpoints.h): UCP pairs
// them with the peer's endpoints to this worker, so a peer's
// active-message request (a peer on the AM protocol: a mixed link) may come
// back on one, and mem_dereg may then close it.  BindEndpoint registers
// each in that table; every read of the endpoint here (a post, its
// description) is in a Use (BeginUse/EndUse) and finds it closed (the
// batch fails ERR_IO) rather than freed, and Cancel closes only what the
// table did not (Disown).  Those calls take the table's lock (the AM
// transport's mu_) around, never across, the UCP calls.
//
// Registration: the region mapped with the UCP context (ucp_mem_map),
// device memory with its memory type.  Its memory handle is what UCP RMA
// puts and gets with, what the AM mover (am_mover.h) hands to UCP, and what
// mem_pack packs as the UCP key; every registration has it, so it comes
// first in the context's MoverSet (after the shared-file search).
//
// Binding (ucx_bind.h): an RDMA-lane endpoint is bound to it where the lane
// runs UCP RMA (an RDMA device, or ADXL_UCX_RDMA_PROTOCOL=rma), and so are
// the host keys unpacked for it; a key of the peer's device memory is bound
// to it on either lane, and a batch that touches device memory anywhere
// goes to it whole.
#ifndef ADXL_PLUGIN_UCX_RMA_RMA_MOVER_H_
#define ADXL_PLUGIN_UCX_RMA_RMA_MOVER_H_

#include <ucp/api/ucp.h>

#include <string>
#include <utility>

#include "core/mover.h"
#include "core/owned_endpoints.h"
#include "core/ucp_core.h"

class RmaMover final : public Mover {
 public:
  // `owned`: the table of the plugin's own UCP endpoints on core's worker
  // (core/owned_endpoints.h), which outlives every endpoint; `device_type`: the
  // memory type device registrations are mapped with; `device_why`: why
  // device memory cannot move (empty: it can).
  RmaMover(const UcpCore &core, OwnedEndpoints &owned, ucs_memory_type_t device_type, std::string device_why)
      : core_(core), owned_(owned), device_type_(device_type), device_why_(std::move(device_why)) {}
  const char *name() const override { return "rma"; }
  // Post: a batch of host memory bound to this mover (PostBound found no
  // device memory in it: it sends those to PostDevice).  count 0: a UCP
  // flush of every connection (wire-up).
  ADXL_MOVER_DATA_OVERRIDES;
  // A batch that touches device memory anywhere (PostBound checked that,
  // once): every operation with its memory type.  It needs a UCP endpoint
  // and a UCP key for each operation, else it fails with ERR_UNSUPPORTED.
  void PostDevice(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count,
                  adxl_plugin_batch *batch);
  // DescribeEndpoint: "rma:tcp/lo".  DescribeKey: "ucp", or "unreachable"
  // for a peer's device region this side cannot reach.
  ADXL_MOVER_ENDPOINT_OVERRIDES;

 private:
  // Post and PostDevice: the puts or gets, then the flush.
  void Issue(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, bool device,
             adxl_plugin_batch *batch);

  const UcpCore &core_;  // the context's, which outlives its movers: UCP context, worker, log
  OwnedEndpoints &owned_;  // the plugin's own endpoints (core/owned_endpoints.h)
  ucs_memory_type_t device_type_;
  std::string device_why_;
};

#endif  // ADXL_PLUGIN_UCX_RMA_RMA_MOVER_H_
