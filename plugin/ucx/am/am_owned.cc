// AmTransport, owned endpoints: the UCP endpoints the plugin made itself
// (an adxl_plugin_ep's connections, whichever mover's, a network path's),
// which may be the reply endpoints of peers' requests, and how
// ReleaseTargetOps closes one without closing it behind its owner's back
// (am_transport.h, "Owned endpoints"; the contract in
// core/owned_endpoints.h).
#include <algorithm>
#include <new>

#include "adxl/plugin/adxl_plugin.h"
#include "am/am_protocol.h"
#include "am/am_transport.h"

using namespace am_protocol;

bool AmTransport::BeginCreate(bool wait) {
  adxl::MutexLock l(&mu_);
  if (!wait && closers_ != 0) return false;
  owned_changed_.Wait(&mu_, [&]() ADXL_REQUIRES(mu_) { return closers_ == 0; });
  ++creating_;
  return true;
}

void AmTransport::EndCreate() {
  adxl::MutexLock l(&mu_);
  if (--creating_ == 0) owned_changed_.NotifyAll();
}

void AmTransport::Own(ucp_ep_h ep, uint64_t ep_id, ClosedFn closed, void *owner) {
  // The test build's seam: the window between ucp_ep_create and the table.
  FaultDelay(faults_.own_delay_us);
  adxl::MutexLock l(&mu_);
  try {
    // A key still here is a closed endpoint its owner has not disowned yet,
    // whose address UCP gave the new one: impossible while owners disown
    // before they make the next endpoint under the same ep_id.
    if (!owned_.try_emplace(OwnedKey{ep, ep_id}, OwnedEp{closed, owner}).second) {
      log_(ADXL_PLUGIN_LOG_ERROR, "a UCP endpoint of link %llu registered twice",
           static_cast<unsigned long long>(ep_id));
    }
  } catch (...) {
    log_(ADXL_PLUGIN_LOG_WARN, "out of memory: a UCP endpoint of link %llu is not tracked as the plugin's",
         static_cast<unsigned long long>(ep_id));
  }
}

bool AmTransport::Disown(ucp_ep_h ep, uint64_t ep_id) {
  adxl::MutexLock l(&mu_);
  const OwnedKey key{ep, ep_id};
  // A close under way ends with the owner's ClosedFn: the owner stays until then.
  owned_changed_.Wait(&mu_, [&]() ADXL_REQUIRES(mu_) {
    auto it = owned_.find(key);
    return it == owned_.end() || it->second.state != OwnedEp::kClosing;
  });
  auto it = owned_.find(key);
  if (it == owned_.end()) return true;  // never owned (or not tracked): the owner's
  const bool open = it->second.state == OwnedEp::kOpen;
  owned_.erase(it);
  if (!open) {
    auto d = dead_ids_.find(ep_id);
    if (d != dead_ids_.end() && --d->second == 0) dead_ids_.erase(d);
  }
  return open;
}

bool AmTransport::BeginUse(ucp_ep_h ep, uint64_t ep_id) {
  adxl::MutexLock l(&mu_);
  auto it = owned_.find(OwnedKey{ep, ep_id});
  if (it == owned_.end()) return closing_.count(ep) == 0;  // not owned: open unless being closed
  if (it->second.state != OwnedEp::kOpen) return false;
  ++it->second.users;
  return true;
}

void AmTransport::EndUse(ucp_ep_h ep, uint64_t ep_id) {
  adxl::MutexLock l(&mu_);
  auto it = owned_.find(OwnedKey{ep, ep_id});
  if (it == owned_.end() || it->second.users == 0) return;
  if (--it->second.users == 0) owned_changed_.NotifyAll();
}

void AmTransport::CloseReplyEndpoints(const std::vector<ucp_ep_h> &eps) {
  struct Claimed {
    OwnedKey key;
    ClosedFn closed;
    void *owner;
  };
  std::vector<Claimed> claimed;
  {
    adxl::MutexLock l(&mu_);
    // An endpoint a creation under way got from ucp_ep_create may be one of
    // `eps`, not yet owned: wait for its Own, and let no creation start
    // until the endpoints are closed (UCP then hands none of them out).
    ++closers_;
    owned_changed_.Wait(&mu_, [&]() ADXL_REQUIRES(mu_) { return creating_ == 0; });
    for (ucp_ep_h ep : eps) {
      for (auto &kv : owned_) {
        if (kv.first.first != ep || kv.second.state != OwnedEp::kOpen) continue;
        // As the owner's forced teardown: nothing more of its ep_id is sent
        // (Fence), and no later Post of it starts (dead_ids_).
        kv.second.state = OwnedEp::kClosing;
        ++dead_ids_[kv.first.second];
        EndBatches(kv.first.second, ADXL_PLUGIN_ERR_IO);
        claimed.push_back({kv.first, kv.second.closed, kv.second.owner});
      }
    }
    // A message Pump already took is handed to UCP first, and the owner's
    // reads of the endpoint (BeginUse) end.
    owned_changed_.Wait(&mu_, [&]() ADXL_REQUIRES(mu_) {
      for (const Claimed &c : claimed) {
        auto it = owned_.find(c.key);
        if (it != owned_.end() && it->second.users > 0) return false;
      }
      return true;
    });
    handed_.Wait(&mu_, [&]() ADXL_REQUIRES(mu_) {
      for (const Claimed &c : claimed) {
        if (std::find(handing_.begin(), handing_.end(), c.key.second) != handing_.end()) return false;
      }
      return true;
    });
  }
  if (!claimed.empty()) {
    log_(ADXL_PLUGIN_LOG_WARN,
         "%zu of the plugin's own UCP endpoint(s) carried peer requests on memory going away: closed, and their "
         "links failed",
         claimed.size());
  }
  for (ucp_ep_h ep : eps) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    WaitAndFree(worker_, ucp_ep_close_nbx(ep, &p));
  }
  {
    // Closed: UCP hands none of them out again, but may give their memory
    // to the next endpoint made, which must not find itself "closing".
    adxl::MutexLock l(&mu_);
    for (ucp_ep_h ep : eps) closing_.erase(ep);
    if (--closers_ == 0) owned_changed_.NotifyAll();
  }
  // The owners' batches on them end now, and no late READ data of theirs
  // lands; then the owners learn their endpoint is gone.
  for (const Claimed &c : claimed) Abandon(c.key.second, ADXL_PLUGIN_ERR_IO);
  for (const Claimed &c : claimed) {
    if (c.closed != nullptr) c.closed(c.owner, c.key.first);
  }
  adxl::MutexLock l(&mu_);
  for (const Claimed &c : claimed) {
    auto it = owned_.find(c.key);
    if (it != owned_.end()) it->second.state = OwnedEp::kClosed;
  }
  owned_changed_.NotifyAll();
}
