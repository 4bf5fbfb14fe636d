#include "am_lane.h"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

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

// Bound on waiting for cancelled receives in Abandon().
constexpr auto kAbandonWait = std::chrono::seconds(1);

int FromUcs(ucs_status_t st) {
  if (st == UCS_OK) return ADXL_PLUGIN_OK;
  if (st == UCS_ERR_CANCELED) return ADXL_PLUGIN_ERR_CANCELED;
  return ADXL_PLUGIN_ERR_IO;
}

// A heap copy of a header that must live until its send completes.
template <typename H>
void SendOwned(ucp_ep_h ep, unsigned id, const H &h, void *data, size_t len, ucp_mem_h memh) {
  auto *copy = new (std::nothrow) H(h);
  if (copy == nullptr) return;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = 0;
  p.cb.send = [](void *req, ucs_status_t, void *user) {
    delete static_cast<H *>(user);
    ucp_request_free(req);
  };
  p.user_data = copy;
  if (memh != nullptr) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    p.memh = memh;
  }
  ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, copy, sizeof(H), data, len, &p);
  if (r == nullptr || UCS_PTR_IS_ERR(r)) delete copy;
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

bool AmLane::Init(ucp_worker_h worker, LogFn log, void *log_arg, std::string *why) {
  worker_ = worker;
  log_ = log;
  log_arg_ = log_arg;
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

void AmLane::AddRegion(void *addr, size_t len, ucp_mem_h memh) {
  std::lock_guard<std::mutex> l(regions_mu_);
  regions_[reinterpret_cast<uintptr_t>(addr)] = Region{len, memh};
}

void AmLane::RemoveRegion(void *addr) {
  std::lock_guard<std::mutex> l(regions_mu_);
  regions_.erase(reinterpret_cast<uintptr_t>(addr));
}

bool AmLane::Registered(uint64_t addr, size_t len, ucp_mem_h *memh) {
  if (len == 0 || addr + len < addr) return false;
  std::lock_guard<std::mutex> l(regions_mu_);
  auto it = regions_.upper_bound(static_cast<uintptr_t>(addr));
  if (it == regions_.begin()) return false;
  --it;
  if (addr < it->first || addr + len > it->first + it->second.len) return false;
  *memh = it->second.memh;
  return true;
}

bool AmLane::Post(ucp_ep_h ep, bool write, const Op *ops, size_t count, DoneFn done, void *arg) {
  // Header words for every send, owned by the batch (see Batch::headers).
  constexpr size_t kWords = sizeof(ReadRequestHeader) / sizeof(uint64_t);
  static_assert(sizeof(WriteHeader) <= sizeof(ReadRequestHeader), "header slots");
  std::vector<uint64_t> words;
  try {
    words.resize(count * kWords);
  } catch (...) {
    return false;
  }
  uint64_t token;
  uint64_t *slots = nullptr;
  {
    std::lock_guard<std::mutex> l(batches_mu_);
    token = next_token_++;
    auto it = batches_.emplace(token, Batch{ep, count == 0 ? 1 : count, ADXL_PLUGIN_OK, done, arg, {}, {}}).first;
    it->second.headers.swap(words);
    slots = it->second.headers.data();  // stable: the vector is never resized
  }
  if (count == 0) {
    OpDone(token, ADXL_PLUGIN_OK);  // nothing to move
    return true;
  }
  // No lock is held while sending: handlers on other threads need it.
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
      Log(ADXL_PLUGIN_LOG_ERROR, "AM %s of %zu bytes: %s", write ? "write" : "read request", op.len,
          ucs_status_string(UCS_PTR_STATUS(r)));
      OpDone(token, ADXL_PLUGIN_ERR_IO);
    } else if (r != nullptr) {
      ucp_request_free(r);  // completion is the target's answer
    }
  }
  return true;
}

void AmLane::OpDone(uint64_t token, int status, void *finished_receive) {
  DoneFn done = nullptr;
  void *arg = nullptr;
  int final_status = ADXL_PLUGIN_OK;
  {
    std::lock_guard<std::mutex> l(batches_mu_);
    auto it = batches_.find(token);
    if (it == batches_.end()) return;  // abandoned and finished already
    Batch &b = it->second;
    if (finished_receive != nullptr) {
      for (auto &r : b.receives) {
        if (r == finished_receive) {
          r = b.receives.back();
          b.receives.pop_back();
          break;
        }
      }
    }
    if (b.ep == nullptr) return;  // abandoned: Abandon() completes it
    if (status != ADXL_PLUGIN_OK && b.status == ADXL_PLUGIN_OK) b.status = status;
    if (--b.remaining > 0) return;
    done = b.done;
    arg = b.arg;
    final_status = b.status;
    batches_.erase(it);
  }
  done(arg, final_status);
}

void AmLane::Abandon(ucp_ep_h ep, int why) {
  std::vector<uint64_t> tokens;
  {
    std::lock_guard<std::mutex> l(batches_mu_);
    for (auto &kv : batches_) {
      if (kv.second.ep != ep) continue;
      kv.second.ep = nullptr;  // handlers now drop anything for it
      // No ucp_request_cancel of the receives here: it takes the worker's
      // lock, and the AM handlers take batches_mu_ under that lock (a lock
      // order inversion).  It would not help either: UCP cancels only tag
      // receives; the force-closed endpoint is what fails these.
      tokens.push_back(kv.first);
    }
  }
  const auto until = std::chrono::steady_clock::now() + kAbandonWait;
  while (true) {
    bool busy = false;
    {
      std::lock_guard<std::mutex> l(batches_mu_);
      for (uint64_t t : tokens) {
        auto it = batches_.find(t);
        busy = busy || (it != batches_.end() && !it->second.receives.empty());
      }
    }
    if (!busy) break;
    if (std::chrono::steady_clock::now() > until) {
      Log(ADXL_PLUGIN_LOG_WARN, "receives of a cancelled endpoint did not finish in time");
      break;
    }
    ucp_worker_progress(worker_);
  }
  for (uint64_t t : tokens) {
    DoneFn done = nullptr;
    void *arg = nullptr;
    {
      std::lock_guard<std::mutex> l(batches_mu_);
      auto it = batches_.find(t);
      if (it == batches_.end()) continue;
      done = it->second.done;
      arg = it->second.arg;
      batches_.erase(it);
    }
    done(arg, why);
  }
}

void AmLane::SendAck(ucp_ep_h reply_ep, uint64_t token, int status) {
  SendOwned(reply_ep, kAck, AckHeader{token, status}, nullptr, 0, nullptr);
}

// ---- target side

ucs_status_t AmLane::OnWrite(void *arg, const void *header, size_t header_len, void *data, size_t len,
                             const ucp_am_recv_param_t *param) {
  auto *self = static_cast<AmLane *>(arg);
  if (header_len != sizeof(WriteHeader) || !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
    self->Log(ADXL_PLUGIN_LOG_ERROR, "malformed AM write dropped");
    return UCS_OK;
  }
  WriteHeader h;
  memcpy(&h, header, sizeof(h));
  ucp_mem_h memh = nullptr;
  if (h.len != len || !self->Registered(h.remote, len, &memh)) {
    self->Log(ADXL_PLUGIN_LOG_ERROR, "AM write of %zu bytes to 0x%llx refused: not inside registered memory", len,
              static_cast<unsigned long long>(h.remote));
    self->SendAck(param->reply_ep, h.token, ADXL_PLUGIN_ERR_INVALID);
    return UCS_OK;  // drops the data
  }
  void *dst = reinterpret_cast<void *>(static_cast<uintptr_t>(h.remote));
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
    memcpy(dst, data, len);
    self->SendAck(param->reply_ep, h.token, ADXL_PLUGIN_OK);
    return UCS_OK;
  }
  // Rendezvous: pull the data into place, acknowledge when it is there.
  struct Pending {
    AmLane *self;
    ucp_ep_h reply_ep;
    uint64_t token;
  };
  auto *pending = new (std::nothrow) Pending{self, param->reply_ep, h.token};
  if (pending == nullptr) return UCS_OK;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  p.memh = memh;
  p.user_data = pending;
  p.cb.recv_am = [](void *req, ucs_status_t st, size_t, void *user) {
    auto *pd = static_cast<Pending *>(user);
    pd->self->SendAck(pd->reply_ep, pd->token, FromUcs(st));
    delete pd;
    ucp_request_free(req);
  };
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(self->worker_, data, dst, len, &p);
  if (r == nullptr || UCS_PTR_IS_ERR(r)) {
    self->SendAck(param->reply_ep, h.token, r == nullptr ? ADXL_PLUGIN_OK : FromUcs(UCS_PTR_STATUS(r)));
    delete pending;
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
    SendOwned(param->reply_ep, kReadData, ReadDataHeader{h.token, h.local, 0, ADXL_PLUGIN_ERR_INVALID}, nullptr, 0,
              nullptr);
    return UCS_OK;
  }
  SendOwned(param->reply_ep, kReadData, ReadDataHeader{h.token, h.local, h.len, ADXL_PLUGIN_OK},
            reinterpret_cast<void *>(static_cast<uintptr_t>(h.remote)), h.len, memh);
  return UCS_OK;
}

// ---- initiator side

ucs_status_t AmLane::OnAck(void *arg, const void *header, size_t header_len, void *, size_t,
                           const ucp_am_recv_param_t *) {
  auto *self = static_cast<AmLane *>(arg);
  if (header_len != sizeof(AckHeader)) return UCS_OK;
  AckHeader h;
  memcpy(&h, header, sizeof(h));
  self->OpDone(h.token, static_cast<int>(h.status));
  return UCS_OK;
}

ucs_status_t AmLane::OnReadData(void *arg, const void *header, size_t header_len, void *data, size_t len,
                                const ucp_am_recv_param_t *param) {
  auto *self = static_cast<AmLane *>(arg);
  if (header_len != sizeof(ReadDataHeader)) return UCS_OK;
  ReadDataHeader h;
  memcpy(&h, header, sizeof(h));
  if (h.status != ADXL_PLUGIN_OK) {
    self->OpDone(h.token, static_cast<int>(h.status));
    return UCS_OK;
  }
  ucp_mem_h memh = nullptr;
  if (h.len != len || !self->Registered(h.local, len, &memh)) {
    self->Log(ADXL_PLUGIN_LOG_ERROR, "AM read data for 0x%llx dropped: not inside registered memory",
              static_cast<unsigned long long>(h.local));
    self->OpDone(h.token, ADXL_PLUGIN_ERR_INVALID);
    return UCS_OK;
  }
  void *dst = reinterpret_cast<void *>(static_cast<uintptr_t>(h.local));
  // Under the batch lock: once Abandon() has marked the batch, nothing of it
  // is written here any more.
  std::unique_lock<std::mutex> l(self->batches_mu_);
  auto it = self->batches_.find(h.token);
  if (it == self->batches_.end() || it->second.ep == nullptr) return UCS_OK;  // late: dropped
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
    memcpy(dst, data, len);
    l.unlock();
    self->OpDone(h.token, ADXL_PLUGIN_OK);
    return UCS_OK;
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  p.memh = memh;
  struct Pending {
    AmLane *self;
    uint64_t token;
  };
  auto *pending = new (std::nothrow) Pending{self, h.token};
  if (pending == nullptr) {
    l.unlock();
    self->OpDone(h.token, ADXL_PLUGIN_ERR_NO_RESOURCE);
    return UCS_OK;
  }
  p.user_data = pending;
  p.cb.recv_am = [](void *req, ucs_status_t st, size_t, void *user) {
    auto *pd = static_cast<Pending *>(user);
    pd->self->OpDone(pd->token, FromUcs(st), req);
    delete pd;
    ucp_request_free(req);
  };
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(self->worker_, data, dst, len, &p);
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) {
    it->second.receives.push_back(r);
    return UCS_OK;
  }
  delete pending;
  l.unlock();
  self->OpDone(h.token, r == nullptr ? ADXL_PLUGIN_OK : FromUcs(UCS_PTR_STATUS(r)));
  return UCS_OK;
}
