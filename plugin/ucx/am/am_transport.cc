// AmTransport set-up and the registration table both sides check addresses
// against.  The initiator side is am_initiator.cc, the target side
// am_target.cc, the wire format am_protocol.h.
#include "am/am_transport.h"

#include <algorithm>
#include <new>

#include "am/am_protocol.h"

using namespace am_protocol;

AmTransport::Staging AmTransport::NewStaging(size_t n) {
  Staging s;
  if (n <= StagingPool::kBufferBytes) s.pooled = staging_pool_.Get();
  // Uninitialized: it is overwritten whole.
  if (s.pooled.data() == nullptr) s.heap.reset(new (std::nothrow) char[n]);
  return s;
}

bool AmTransport::Init(ucp_worker_h worker, PluginLog log, FaultInjection faults, std::string *why) {
  worker_ = worker;
  log_ = log;
  faults_ = faults;
  if (!placement_type_.Create(why)) return false;
  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
  if (ucp_worker_query(worker_, &attr) == UCS_OK) {
    const size_t words = attr.max_am_header / sizeof(uint64_t);
    max_message_ops_ = std::max<size_t>(1, std::min(kMaxMessageOps, words > kRequestFixedWords
                                                                         ? (words - kRequestFixedWords) / 2
                                                                         : 1));
  } else {
    max_message_ops_ = 1;
  }
  const struct {
    unsigned id;
    ucp_am_recv_callback_t cb;
  } handlers[] = {{kWrite, OnWrite}, {kAck, OnAck}, {kReadRequest, OnReadRequest}, {kReadData, OnReadData}};
  for (const auto &h : handlers) {
    ucp_am_handler_param_t p{};
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG |
                   UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    p.id = h.id;
    p.cb = h.cb;
    p.arg = this;
    p.flags = UCP_AM_FLAG_WHOLE_MSG;
    ucs_status_t st = ucp_worker_set_am_recv_handler(worker_, &p);
    if (st != UCS_OK) {
      *why = std::string("ucp_worker_set_am_recv_handler: ") + ucs_status_string(st);
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------- regions

void AmTransport::AddRegion(void *addr, size_t len, ucp_mem_h memh) {
  adxl::MutexLock l(&regions_mu_);
  regions_[reinterpret_cast<uintptr_t>(addr)] = Region{len, memh};
}

void AmTransport::RemoveRegion(void *addr) {
  size_t len = 0;
  {
    adxl::MutexLock l(&regions_mu_);
    auto it = regions_.find(reinterpret_cast<uintptr_t>(addr));
    if (it == regions_.end()) return;
    len = it->second.len;
    regions_.erase(it);
  }
  // No new request reaches it now.  One a handler has already found in it
  // is written (eager) or tracked (TargetOpStart) before that handler
  // returns, and handlers run inside ucp_worker_progress under the worker's
  // lock: a pass of our own, which takes that lock, waits for them.  Then
  // end those tracked requests that still use it.
  ucp_worker_progress(worker_);
  ReleaseTargetOps(reinterpret_cast<uintptr_t>(addr), len);
}

bool AmTransport::ResolveTargetOps(const uint64_t *pairs, size_t n, std::vector<ucp_dt_iov_t> *iov, ucp_mem_h *memh,
                              size_t *total) {
  iov->clear();
  *total = 0;
  try {
    iov->reserve(n);
  } catch (...) {
    return false;
  }
  adxl::MutexLock l(&regions_mu_);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t addr = pairs[2 * i], len = pairs[2 * i + 1];
    if (len == 0 || addr + len < addr || *total + len < *total) return false;
    auto it = regions_.upper_bound(static_cast<uintptr_t>(addr));
    if (it == regions_.begin()) return false;
    --it;
    if (addr < it->first || addr + len > it->first + it->second.len) return false;
    if (n == 1) *memh = it->second.memh;
    iov->push_back({reinterpret_cast<void *>(static_cast<uintptr_t>(addr)), static_cast<size_t>(len)});
    *total += len;
  }
  return n > 0;
}
