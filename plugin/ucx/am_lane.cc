#include "am_lane.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <set>

#include "adxl/plugin/adxl_plugin.h"

// Wire format of the lane's active messages: arrays of little-endian u64
// words (both ends run this code on the same architecture; UCP's worker
// address already ties them to it).
//
//   kWrite        [token][msg | nops << 32][remote, len] x nops   data: the bytes, in order
//   kReadRequest  [token][msg | nops << 32][remote, len] x nops   no data
//   kAck          [token][msg | status << 32]                      no data
//   kReadData     [token][msg | status << 32][total]               data: the bytes, in order
//
// `token` names the initiator's batch, `msg` the message within it.
namespace {

enum AmId : unsigned { kWrite = 0x41, kAck = 0x42, kReadRequest = 0x43, kReadData = 0x44 };

constexpr size_t kRequestFixedWords = 2;
constexpr size_t kAckWords = 2;
constexpr size_t kReadDataWords = 3;

// Bound on waiting for requests of a closed endpoint to end (Abandon,
// ReleaseTargetOps): UCP fails them when the endpoint is force-closed, so
// this is a safety net, not a protocol timeout.
constexpr auto kAbandonWait = std::chrono::seconds(1);

int FromUcs(ucs_status_t st) {
  if (st == UCS_OK) return ADXL_PLUGIN_OK;
  if (st == UCS_ERR_CANCELED) return ADXL_PLUGIN_ERR_CANCELED;
  return ADXL_PLUGIN_ERR_IO;
}

uint64_t Pack32(uint32_t lo, int32_t hi) {
  return static_cast<uint64_t>(lo) | (static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32);
}

// Points a request's buffer at an iov list: contiguous for one entry (so
// that its memh applies), UCP's iov datatype for several, nothing for none.
void SetBuffer(const std::vector<ucp_dt_iov_t> &iov, ucp_mem_h memh, ucp_request_param_t *p, void **buffer,
               size_t *count) {
  if (iov.size() == 1) {
    *buffer = iov[0].buffer;
    *count = iov[0].length;
    if (memh != nullptr) {
      p->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
      p->memh = memh;
    }
  } else if (iov.empty()) {
    *buffer = nullptr;
    *count = 0;
  } else {
    p->op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p->datatype = ucp_dt_make_iov();
    *buffer = const_cast<ucp_dt_iov_t *>(iov.data());
    *count = iov.size();
  }
}

// Copies an iov list into one contiguous buffer.
void Gather(const std::vector<ucp_dt_iov_t> &iov, char *out) {
  for (const ucp_dt_iov_t &v : iov) {
    memcpy(out, v.buffer, v.length);
    out += v.length;
  }
}

// Copies `len` contiguous bytes over an iov list.
void Scatter(const void *data, size_t len, const std::vector<ucp_dt_iov_t> &iov) {
  const char *p = static_cast<const char *>(data);
  for (const ucp_dt_iov_t &v : iov) {
    const size_t n = std::min(len, v.length);
    memcpy(v.buffer, p, n);
    p += n;
    len -= n;
  }
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

AmLane::Staging AmLane::NewStaging(size_t n) {
  Staging s;
  if (n <= StagingPool::kBufferBytes) s.pooled = staging_pool_.Get();
  // Uninitialized: it is overwritten whole.
  if (s.pooled.data() == nullptr) s.heap.reset(new (std::nothrow) char[n]);
  return s;
}

bool AmLane::Init(ucp_worker_h worker, PluginLog log, Faults faults, std::string *why) {
  worker_ = worker;
  log_ = log;
  faults_ = faults;
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

bool AmLane::ResolveTargetOps(const uint64_t *pairs, size_t n, std::vector<ucp_dt_iov_t> *iov, ucp_mem_h *memh,
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

// ---------------------------------------------------------- batch life cycle

bool AmLane::TakeIfFinished(BatchIt it, DoneFn *done_fn, void **done_arg, int *status) {
  Batch &b = it->second;
  if (b.posting || b.sending > 0 || b.receiving > 0) return false;
  if (!b.ended && b.remaining > 0) return false;
  *done_fn = b.done_called ? nullptr : b.done;  // Abandon() reported it already
  *done_arg = b.arg;
  *status = b.status;
  batches_.erase(it);  // a stale entry in unsent_ is skipped by Pump
  return true;
}

// The body of the bookkeeping calls below: runs `body` on batch `token`
// under mu_, ends the batch if it may end, then sends what the window allows
// (Pump), both after releasing mu_.
#define ADXL_AM_LANE_UPDATE(body)                                  \
  DoneFn done = nullptr;                                           \
  void *arg = nullptr;                                             \
  int final_status = ADXL_PLUGIN_OK;                               \
  {                                                                \
    adxl::MutexLock l(&mu_);                                       \
    auto it = batches_.find(token);                                \
    if (it == batches_.end()) return;                              \
    Batch &b = it->second;                                         \
    body;                                                          \
    if (!TakeIfFinished(it, &done, &arg, &final_status)) {         \
      done = nullptr;                                              \
    }                                                              \
  }                                                                \
  if (done != nullptr) done(arg, final_status);                    \
  Pump()

// Message `m` of batch `b` was answered (or failed): it leaves the window,
// and its staging buffer goes back once UCP no longer holds its send.
void AmLane::Answered(Batch &b, Message &m, int status) {
  if (m.answered) return;
  m.answered = true;
  if (m.send_done) m.staging = Staging();
  if (b.in_window > 0) {
    --b.in_window;
    if (in_flight_ > 0) --in_flight_;
  }
  if (b.ended) return;
  if (status != ADXL_PLUGIN_OK && b.status == ADXL_PLUGIN_OK) b.status = status;
  if (b.remaining > 0) --b.remaining;
}

void AmLane::MessageDone(uint64_t token, uint32_t msg, int status) {
  ADXL_AM_LANE_UPDATE({
    if (msg < b.messages.size()) {
      Answered(b, b.messages[msg], status);
    } else if (!b.ended && b.status == ADXL_PLUGIN_OK) {
      b.status = ADXL_PLUGIN_ERR_INVALID;  // an answer naming no message of ours
    }
  });
}

void AmLane::ReceiveDone(Message *m, int status) {
  uint64_t token = m->token;
  ADXL_AM_LANE_UPDATE({
    if (b.receiving > 0) --b.receiving;
    // Received into staging: placed now, unless the batch ended (then
    // nothing of it is written here any more).
    if (!b.ended && status == ADXL_PLUGIN_OK && m->staging.data() != nullptr) {
      Scatter(m->staging.data(), m->bytes, m->local);
    }
    Answered(b, *m, status);
  });
}

void AmLane::SendDone(Message *m) {
  uint64_t token = m->token;
  ADXL_AM_LANE_UPDATE({
    if (b.sending > 0) --b.sending;
    m->send_done = true;
    if (m->answered) m->staging = Staging();
  });
}

void AmLane::SendFailed(Message *m, int status) {
  uint64_t token = m->token;
  ADXL_AM_LANE_UPDATE({
    if (b.sending > 0) --b.sending;
    m->send_done = true;
    Answered(b, *m, status);
    // The rest will not go either: none of it is sent, none answered.
    const size_t unsent = b.messages.size() - b.next_send;
    b.next_send = b.messages.size();
    if (!b.ended) b.remaining -= std::min(unsent, b.remaining);
  });
}

void AmLane::PostDone(uint64_t token) {
  ADXL_AM_LANE_UPDATE({ b.posting = false; });
}

#undef ADXL_AM_LANE_UPDATE

void AmLane::Pump() {
  while (true) {
    Message *m = nullptr;
    ucp_ep_h ep = nullptr;
    bool write = false;
    {
      adxl::MutexLock l(&mu_);
      while (m == nullptr && !unsent_.empty() && in_flight_ < kWindowMessages) {
        auto it = batches_.find(unsent_.front());
        if (it == batches_.end() || it->second.ended || it->second.next_send >= it->second.messages.size()) {
          unsent_.pop_front();  // gone, stopped, or all sent
          continue;
        }
        Batch &b = it->second;
        m = &b.messages[b.next_send++];
        if (b.next_send == b.messages.size()) unsent_.pop_front();
        ++b.in_window;
        ++in_flight_;
        ++b.sending;  // the batch, and so *m, stays until the send is over
        ep = b.ep;
        write = b.write;
      }
      if (m == nullptr) return;
    }
    // Only this thread touches *m until it is sent.
    if (m->local.size() > 1) {
      m->staging = NewStaging(m->bytes);
      if (m->staging.data() == nullptr) {
        log_(ADXL_PLUGIN_LOG_ERROR, "no memory for a %zu-byte staging buffer", m->bytes);
        SendFailed(m, ADXL_PLUGIN_ERR_NO_RESOURCE);
        return;
      }
      if (write) Gather(m->local, m->staging.data());
    }
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.user_data = m;
    p.cb.send = [](void *req, ucs_status_t, void *user) {
      auto *msg = static_cast<Message *>(user);
      msg->lane->SendDone(msg);  // may free msg
      ucp_request_free(req);
    };
    ucs_status_ptr_t r;
    if (write) {
      // Always rendezvous: data then moves only while this request lives.
      p.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_RNDV;
      void *buffer = m->staging.data();
      size_t n = m->bytes;
      if (buffer == nullptr) {
        SetBuffer(m->local, m->memh, &p, &buffer, &n);
      } else if (m->staging.memh() != nullptr) {
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        p.memh = m->staging.memh();
      }
      r = ucp_am_send_nbx(ep, kWrite, m->header.data(), m->header.size() * sizeof(uint64_t), buffer, n, &p);
    } else {
      p.flags = UCP_AM_SEND_FLAG_REPLY;
      r = ucp_am_send_nbx(ep, kReadRequest, m->header.data(), m->header.size() * sizeof(uint64_t), nullptr, 0, &p);
    }
    if (UCS_PTR_IS_ERR(r)) {
      log_(ADXL_PLUGIN_LOG_ERROR, "AM %s: %s; the rest of the batch is not sent", write ? "write" : "read request",
          ucs_status_string(UCS_PTR_STATUS(r)));
      SendFailed(m, ADXL_PLUGIN_ERR_IO);
      return;
    }
    if (r == nullptr) SendDone(m);  // completed in place: no callback
  }
}

bool AmLane::Post(uint64_t ep_id, ucp_ep_h ep, bool write, const Op *ops, size_t count, DoneFn done, void *arg) {
  // Cut the batch into messages (outside the lock: only this thread sees them).
  std::vector<Message> messages;
  try {
    // An operation larger than a message is cut into message-sized pieces
    // (each moves zero-copy on its own); smaller ones share messages.
    for (size_t i = 0; i < count; ++i) {
      const Op &op = ops[i];
      for (size_t off = 0; off < op.len;) {
        if (messages.empty() || messages.back().local.size() >= max_message_ops_ ||
            messages.back().bytes + std::min(op.len - off, kMaxMessageBytes) > kMaxMessageBytes) {
          messages.emplace_back();
          Message &m = messages.back();
          m.lane = this;
          m.header.assign(kRequestFixedWords, 0);
        }
        Message &m = messages.back();
        const size_t piece = std::min(op.len - off, kMaxMessageBytes - m.bytes);
        m.header.push_back(op.remote + off);
        m.header.push_back(piece);
        m.local.push_back({static_cast<char *>(op.local) + off, piece});
        m.bytes += piece;
        m.memh = m.local.size() == 1 ? op.local_memh : nullptr;
        off += piece;
      }
    }
  } catch (...) {
    return false;
  }
  uint64_t token;
  {
    adxl::MutexLock l(&mu_);
    token = next_token_++;
    for (size_t i = 0; i < messages.size(); ++i) {
      Message &m = messages[i];
      m.token = token;
      m.header[0] = token;
      m.header[1] = static_cast<uint64_t>(i) | (static_cast<uint64_t>(m.local.size()) << 32);
    }
    Batch b;
    b.ep_id = ep_id;
    b.ep = ep;
    b.write = write;
    b.remaining = messages.size();
    b.status = ADXL_PLUGIN_OK;
    b.done = done;
    b.arg = arg;
    b.messages.swap(messages);
    try {
      auto it = batches_.emplace(token, std::move(b)).first;
      try {
        unsent_.push_back(token);
      } catch (...) {
        batches_.erase(it);
        return false;
      }
    } catch (...) {
      return false;
    }
  }
  // What the window allows now; answers send the rest (Pump, from the
  // callbacks).  No lock is held while sending: UCP may run callbacks inside
  // these calls.
  Pump();
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
    // Its unanswered messages no longer hold the window: other batches go on.
    in_flight_ -= std::min(in_flight_, b.in_window);
    b.in_window = 0;
    tokens.push_back(kv.first);
  }
  return tokens;
}

void AmLane::Fence(uint64_t ep_id, int why) {
  adxl::MutexLock l(&mu_);
  EndBatches(ep_id, why);
}

void AmLane::Abandon(uint64_t ep_id, int why) {
  std::vector<uint64_t> tokens;
  {
    adxl::MutexLock l(&mu_);
    EndBatches(ep_id, why);  // those Fence() did not stop already
    for (const auto &kv : batches_) {
      if (kv.second.ep_id == ep_id) tokens.push_back(kv.first);
    }
  }
  // The endpoint is force-closed: UCP fails its sends and receives, and
  // Post() on another thread fails its remaining sends.  Wait for all.
  const auto until = std::chrono::steady_clock::now() + kAbandonWait;
  while (true) {
    bool busy = false;
    {
      adxl::MutexLock l(&mu_);
      for (uint64_t t : tokens) {
        auto it = batches_.find(t);
        busy = busy || (it != batches_.end() &&
                        (it->second.receiving > 0 || it->second.sending > 0 || it->second.posting));
      }
    }
    if (!busy) break;
    if (std::chrono::steady_clock::now() > until) {
      log_(ADXL_PLUGIN_LOG_WARN, "requests of a cancelled endpoint did not finish in time");
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
      if (it == batches_.end()) continue;  // ended meanwhile (done ran)
      if (TakeIfFinished(it, &done, &arg, &status)) {
        // idle: taken out of the table
      } else if (!it->second.posting && !it->second.done_called) {
        // UCP still holds a request of it (bounded wait over): report it now,
        // free it when that request ends.
        it->second.done_called = true;
        done = it->second.done;
        arg = it->second.arg;
        status = it->second.status;
      }  // posting: Post() ends it when it returns
    }
    if (done != nullptr) done(arg, status);
  }
  Pump();  // ended batches left room in the window
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
        // Batches still posting, sending or receiving end when that finishes
        // (UCP fails the requests of a failed endpoint).
        if (TakeIfFinished(batches_.find(t), &done, &arg, &status) && done != nullptr) {
          to_call.push_back({done, {arg, status}});
        }
      }
    }
  }
  for (auto &c : to_call) c.first(c.second.first, c.second.second);
  Pump();  // ended batches left room in the window
}

// ------------------------------------------------------------- target side

uint64_t AmLane::TargetOpStart(ucp_ep_h reply_ep, const std::vector<ucp_dt_iov_t> &iov) {
  uintptr_t lo = 0, hi = 0;
  for (const ucp_dt_iov_t &v : iov) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(v.buffer);
    lo = lo == hi ? a : std::min(lo, a);
    hi = std::max(hi, a + v.length);
  }
  adxl::MutexLock l(&mu_);
  const uint64_t id = next_target_op_++;
  try {
    target_ops_.emplace(id, TargetOp{reply_ep, lo, hi});
  } catch (...) {
    return 0;
  }
  return id;
}

bool AmLane::TargetOpLive(uint64_t id) {
  adxl::MutexLock l(&mu_);
  auto it = target_ops_.find(id);
  return it != target_ops_.end() && !it->second.released;
}

bool AmLane::TargetOpDone(uint64_t id) {
  adxl::MutexLock l(&mu_);
  auto it = target_ops_.find(id);
  if (it == target_ops_.end()) return id != 0;
  const bool answer = !it->second.released;
  target_ops_.erase(it);
  return answer;
}

bool AmLane::TargetSend(ucp_ep_h reply_ep, unsigned id, const void *header, size_t header_len,
                        std::vector<ucp_dt_iov_t> iov, ucp_mem_h memh) {
  struct Pending {
    AmLane *self;
    uint64_t op;
    uint64_t header[kReadDataWords];
    std::vector<ucp_dt_iov_t> iov;
    Staging staging;
  };
  std::unique_ptr<Pending> pending(new (std::nothrow) Pending{this, 0, {}, {}, {}});
  if (pending == nullptr || header_len > sizeof(pending->header)) return false;
  memcpy(pending->header, header, header_len);
  pending->iov.swap(iov);
  pending->op = TargetOpStart(reply_ep, pending->iov);
  if (pending->iov.size() > 1) {
    // Gathered now: the sources are registered memory, and the request is
    // tracked (ReleaseTargetOps waits for it) before they are read.
    size_t total = 0;
    for (const ucp_dt_iov_t &v : pending->iov) total += v.length;
    pending->staging = NewStaging(total);
    if (pending->staging.data() == nullptr) {
      TargetOpDone(pending->op);
      return false;
    }
    Gather(pending->iov, pending->staging.data());
    pending->iov.assign(1, ucp_dt_iov_t{pending->staging.data(), total});
    memh = pending->staging.memh();
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = 0;
  p.cb.send = [](void *req, ucs_status_t, void *user) {
    std::unique_ptr<Pending> pd(static_cast<Pending *>(user));
    pd->self->TargetOpDone(pd->op);
    ucp_request_free(req);
  };
  p.user_data = pending.get();
  void *buffer = nullptr;
  size_t count = 0;
  SetBuffer(pending->iov, memh, &p, &buffer, &count);
  ucs_status_ptr_t r = ucp_am_send_nbx(reply_ep, id, pending->header, header_len, buffer, count, &p);
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) {
    pending.release();  // the callback owns it
    return true;
  }
  TargetOpDone(pending->op);
  return r == nullptr;
}

void AmLane::SendAck(ucp_ep_h reply_ep, uint64_t token, uint32_t msg, int status) {
  const uint64_t h[kAckWords] = {token, Pack32(msg, status)};
  TargetSend(reply_ep, kAck, h, sizeof(h), {}, nullptr);
}

void AmLane::ReleaseTargetOps(uintptr_t addr, size_t len) {
  std::set<ucp_ep_h> eps;
  std::vector<uint64_t> ids;
  {
    adxl::MutexLock l(&mu_);
    for (const auto &kv : target_ops_) {
      const TargetOp &op = kv.second;
      const bool touches = len == 0 || (op.lo < op.hi && op.lo < addr + len && addr < op.hi);
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
  log_(ADXL_PLUGIN_LOG_INFO, "closing %zu peer endpoint(s) with %zu request(s) pending on memory going away",
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
      log_(ADXL_PLUGIN_LOG_WARN, "requests of closed peer endpoints did not finish in time");
      break;
    }
    ucp_worker_progress(worker_);
  }
}

// Parses a WRITE / READ request header: token, message index, and the
// (address, length) pairs that follow (copied: UCP does not promise the
// header any alignment).
static bool ParseRequest(const void *header, size_t header_len, uint64_t words[2], std::vector<uint64_t> *pairs) {
  if (header_len < kRequestFixedWords * sizeof(uint64_t) || header_len % sizeof(uint64_t) != 0) return false;
  memcpy(words, header, kRequestFixedWords * sizeof(uint64_t));
  const size_t n = static_cast<size_t>(words[1] >> 32);
  if (n == 0 || n > AmLane::kMaxMessageOps || header_len != (kRequestFixedWords + 2 * n) * sizeof(uint64_t)) {
    return false;
  }
  pairs->resize(2 * n);
  memcpy(pairs->data(), static_cast<const char *>(header) + kRequestFixedWords * sizeof(uint64_t),
         2 * n * sizeof(uint64_t));
  return true;
}

bool AmLane::ReadTargetRequest(const void *header, size_t header_len, const ucp_am_recv_param_t *param,
                               const char *what, TargetRequest *req) {
  uint64_t words[2];
  std::vector<uint64_t> pairs;
  bool parsed = false;
  try {
    parsed = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) && ParseRequest(header, header_len, words, &pairs);
    if (parsed) {
      req->token = words[0];
      req->msg = static_cast<uint32_t>(words[1]);
      req->ops = pairs.size() / 2;
      req->valid = ResolveTargetOps(pairs.data(), req->ops, &req->iov, &req->memh, &req->total);
    }
  } catch (...) {
    req->valid = false;  // out of memory: refused like an invalid request
  }
  if (!parsed) log_(ADXL_PLUGIN_LOG_ERROR, "malformed AM %s (%zu header bytes) dropped", what, header_len);
  return parsed;
}

ucs_status_t AmLane::OnWrite(void *arg, const void *header, size_t header_len, void *data, size_t len,
                             const ucp_am_recv_param_t *param) {
  auto *self = static_cast<AmLane *>(arg);
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  TargetRequest req;
  // A malformed request is dropped: a rendezvous descriptor not received is
  // dropped by UCP.
  if (!self->ReadTargetRequest(header, header_len, param, "write", &req)) return UCS_OK;
  const uint64_t token = req.token;
  const uint32_t msg = req.msg;
  std::vector<ucp_dt_iov_t> iov = std::move(req.iov);
  const ucp_mem_h memh = req.memh;
  if (!req.valid || req.total != len) {
    self->log_(ADXL_PLUGIN_LOG_ERROR,
              "AM write of %zu bytes in %zu operations refused: not all inside registered memory", len, req.ops);
    self->SendAck(param->reply_ep, token, msg, ADXL_PLUGIN_ERR_INVALID);
    return UCS_OK;
  }
  if (!rndv) {
    Scatter(data, len, iov);
    self->SendAck(param->reply_ep, token, msg, ADXL_PLUGIN_OK);
    return UCS_OK;
  }
  // Rendezvous: pull the data into place, acknowledge when it is there.
  struct Pending {
    AmLane *self;
    ucp_ep_h reply_ep;
    uint64_t token;
    uint32_t msg;
    uint64_t op;
    std::vector<ucp_dt_iov_t> iov;
    Staging staging;  // several operations: received here, then scattered
    size_t len;
    // Places staged data (unless the request was released: its memory may be
    // going away), ends the request, and acknowledges it.
    void Finish(ucs_status_t st) {
      if (staging.data() != nullptr && st == UCS_OK && self->TargetOpLive(op)) Scatter(staging.data(), len, iov);
      if (self->TargetOpDone(op)) self->SendAck(reply_ep, token, msg, FromUcs(st));
    }
  };
  std::unique_ptr<Pending> pending(new (std::nothrow) Pending{self, param->reply_ep, token, msg, 0, {}, {}, len});
  if (pending == nullptr) {
    self->SendAck(param->reply_ep, token, msg, ADXL_PLUGIN_ERR_NO_RESOURCE);
    return UCS_OK;
  }
  pending->iov.swap(iov);
  if (pending->iov.size() > 1) {
    pending->staging = self->NewStaging(len);
    if (pending->staging.data() == nullptr) {
      self->SendAck(param->reply_ep, token, msg, ADXL_PLUGIN_ERR_NO_RESOURCE);
      return UCS_OK;
    }
  }
  pending->op = self->TargetOpStart(param->reply_ep, pending->iov);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.user_data = pending.get();
  p.cb.recv_am = [](void *req, ucs_status_t st, size_t, void *user) {
    std::unique_ptr<Pending> pd(static_cast<Pending *>(user));
    pd->Finish(st);
    ucp_request_free(req);
  };
  void *buffer = pending->staging.data();
  size_t count = len;
  if (buffer == nullptr) {
    SetBuffer(pending->iov, memh, &p, &buffer, &count);
  } else if (pending->staging.memh() != nullptr) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    p.memh = pending->staging.memh();
  }
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(self->worker_, data, buffer, count, &p);
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) {
    pending.release();  // the callback owns it
    return UCS_OK;
  }
  pending->Finish(r == nullptr ? UCS_OK : UCS_PTR_STATUS(r));
  return UCS_OK;
}

ucs_status_t AmLane::OnReadRequest(void *arg, const void *header, size_t header_len, void *, size_t,
                                   const ucp_am_recv_param_t *param) {
  auto *self = static_cast<AmLane *>(arg);
  TargetRequest req;
  if (!self->ReadTargetRequest(header, header_len, param, "read request", &req)) return UCS_OK;
  const uint64_t token = req.token;
  const uint32_t msg = req.msg;
  const size_t total = req.total;
  if (!req.valid) {
    self->log_(ADXL_PLUGIN_LOG_ERROR, "AM read of %zu operations refused: not all inside registered memory", req.ops);
    const uint64_t answer[kReadDataWords] = {token, Pack32(msg, ADXL_PLUGIN_ERR_INVALID), 0};
    self->TargetSend(param->reply_ep, kReadData, answer, sizeof(answer), {}, nullptr);
    return UCS_OK;
  }
  const uint64_t answer[kReadDataWords] = {token, Pack32(msg, ADXL_PLUGIN_OK), total};
  if (!self->TargetSend(param->reply_ep, kReadData, answer, sizeof(answer), std::move(req.iov), req.memh)) {
    self->log_(ADXL_PLUGIN_LOG_WARN, "AM read answer of %zu bytes could not be sent", total);
  }
  return UCS_OK;
}

// ---------------------------------------------------------- initiator side

ucs_status_t AmLane::OnAck(void *arg, const void *header, size_t header_len, void *, size_t,
                           const ucp_am_recv_param_t *) {
  auto *self = static_cast<AmLane *>(arg);
  if (header_len != kAckWords * sizeof(uint64_t)) return UCS_OK;
  uint64_t h[kAckWords];
  memcpy(h, header, sizeof(h));
  self->MessageDone(h[0], static_cast<uint32_t>(h[1]), static_cast<int32_t>(h[1] >> 32));
  return UCS_OK;
}

ucs_status_t AmLane::OnReadData(void *arg, const void *header, size_t header_len, void *data, size_t len,
                                const ucp_am_recv_param_t *param) {
  auto *self = static_cast<AmLane *>(arg);
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (header_len != kReadDataWords * sizeof(uint64_t)) return UCS_OK;
  uint64_t h[kReadDataWords];
  memcpy(h, header, sizeof(h));
  const uint64_t token = h[0];
  const uint32_t msg = static_cast<uint32_t>(h[1]);
  const int status = static_cast<int32_t>(h[1] >> 32);
  if (status != ADXL_PLUGIN_OK) {
    self->MessageDone(token, msg, status);
    return UCS_OK;
  }
  // Under the batch lock: once a batch has ended, nothing of it is written
  // here any more.  Eager data is copied right here (memcpy, no UCP call); a
  // rendezvous receive is counted before it is posted, so that the batch
  // cannot end while it may still write.  Its local buffers are the ones the
  // batch recorded for the message: the answer chooses no address.
  Message *m = nullptr;
  bool malformed = false;
  {
    adxl::MutexLock l(&self->mu_);
    auto it = self->batches_.find(token);
    if (it != self->batches_.end() && !it->second.ended) {
      Batch &b = it->second;
      if (msg >= b.messages.size() || b.messages[msg].bytes != h[2] || h[2] != len) {
        malformed = true;
      } else {
        m = &b.messages[msg];
        if (rndv) {
          ++b.receiving;
        } else {
          Scatter(data, len, m->local);
        }
      }
    }
  }
  if (malformed) {
    self->log_(ADXL_PLUGIN_LOG_ERROR, "AM read data of %zu bytes does not match the request; dropped", len);
    self->MessageDone(token, msg, ADXL_PLUGIN_ERR_INVALID);
    return UCS_OK;
  }
  if (m == nullptr) return UCS_OK;  // late data of an ended batch: dropped
  if (!rndv) {
    self->MessageDone(token, msg, ADXL_PLUGIN_OK);
    return UCS_OK;
  }
  if (self->faults_.read_data_delay_us > 0) usleep(self->faults_.read_data_delay_us);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.user_data = m;  // alive while the receive is counted
  p.cb.recv_am = [](void *req, ucs_status_t st, size_t, void *user) {
    auto *msg = static_cast<Message *>(user);
    msg->lane->ReceiveDone(msg, FromUcs(st));  // may free msg
    ucp_request_free(req);
  };
  void *buffer = m->staging.data();
  size_t count = m->bytes;
  if (buffer == nullptr) {
    SetBuffer(m->local, m->memh, &p, &buffer, &count);
  } else if (m->staging.memh() != nullptr) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    p.memh = m->staging.memh();
  }
  // No lock held: UCP may fail this receive synchronously (an endpoint
  // already purged) and run the callback inside the call.
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(self->worker_, data, buffer, count, &p);
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) return UCS_OK;  // the callback ends it
  self->ReceiveDone(m, r == nullptr ? ADXL_PLUGIN_OK : FromUcs(UCS_PTR_STATUS(r)));
  return UCS_OK;
}
