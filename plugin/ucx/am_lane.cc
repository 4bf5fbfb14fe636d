#include "am_lane.h"

#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <set>

#include "adxl/plugin/adxl_plugin.h"

namespace {

enum AmId : unsigned { kWrite = 0x41, kAck = 0x42, kReadRequest = 0x43, kReadData = 0x44 };

struct WriteHeader {
  uint64_t token;
  uint64_t remote;
  uint64_t len;
};
struct AckHeader {
  uint64_t token;
  int64_t status;
};
struct ReadRequestHeader {
  uint64_t token;
  uint64_t remote;  // on the target
  uint64_t local;   // on the initiator, where the data goes
  uint64_t len;
};
struct ReadDataHeader {
  uint64_t token;
  uint64_t local;
  uint64_t len;
  int64_t status;
};
constexpr size_t kMaxHeader = sizeof(ReadRequestHeader);
static_assert(sizeof(WriteHeader) <= kMaxHeader && sizeof(AckHeader) <= kMaxHeader &&
                  sizeof(ReadDataHeader) <= kMaxHeader,
              "header slots");

// Bound on waiting for requests of a closed endpoint to end (Abandon,
// ReleaseTargetOps): UCP fails them when the endpoint is force-closed, so
// this is a safety net, not a protocol timeout.
constexpr auto kAbandonWait = std::chrono::seconds(1);

int FromUcs(ucs_status_t st) {
  if (st == UCS_OK) return ADXL_PLUGIN_OK;
  if (st == UCS_ERR_CANCELED) return ADXL_PLUGIN_ERR_CANCELED;
  return ADXL_PLUGIN_ERR_IO;
}

// Waits for a UCP request while progressing the worker (bounded).
void WaitAndFree(ucp_worker_h worker, ucs_status_ptr_t req) {
  if (req == nullptr || UCS_PTR_IS_ERR(req)) return;
  const auto until = std::chrono::steady_clock::now() + kAbandonWait;
  while (ucp_request_check_status(req) == UCS_INPROGRESS && std::chrono::steady_clock::now() < until) {
    ucp_worker_progress(worker);
  }
  ucp_request_free(req);
}

}  // namespace

void AmLane::Log(int level, const char *fmt, ...) {
  if (log_ == nullptr) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  log_(log_arg_, level, buf);
}

bool AmLane::Init(ucp_worker_h worker, LogFn log, void *log_arg, Faults faults, std::string *why) {
  worker_ = worker;
  log_ = log;
  log_arg_ = log_arg;
  faults_ = faults;
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

void AmLane::AddRegion(void *addr, size_t len, ucp_mem_h memh) {
  adxl::MutexLock l(&regions_mu_);
  regions_[reinterpret_cast<uintptr_t>(addr)] = Region{len, memh};
}

void AmLane::RemoveRegion(void *addr) {
  size_t len = 0;
  {
    adxl::MutexLock l(&regions_mu_);
    auto it = regions_.find(reinterpret_cast<uintptr_t>(addr));
    if (it == regions_.end()) return;
    len = it->second.len;
    regions_.erase(it);
  }
  // No new request reaches it now; end those that still use it.
  ReleaseTargetOps(reinterpret_cast<uintptr_t>(addr), len);
}

bool AmLane::Registered(uint64_t addr, size_t len, ucp_mem_h *memh) {
  if (len == 0 || addr + len < addr) return false;
  adxl::MutexLock l(&regions_mu_);
  auto it = regions_.upper_bound(static_cast<uintptr_t>(addr));
  if (it == regions_.begin()) return false;
  --it;
  if (addr < it->first || addr + len > it->first + it->second.len) return false;
  *memh = it->second.memh;
  return true;
}

// ---------------------------------------------------------- batch life cycle

bool AmLane::TakeIfFinished(std::unordered_map<uint64_t, Batch>::iterator it, DoneFn *done_fn, void **done_arg,
                            int *status) {
  const Batch &b = it->second;
  if (b.posting || b.receiving > 0) return false;
  if (!b.ended && b.remaining > 0) return false;
  *done_fn = b.done;
  *done_arg = b.arg;
  *status = b.status;
  batches_.erase(it);
  return true;
}

void AmLane::OpsDone(uint64_t token, size_t n, int status) {
  DoneFn done = nullptr;
  void *arg = nullptr;
  int final_status = ADXL_PLUGIN_OK;
  {
    adxl::MutexLock l(&mu_);
    auto it = batches_.find(token);
    if (it == batches_.end()) return;  // ended and gone already
    Batch &b = it->second;
    if (!b.ended) {
      if (status != ADXL_PLUGIN_OK && b.status == ADXL_PLUGIN_OK) b.status = status;
      b.remaining -= std::min(n, b.remaining);
    }
    if (!TakeIfFinished(it, &done, &arg, &final_status)) return;
  }
  done(arg, final_status);
}

void AmLane::ReceiveDone(uint64_t token, int status) {
  DoneFn done = nullptr;
  void *arg = nullptr;
  int final_status = ADXL_PLUGIN_OK;
  {
    adxl::MutexLock l(&mu_);
    auto it = batches_.find(token);
    if (it == batches_.end()) return;
    Batch &b = it->second;
    if (b.receiving > 0) --b.receiving;
    if (!b.ended) {
      if (status != ADXL_PLUGIN_OK && b.status == ADXL_PLUGIN_OK) b.status = status;
      if (b.remaining > 0) --b.remaining;
    }
    if (!TakeIfFinished(it, &done, &arg, &final_status)) return;
  }
  done(arg, final_status);
}

void AmLane::PostDone(uint64_t token) {
  DoneFn done = nullptr;
  void *arg = nullptr;
  int final_status = ADXL_PLUGIN_OK;
  {
    adxl::MutexLock l(&mu_);
    auto it = batches_.find(token);
    if (it == batches_.end()) return;  // cannot happen: a posting batch stays
    it->second.posting = false;
    if (!TakeIfFinished(it, &done, &arg, &final_status)) return;
  }
  done(arg, final_status);
}

bool AmLane::Post(uint64_t ep_id, ucp_ep_h ep, bool write, const Op *ops, size_t count, DoneFn done, void *arg) {
  // Header words for every send, owned by the batch (see Batch::headers).
  constexpr size_t kWords = kMaxHeader / sizeof(uint64_t);
  std::vector<uint64_t> words;
  try {
    words.resize(count * kWords);
  } catch (...) {
    return false;
  }
  uint64_t token;
  uint64_t *slots = nullptr;
  {
    adxl::MutexLock l(&mu_);
    token = next_token_++;
    Batch b{};
    b.ep_id = ep_id;
    b.remaining = count;
    b.status = ADXL_PLUGIN_OK;
    b.done = done;
    b.arg = arg;
    b.headers.swap(words);
    try {
      auto it = batches_.emplace(token, std::move(b)).first;
      slots = it->second.headers.data();  // stable: never resized, and the batch stays while posting
    } catch (...) {
      return false;
    }
  }
  // No lock is held while sending: UCP may run callbacks inside these calls.
  for (size_t i = 0; i < count; ++i) {
    const Op &op = ops[i];
    void *slot = slots + i * kWords;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    ucs_status_ptr_t r;
    if (write) {
      // Always rendezvous: data then moves only while this request lives.
      p.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_RNDV;
      if (op.local_memh != nullptr) {
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        p.memh = op.local_memh;
      }
      auto *h = new (slot) WriteHeader{token, op.remote, op.len};
      r = ucp_am_send_nbx(ep, kWrite, h, sizeof(*h), op.local, op.len, &p);
    } else {
      p.flags = UCP_AM_SEND_FLAG_REPLY;
      auto *h = new (slot) ReadRequestHeader{token, op.remote, reinterpret_cast<uintptr_t>(op.local), op.len};
      r = ucp_am_send_nbx(ep, kReadRequest, h, sizeof(*h), nullptr, 0, &p);
    }
    if (UCS_PTR_IS_ERR(r)) {
      Log(ADXL_PLUGIN_LOG_ERROR, "AM %s of %zu bytes: %s; %zu operations of the batch not sent",
          write ? "write" : "read request", op.len, ucs_status_string(UCS_PTR_STATUS(r)), count - i);
      OpsDone(token, count - i, ADXL_PLUGIN_ERR_IO);  // none of the rest will be answered
      break;
    }
    if (r != nullptr) ucp_request_free(r);  // completion is the target's answer
  }
  PostDone(token);
  return true;
}

std::vector<uint64_t> AmLane::EndBatches(uint64_t ep_id, int why) {
  std::vector<uint64_t> tokens;
  for (auto &kv : batches_) {
    Batch &b = kv.second;
    if (b.ep_id != ep_id || b.ended) continue;
    b.ended = true;  // handlers now drop anything for it
    if (b.status == ADXL_PLUGIN_OK) b.status = why;
    tokens.push_back(kv.first);
  }
  return tokens;
}

void AmLane::Abandon(uint64_t ep_id, int why) {
  std::vector<uint64_t> tokens;
  {
    adxl::MutexLock l(&mu_);
    tokens = EndBatches(ep_id, why);
  }
  // The endpoint is force-closed: UCP fails its receives, and Post() on
  // another thread fails its remaining sends.  Wait for both.
  const auto until = std::chrono::steady_clock::now() + kAbandonWait;
  while (true) {
    bool busy = false;
    {
      adxl::MutexLock l(&mu_);
      for (uint64_t t : tokens) {
        auto it = batches_.find(t);
        busy = busy || (it != batches_.end() && (it->second.receiving > 0 || it->second.posting));
      }
    }
    if (!busy) break;
    if (std::chrono::steady_clock::now() > until) {
      Log(ADXL_PLUGIN_LOG_WARN, "requests of a cancelled endpoint did not finish in time");
      break;
    }
    ucp_worker_progress(worker_);
  }
  for (uint64_t t : tokens) {
    DoneFn done = nullptr;
    void *arg = nullptr;
    int status = why;
    {
      adxl::MutexLock l(&mu_);
      auto it = batches_.find(t);
      if (it == batches_.end()) continue;   // ended meanwhile (done ran)
      if (it->second.posting) continue;     // Post() ends it when it returns
      done = it->second.done;
      arg = it->second.arg;
      status = it->second.status;
      batches_.erase(it);  // a receive that ends later finds no batch: nothing is written for it
    }
    done(arg, status);
  }
}

void AmLane::EndpointFailed(uint64_t ep_id, int why) {
  {
    adxl::MutexLock l(&mu_);
    try {
      failed_eps_.emplace_back(ep_id, why);
    } catch (...) {
      return;  // the engine's heartbeat still fails the link
    }
  }
  deferred_pending_.store(true, std::memory_order_release);
}

void AmLane::RunDeferred() {
  std::vector<std::pair<DoneFn, std::pair<void *, int>>> to_call;
  {
    adxl::MutexLock l(&mu_);
    deferred_pending_.store(false, std::memory_order_relaxed);
    std::vector<std::pair<uint64_t, int>> failed;
    failed.swap(failed_eps_);
    for (const auto &f : failed) {
      for (uint64_t t : EndBatches(f.first, f.second)) {
        DoneFn done = nullptr;
        void *arg = nullptr;
        int status = ADXL_PLUGIN_OK;
        // Batches still posting or receiving end when that finishes.
        if (TakeIfFinished(batches_.find(t), &done, &arg, &status)) to_call.push_back({done, {arg, status}});
      }
    }
  }
  for (auto &c : to_call) c.first(c.second.first, c.second.second);
}

// ------------------------------------------------------------- target side

uint64_t AmLane::TargetOpStart(ucp_ep_h reply_ep, uintptr_t addr, size_t len) {
  adxl::MutexLock l(&mu_);
  const uint64_t id = next_target_op_++;
  try {
    target_ops_.emplace(id, TargetOp{reply_ep, addr, len});
  } catch (...) {
    return 0;
  }
  return id;
}

bool AmLane::TargetOpDone(uint64_t id) {
  adxl::MutexLock l(&mu_);
  auto it = target_ops_.find(id);
  if (it == target_ops_.end()) return id != 0;
  const bool answer = !it->second.released;
  target_ops_.erase(it);
  return answer;
}

bool AmLane::TargetSend(ucp_ep_h reply_ep, unsigned id, const void *header, size_t header_len, void *data,
                        size_t len, ucp_mem_h memh) {
  struct Pending {
    AmLane *self;
    uint64_t op;
    uint64_t header[kMaxHeader / sizeof(uint64_t)];
  };
  auto pending = std::unique_ptr<Pending>(new (std::nothrow) Pending{this, 0, {}});
  if (pending == nullptr || header_len > sizeof(pending->header)) return false;
  memcpy(pending->header, header, header_len);
  pending->op = TargetOpStart(reply_ep, reinterpret_cast<uintptr_t>(data), len);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = 0;
  p.cb.send = [](void *req, ucs_status_t, void *user) {
    std::unique_ptr<Pending> pd(static_cast<Pending *>(user));
    pd->self->TargetOpDone(pd->op);
    ucp_request_free(req);
  };
  p.user_data = pending.get();
  if (memh != nullptr) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    p.memh = memh;
  }
  ucs_status_ptr_t r = ucp_am_send_nbx(reply_ep, id, pending->header, header_len, data, len, &p);
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) {
    pending.release();  // the callback owns it
    return true;
  }
  TargetOpDone(pending->op);
  return r == nullptr;
}

void AmLane::SendAck(ucp_ep_h reply_ep, uint64_t token, int status) {
  const AckHeader h{token, status};
  TargetSend(reply_ep, kAck, &h, sizeof(h), nullptr, 0, nullptr);
}

void AmLane::ReleaseTargetOps(uintptr_t addr, size_t len) {
  std::set<ucp_ep_h> eps;
  std::vector<uint64_t> ids;
  {
    adxl::MutexLock l(&mu_);
    for (const auto &kv : target_ops_) {
      const TargetOp &op = kv.second;
      const bool touches = len == 0 || (op.len > 0 && op.addr < addr + len && addr < op.addr + op.len);
      if (touches && !op.released) eps.insert(op.reply_ep);
    }
    // Every request on a closed endpoint ends with it: none is answered.
    for (auto &kv : target_ops_) {
      if (eps.count(kv.second.reply_ep) == 0) continue;
      kv.second.released = true;
      ids.push_back(kv.first);
    }
  }
  if (eps.empty()) return;
  Log(ADXL_PLUGIN_LOG_INFO, "closing %zu peer endpoint(s) with %zu request(s) pending on memory going away",
      eps.size(), ids.size());
  for (ucp_ep_h ep : eps) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    WaitAndFree(worker_, ucp_ep_close_nbx(ep, &p));
  }
  const auto until = std::chrono::steady_clock::now() + kAbandonWait;
  while (true) {
    bool busy = false;
    {
      adxl::MutexLock l(&mu_);
      for (uint64_t id : ids) busy = busy || target_ops_.count(id) != 0;
    }
    if (!busy) break;
    if (std::chrono::steady_clock::now() > until) {
      Log(ADXL_PLUGIN_LOG_WARN, "requests of closed peer endpoints did not finish in time");
      break;
    }
    ucp_worker_progress(worker_);
  }
}

ucs_status_t AmLane::OnWrite(void *arg, const void *header, size_t header_len, void *data, size_t len,
                             const ucp_am_recv_param_t *param) {
  auto *self = static_cast<AmLane *>(arg);
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (header_len != sizeof(WriteHeader) || !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
    self->Log(ADXL_PLUGIN_LOG_ERROR, "malformed AM write dropped");
    if (rndv) ucp_am_data_release(self->worker_, data);
    return UCS_OK;
  }
  WriteHeader h;
  memcpy(&h, header, sizeof(h));
  ucp_mem_h memh = nullptr;
  if (h.len != len || !self->Registered(h.remote, len, &memh)) {
    self->Log(ADXL_PLUGIN_LOG_ERROR, "AM write of %zu bytes to 0x%llx refused: not inside registered memory", len,
              static_cast<unsigned long long>(h.remote));
    if (rndv) ucp_am_data_release(self->worker_, data);
    self->SendAck(param->reply_ep, h.token, ADXL_PLUGIN_ERR_INVALID);
    return UCS_OK;
  }
  void *dst = reinterpret_cast<void *>(static_cast<uintptr_t>(h.remote));
  if (!rndv) {
    memcpy(dst, data, len);
    self->SendAck(param->reply_ep, h.token, ADXL_PLUGIN_OK);
    return UCS_OK;
  }
  // Rendezvous: pull the data into place, acknowledge when it is there.
  struct Pending {
    AmLane *self;
    ucp_ep_h reply_ep;
    uint64_t token;
    uint64_t op;
  };
  auto pending = std::unique_ptr<Pending>(new (std::nothrow) Pending{self, param->reply_ep, h.token, 0});
  if (pending == nullptr) {
    ucp_am_data_release(self->worker_, data);
    self->SendAck(param->reply_ep, h.token, ADXL_PLUGIN_ERR_NO_RESOURCE);
    return UCS_OK;
  }
  pending->op = self->TargetOpStart(param->reply_ep, h.remote, len);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  p.memh = memh;
  p.user_data = pending.get();
  p.cb.recv_am = [](void *req, ucs_status_t st, size_t, void *user) {
    std::unique_ptr<Pending> pd(static_cast<Pending *>(user));
    if (pd->self->TargetOpDone(pd->op)) pd->self->SendAck(pd->reply_ep, pd->token, FromUcs(st));
    ucp_request_free(req);
  };
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(self->worker_, data, dst, len, &p);
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) {
    pending.release();  // the callback owns it
    return UCS_OK;
  }
  if (self->TargetOpDone(pending->op)) {
    self->SendAck(param->reply_ep, h.token, r == nullptr ? ADXL_PLUGIN_OK : FromUcs(UCS_PTR_STATUS(r)));
  }
  return UCS_OK;
}

ucs_status_t AmLane::OnReadRequest(void *arg, const void *header, size_t header_len, void *, size_t,
                                   const ucp_am_recv_param_t *param) {
  auto *self = static_cast<AmLane *>(arg);
  if (header_len != sizeof(ReadRequestHeader) || !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
    self->Log(ADXL_PLUGIN_LOG_ERROR, "malformed AM read request dropped");
    return UCS_OK;
  }
  ReadRequestHeader h;
  memcpy(&h, header, sizeof(h));
  ucp_mem_h memh = nullptr;
  if (!self->Registered(h.remote, h.len, &memh)) {
    self->Log(ADXL_PLUGIN_LOG_ERROR, "AM read of %llu bytes at 0x%llx refused: not inside registered memory",
              static_cast<unsigned long long>(h.len), static_cast<unsigned long long>(h.remote));
    const ReadDataHeader answer{h.token, h.local, 0, ADXL_PLUGIN_ERR_INVALID};
    self->TargetSend(param->reply_ep, kReadData, &answer, sizeof(answer), nullptr, 0, nullptr);
    return UCS_OK;
  }
  const ReadDataHeader answer{h.token, h.local, h.len, ADXL_PLUGIN_OK};
  self->TargetSend(param->reply_ep, kReadData, &answer, sizeof(answer),
                   reinterpret_cast<void *>(static_cast<uintptr_t>(h.remote)), h.len, memh);
  return UCS_OK;
}

// ---------------------------------------------------------- initiator side

ucs_status_t AmLane::OnAck(void *arg, const void *header, size_t header_len, void *, size_t,
                           const ucp_am_recv_param_t *) {
  auto *self = static_cast<AmLane *>(arg);
  if (header_len != sizeof(AckHeader)) return UCS_OK;
  AckHeader h;
  memcpy(&h, header, sizeof(h));
  self->OpsDone(h.token, 1, static_cast<int>(h.status));
  return UCS_OK;
}

ucs_status_t AmLane::OnReadData(void *arg, const void *header, size_t header_len, void *data, size_t len,
                                const ucp_am_recv_param_t *param) {
  auto *self = static_cast<AmLane *>(arg);
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (header_len != sizeof(ReadDataHeader)) {
    if (rndv) ucp_am_data_release(self->worker_, data);
    return UCS_OK;
  }
  ReadDataHeader h;
  memcpy(&h, header, sizeof(h));
  if (h.status != ADXL_PLUGIN_OK) {
    if (rndv) ucp_am_data_release(self->worker_, data);
    self->OpsDone(h.token, 1, static_cast<int>(h.status));
    return UCS_OK;
  }
  ucp_mem_h memh = nullptr;
  if (h.len != len || !self->Registered(h.local, len, &memh)) {
    self->Log(ADXL_PLUGIN_LOG_ERROR, "AM read data for 0x%llx dropped: not inside registered memory",
              static_cast<unsigned long long>(h.local));
    if (rndv) ucp_am_data_release(self->worker_, data);
    self->OpsDone(h.token, 1, ADXL_PLUGIN_ERR_INVALID);
    return UCS_OK;
  }
  void *dst = reinterpret_cast<void *>(static_cast<uintptr_t>(h.local));
  {
    // Under the batch lock: once a batch has ended, nothing of it is
    // written here any more.  An eager copy is done right here (memcpy, no
    // UCP call); a rendezvous receive is counted before it is posted, so
    // that the batch cannot end while it may still write.
    adxl::MutexLock l(&self->mu_);
    auto it = self->batches_.find(h.token);
    const bool live = it != self->batches_.end() && !it->second.ended;
    if (live && !rndv) memcpy(dst, data, len);
    if (live && rndv) ++it->second.receiving;
    if (!live) dst = nullptr;
  }
  if (dst == nullptr) {  // late: dropped
    if (rndv) ucp_am_data_release(self->worker_, data);
    return UCS_OK;
  }
  if (!rndv) {
    self->OpsDone(h.token, 1, ADXL_PLUGIN_OK);
    return UCS_OK;
  }
  if (self->faults_.read_data_delay_us > 0) usleep(self->faults_.read_data_delay_us);
  struct Pending {
    AmLane *self;
    uint64_t token;
  };
  auto pending = std::unique_ptr<Pending>(new (std::nothrow) Pending{self, h.token});
  if (pending == nullptr) {
    ucp_am_data_release(self->worker_, data);
    self->ReceiveDone(h.token, ADXL_PLUGIN_ERR_NO_RESOURCE);
    return UCS_OK;
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  p.memh = memh;
  p.user_data = pending.get();
  p.cb.recv_am = [](void *req, ucs_status_t st, size_t, void *user) {
    std::unique_ptr<Pending> pd(static_cast<Pending *>(user));
    pd->self->ReceiveDone(pd->token, FromUcs(st));
    ucp_request_free(req);
  };
  // No lock held: UCP may fail this receive synchronously (an endpoint
  // already purged) and run the callback inside the call.
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(self->worker_, data, dst, len, &p);
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) {
    pending.release();  // the callback owns it
    return UCS_OK;
  }
  self->ReceiveDone(h.token, r == nullptr ? ADXL_PLUGIN_OK : FromUcs(UCS_PTR_STATUS(r)));
  return UCS_OK;
}
