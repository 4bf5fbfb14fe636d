// RmaMover (rma_mover.h): registration with the UCP context, UCP RMA batches, teardown.
#include "rma/rma_mover.h"

#include <cstdint>

#include "core/ucp_endpoint.h"
#include "core/ucs_status.h"
#include "ucx_handles.h"

namespace {

// One of the batch's flushes ended with `st`: the last one completes the
// batch, with the first error of any (a post error first of all).
void FlushEnded(adxl_plugin_batch *batch, ucs_status_t st) {
  if (st != UCS_OK) {
    int none = ADXL_PLUGIN_OK;
    batch->flush_error.compare_exchange_strong(none, FromUcs(st));
  }
  if (batch->flushes.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  const int rc = batch->post_error != ADXL_PLUGIN_OK ? batch->post_error : batch->flush_error.load();
  batch->status.store(rc, std::memory_order_release);
}

void FlushDone(void *request, ucs_status_t status, void *user_data) {
  auto *batch = static_cast<adxl_plugin_batch *>(user_data);
  FlushEnded(batch, status);
  batch->Unref();
  ucp_request_free(request);
}

}  // namespace

int RmaMover::Register(void *addr, size_t len, adxl_plugin_mem *mem) {
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  p.address = addr;
  p.length = len;
  if (mem->device) {
    // The type, not UCX's detection: memory UCX's allocation hooks did not
    // see would be taken for host memory.  That it is device memory is the
    // engine's check (cudaPointerGetAttributes in CUDA builds).
    p.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    p.memory_type = device_type_;
  }
  const ucs_status_t st = ucp_mem_map(core_.ucp, &p, &mem->memh);
  if (st != UCS_OK) {
    core_.log(ADXL_PLUGIN_LOG_ERROR, "ucp_mem_map(%p, %zu, %s memory): %s", addr, len, mem->device ? "device" : "host",
         ucs_status_string(st));
    return FromUcs(st);
  }
  return ADXL_PLUGIN_OK;
}

void RmaMover::Deregister(adxl_plugin_mem *mem) {
  ucp_mem_unmap(core_.ucp, mem->memh);
  mem->memh = nullptr;
}

// UCP RMA ignores the deadline: over RDMA devices a closed endpoint delivers
// nothing more (device memory over TCP is the case not covered).
void RmaMover::Post(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t,
                    adxl_plugin_batch *batch) {
  Issue(ep, put, iov, count, false, batch);
}

void RmaMover::PostDevice(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count,
                          adxl_plugin_batch *batch) {
  for (size_t i = 0; i < count; ++i) {
    if (ep->ep == nullptr || iov[i].remote == nullptr || iov[i].remote->rkey == nullptr) {
      core_.log(ADXL_PLUGIN_LOG_ERROR, "device memory cannot move over this endpoint: %s",
                !device_why_.empty() ? device_why_.c_str() : "no UCP endpoint or remote key for the region");
      batch->status.store(ADXL_PLUGIN_ERR_UNSUPPORTED, std::memory_order_release);
      return;
    }
  }
  Issue(ep, put, iov, count, true, batch);
}

void RmaMover::Issue(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, bool device,
                     adxl_plugin_batch *batch) {
  // Not on an endpoint mem_dereg closed under a peer's request (rma_mover.h);
  // held open until the flushes are posted.
  OwnedEndpoints::Use use(owned_, ep->ep, ep->id);
  if (!use.open()) {
    const int failed = ep->failed.load();
    batch->status.store(failed != ADXL_PLUGIN_OK ? failed : ADXL_PLUGIN_ERR_IO, std::memory_order_release);
    return;
  }
  ucp_request_param_t p{};
  for (size_t i = 0; i < count; ++i) {
    const adxl_plugin_iov_t &v = iov[i];
    p.op_attr_mask = 0;
    if (v.local != nullptr) {
      p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH;
      p.memh = v.local->memh;
      if (device) {  // the type, not UCX's detection (see Register)
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        p.memory_type = v.local->device ? device_type_ : UCS_MEMORY_TYPE_HOST;
      }
    }
    void *local = reinterpret_cast<void *>(static_cast<uintptr_t>(v.local_addr));
    ucs_status_ptr_t r = put ? ucp_put_nbx(ep->ep, local, v.length, v.remote_addr, v.remote->rkey, &p)
                             : ucp_get_nbx(ep->ep, local, v.length, v.remote_addr, v.remote->rkey, &p);
    if (UCS_PTR_IS_ERR(r)) {
      // What was queued still drains through the flush below; the batch
      // then completes with this error.
      batch->post_error = FromUcs(UCS_PTR_STATUS(r));
      core_.log(ADXL_PLUGIN_LOG_ERROR, "post of operation %zu failed: %s", i, ucs_status_string(UCS_PTR_STATUS(r)));
      break;
    }
    if (r != nullptr) ucp_request_free(r);  // completion is observed through the flush
  }
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = FlushDone;
  p.user_data = batch;
  // A batch of no operations is the wire-up flush: it covers every
  // connection of the endpoint (ADXL_UCX_RDMA_CONNECTIONS), so that no
  // connection is closed while the peer still owes it a wire-up reply.
  // The connections are read in place (no copy per post): they stay until
  // Cancel, which comes after the endpoint's last post.
  const size_t n_eps = count == 0 ? 1 + ep->more_eps.size() : 1;
  batch->flushes.store(static_cast<int>(n_eps), std::memory_order_relaxed);
  for (size_t i = 0; i < n_eps; ++i) {
    ucp_ep_h e = i == 0 ? ep->ep : ep->more_eps[i - 1];
    batch->refs.fetch_add(1, std::memory_order_relaxed);
    ucs_status_ptr_t r = ucp_ep_flush_nbx(e, &p);
    if (r == nullptr || UCS_PTR_IS_ERR(r)) {
      FlushEnded(batch, r == nullptr ? UCS_OK : UCS_PTR_STATUS(r));
      batch->Unref();
    } else {
      core_.Wake();  // the progress thread drives the flush when nobody polls
    }
  }
}

void RmaMover::Cancel(adxl_plugin_ep *ep, bool force) {
  // Each closed unless mem_dereg closed it under a peer's request (rma_mover.h).
  for (ucp_ep_h e : ep->more_eps) {
    if (owned_.Disown(e, ep->id)) CloseUcpEp(&core_, core_.worker, e, force);
  }
  ep->more_eps.clear();
  if (ep->ep != nullptr && owned_.Disown(ep->ep, ep->id)) CloseUcpEp(&core_, core_.worker, ep->ep, force);
  ep->ep = nullptr;
}

bool RmaMover::EndpointFailed(adxl_plugin_ep *ep, int why) {
  ep->failed.store(why);
  return true;
}

std::string RmaMover::DescribeEndpoint(const adxl_plugin_ep *ep) const {
  OwnedEndpoints::Use use(owned_, ep->ep, ep->id);
  if (!use.open()) return "rma:closed";  // by mem_dereg under a peer's request (rma_mover.h)
  return "rma:" + DescribeUcpEp(ep->ep);
}

std::string RmaMover::DescribeKey(const adxl_plugin_rkey *rkey) const {
  return rkey->rkey != nullptr ? "ucp" : "unreachable";
}
