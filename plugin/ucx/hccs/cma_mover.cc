// CmaMover (cma_mover.h): registration, binding, batches and teardown of
// the HCCS lane over cross-memory attach.
#include "hccs/cma_mover.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/ucp_endpoint.h"
#include "hccs/cma_transport.h"
#include "hccs/shared_mapping.h"
#include "ucx_handles.h"

int CmaMover::Register(void *addr, size_t len, adxl_plugin_mem *mem) {
  if (mem->device) return ADXL_PLUGIN_OK;
  std::string why;
  try {
    mem->cma_ok = cma_.Register(addr, len, &mem->cma_memh, &mem->cma_key, &why);
    if (!mem->cma_ok) core_.log(ADXL_PLUGIN_LOG_WARN, "%s: the HCCS lane cannot reach this region", why.c_str());
  } catch (...) {
    mem->cma_ok = false;  // registered for the other movers: keep it
  }
  return ADXL_PLUGIN_OK;
}

void CmaMover::Deregister(adxl_plugin_mem *mem) {
  if (mem->cma_ok) cma_.Deregister(mem->cma_memh);
  mem->cma_ok = false;
}

bool CmaMover::Connect(adxl_plugin_ep *ep, const std::string &address) {
  ep->cma_ep = cma_.Connect(address);
  return ep->cma_ep != nullptr;
}

bool CmaMover::UnpackKey(const ucx_blob::Key &k, adxl_plugin_rkey *rkey, std::string *why) {
  return k.cma_usable() && cma_.Unpack(k.cma_key, &rkey->cma, why);
}

void CmaMover::ReleaseKey(adxl_plugin_rkey *rkey) { cma_.Release(&rkey->cma); }

void CmaMover::Post(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
                    adxl_plugin_batch *batch) {
  CmaTransport::Op small[kStackOps];
  std::vector<CmaTransport::Op> large;
  if (count > kStackOps) large.resize(count);
  CmaTransport::Op *ops = count > kStackOps ? large.data() : small;
  for (size_t i = 0; i < count; ++i) {
    const adxl_plugin_iov_t &v = iov[i];
    ops[i] = {reinterpret_cast<void *>(static_cast<uintptr_t>(v.local_addr)),
              v.local != nullptr ? v.local->cma_memh : UCT_MEM_HANDLE_NULL, v.length, v.remote_addr,
              v.remote->cma.rkey};
  }
  int err_no = 0;
  const CopyStop stop{&ep->cancelled, deadline_ns, piece_delay_us_};
  const ucs_status_t st = count == 0 ? UCS_OK : cma_.Copy(put, ep->cma_ep, ops, count, stop, &err_no);
  if (st == UCS_ERR_CANCELED) {
    // ep_cancel: the endpoint is going; the engine knows why.
    core_.log(ADXL_PLUGIN_LOG_DEBUG, "cma %s batch of %zu operations stopped: the endpoint was cancelled",
              put ? "put" : "get", count);
    batch->status.store(ADXL_PLUGIN_ERR_CANCELED);
    return;
  }
  if (st == UCS_ERR_TIMED_OUT) {
    // post_by: the rest would land after the deadline.  The endpoint goes
    // on (the engine fails the link when its call times out).
    core_.log(ADXL_PLUGIN_LOG_INFO, "cma %s batch of %zu operations: the deadline passed, the rest dropped",
              put ? "put" : "get", count);
    batch->status.store(ADXL_PLUGIN_ERR_IO);
    return;
  }
  if (st != UCS_OK) {
    core_.log(ADXL_PLUGIN_LOG_ERROR, "cma %s batch of %zu operations failed: %s (%s)", put ? "put" : "get", count,
              ucs_status_string(st), err_no == ESRCH ? "the peer process is gone" : strerror(err_no));
    ep->failed.store(ADXL_PLUGIN_ERR_IO);
    batch->status.store(ADXL_PLUGIN_ERR_IO);
    return;
  }
  batch->status.store(ADXL_PLUGIN_OK, std::memory_order_release);
}

void CmaMover::Cancel(adxl_plugin_ep *ep, bool force) {
  cma_.Disconnect(ep->cma_ep);  // nothing in flight: cma is synchronous
  ep->cma_ep = nullptr;
  // The UCP endpoint for device memory (rma_mover.h), if any, unless
  // mem_dereg closed it under a peer's request (am_transport.h).
  if (ep->ep != nullptr && owned_.Disown(ep->ep, ep->id)) CloseUcpEp(&core_, core_.worker, ep->ep, force);
  ep->ep = nullptr;
}

std::string CmaMover::DescribeEndpoint(const adxl_plugin_ep *ep) const {
  // cma for private memory; "mapped/<kind>" for each kind of peer region
  // mapped directly (mapped_mover.h).
  std::string s = "cma/memory";
  for (size_t i = 0; i < 4; ++i) {
    if (ep->mapped_kinds[i].load() > 0) s += std::string(",mapped/") + SharedMapping::kKinds[i];
  }
  return s;
}

bool CmaMover::EndpointFailed(adxl_plugin_ep *ep, int why) {
  ep->failed.store(why);
  return true;
}
