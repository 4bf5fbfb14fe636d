// AmMover (am_mover.h).
#include "am/am_mover.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "am/am_transport.h"
#include "core/ucp_endpoint.h"
#include "core/ucx_params.h"
#include "ucx_handles.h"

int AmMover::Register(void *addr, size_t len, adxl_plugin_mem *mem) {
  if (!mem->device) am_.AddRegion(addr, len, mem->memh);  // throws only std::bad_alloc, having added nothing
  return ADXL_PLUGIN_OK;
}

void AmMover::Deregister(adxl_plugin_mem *mem) {
  if (!mem->device) am_.RemoveRegion(mem->addr);
}

void AmMover::Post(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
                   adxl_plugin_batch *batch) {
  std::vector<AmTransport::Op> ops;
  ops.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const adxl_plugin_iov_t &v = iov[i];
    ops.push_back({reinterpret_cast<void *>(static_cast<uintptr_t>(v.local_addr)),
                   v.local != nullptr ? v.local->memh : nullptr, v.remote_addr, static_cast<size_t>(v.length)});
  }
  // The endpoint's connections, on this thread's stack: no allocation per
  // post, nothing shared between posting threads.  ep_create made at most
  // rdma_connections of them (UcxParams), and none changes until Cancel,
  // which comes after the endpoint's last post.
  std::array<ucp_ep_h, UcxParams::kMaxRdmaConnections> eps;
  eps[0] = ep->ep;
  const size_t n_eps = 1 + std::min(ep->more_eps.size(), eps.size() - 1);
  std::copy_n(ep->more_eps.begin(), n_eps - 1, eps.begin() + 1);
  batch->refs.fetch_add(1);  // held by the AM transport until done
  auto done = [](void *arg, int status) {
    auto *b = static_cast<adxl_plugin_batch *>(arg);
    b->status.store(status, std::memory_order_release);
    b->Unref();
  };
  if (!am_.Post(ep->id, eps.data(), n_eps, put, ops.data(), ops.size(), deadline_ns, done, batch)) {
    batch->refs.fetch_sub(1);
    batch->status.store(ADXL_PLUGIN_ERR_NO_RESOURCE);
  }
  core_.Wake();
}

void AmMover::Cancel(adxl_plugin_ep *ep, bool force) {
  if (ep->ep == nullptr) return;
  // Nothing more is sent on it from a callback while it closes.
  am_.Fence(ep->id, ADXL_PLUGIN_ERR_CANCELED);
  // Each closed once: not those the AM transport closed already (a peer's
  // requests on them used memory being deregistered, am_transport.h).
  for (ucp_ep_h e : ep->more_eps) {
    if (am_.Disown(e, ep->id)) CloseUcpEp(&core_, core_.worker, e, force);
  }
  ep->more_eps.clear();
  if (am_.Disown(ep->ep, ep->id)) CloseUcpEp(&core_, core_.worker, ep->ep, force);
  ep->ep = nullptr;
  // Batches still waiting for answers over this endpoint end now, and no
  // late READ data of theirs is written.
  am_.Abandon(ep->id, ADXL_PLUGIN_ERR_CANCELED);
}

bool AmMover::EndpointFailed(adxl_plugin_ep *ep, int why) {
  ep->failed.store(why);
  EndBatches(ep, why);
  return true;
}

void AmMover::EndBatches(adxl_plugin_ep *ep, int why) {
  am_.EndpointFailed(ep->id, why);
  core_.Wake();
}

std::string AmMover::DescribeEndpoint(const adxl_plugin_ep *ep) const {
  // What moves its bytes and, past one, its connections ("am*3"), then
  // UCP's transports, so that a test can tell which mover a link runs on.
  std::string s = "am";
  if (!ep->more_eps.empty()) s += "*" + std::to_string(1 + ep->more_eps.size());
  OwnedEndpoints::Use use(am_, ep->ep, ep->id);
  if (!use.open()) return s + ":closed";  // by the AM transport (am_transport.h)
  return s + ":" + DescribeUcpEp(ep->ep);
}

std::string AmMover::DescribeKey(const adxl_plugin_rkey *rkey) const {
  return rkey->rkey != nullptr ? "ucp" : "unreachable";
}
