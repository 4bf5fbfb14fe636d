// Which mover serves an endpoint, a remote key and a batch (core/mover.h,
// "The data path"): the binding is chosen once, when the endpoint is
// created and when a key is unpacked for it, and a post only looks it up.
//
// Endpoints (BindEndpoint): over the first lane of the mask that reaches the
// peer, HCCS preferred.  HCCS: the cma mover (its peer process), with a UCP
// endpoint beside it for device memory.  RDMA: the AM mover where the lane
// runs over active messages, the network-paths mover once the link's paths
// pair with the peer's, else UCP RMA.
//
// Keys (BindKey): the peer's device memory: UCP RMA, on either lane.  Host
// memory on the RDMA lane: the endpoint's mover.  Host memory on the HCCS
// lane: the direct mapping where the peer shared the region and it maps
// here, else cma; neither is an error.
//
// Batches (PostBound): the mover the keys of its operations are bound to
// (the endpoint's for a flush); an operation without a key ends the batch
// ERR_INVALID before anything moves; a batch that touches device memory
// anywhere goes to UCP RMA whole.  On the HCCS lane one batch may hold keys of the
// mapping and of cma, both synchronous: each then moves its own operations
// in turn.
//
// Thread-safety: as the ABI entries that call them; no state of their own.
#ifndef ADXL_PLUGIN_UCX_UCX_BIND_H_
#define ADXL_PLUGIN_UCX_UCX_BIND_H_

#include <cstddef>
#include <cstdint>

#include <ucp/api/ucp.h>

#include "adxl/plugin/adxl_plugin.h"
#include "core/ucx_blob.h"
#include "ucx_handles.h"

// Connects `ep` (its ctx and id set) to the peer at address `a` over the
// first lane of `lanes` that reaches it and binds its mover; on_error is
// the UCP error handler of its UCP endpoints (arg: ep).  An ADXL_PLUGIN_*
// status; on failure nothing of ep is left open.
int BindEndpoint(adxl_plugin_ep *ep, const ucx_blob::Address &a, uint32_t lanes, ucp_err_handler_cb_t on_error);

// Unpacks key `k` for `ep` into `rkey` and binds its mover; an
// ADXL_PLUGIN_* status (logged).  On failure the caller destroys `rkey`.
int BindKey(adxl_plugin_ep *ep, const ucx_blob::Key &k, adxl_plugin_rkey *rkey);

// Posts `count` operations of `iov` to the movers bound to their keys (see
// above); ends `batch` as Mover::Post does.
void PostBound(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
               adxl_plugin_batch *batch);

#endif  // ADXL_PLUGIN_UCX_UCX_BIND_H_
