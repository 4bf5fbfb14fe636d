// AmTransport, initiator side: batches cut into messages, the window that sends
// them, the answers that end them, and the ending of batches whose endpoint
// was closed or failed (am_transport.h, "Life of a batch").
#include "am/am_transport.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <utility>

#include "adxl/plugin/adxl_plugin.h"
#include "am/am_protocol.h"
#include "core/fault_injection.h"

using namespace am_protocol;

namespace {
// The endpoint whose Post this thread is in (0: none), callbacks UCP runs
// inside that Post included: read by the test build's seam only
// (foreign_pump_delay_us, core/fault_injection.h).
thread_local uint64_t t_posting_ep_id = 0;
}  // namespace

// ---------------------------------------------------------- batch life cycle

bool AmTransport::TakeIfFinished(BatchIt it, Completion *finished) {
  Batch &b = it->second;
  if (b.posting || b.sending > 0 || b.receiving > 0) return false;
  if (!b.ended && b.remaining > 0) return false;
  finished->done = b.done_called ? nullptr : b.done;  // Abandon() reported it already
  finished->arg = b.arg;
  finished->status = b.status;
  batches_.erase(it);  // a stale entry in unsent_ is skipped by Pump
  return true;
}

template <typename Body>
void AmTransport::UpdateBatch(uint64_t token, Body &&body) {
  Completion finished;
  {
    adxl::MutexLock l(&mu_);
    auto it = batches_.find(token);
    if (it == batches_.end()) return;  // already ended and reported
    body(it->second);
    TakeIfFinished(it, &finished);
  }
  finished.Run();  // outside mu_: the DoneFn may call into the transport
  Pump();
}

// Message `m` of batch `b` was answered (or failed): it leaves the window,
// and its staging buffer goes back once UCP no longer holds its send.
void AmTransport::Answered(Batch &b, Message &m, int status, bool from_peer) {
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
  // The peer answered (whatever it said), or its data arrived.
  if (from_peer || status == ADXL_PLUGIN_OK) {
    const auto now = static_cast<int64_t>(MonotonicNs());
    last_answer_ns_.store(now, std::memory_order_relaxed);
    if (b.answered_ns != nullptr) b.answered_ns->store(now, std::memory_order_relaxed);
  }
}

void AmTransport::MessageDone(uint64_t token, uint32_t msg, int status) {
  UpdateBatch(token, [&](Batch &b) ADXL_REQUIRES(mu_) {
    if (msg < b.messages.size()) {
      Answered(b, b.messages[msg], status, true);
    } else if (!b.ended && b.status == ADXL_PLUGIN_OK) {
      b.status = ADXL_PLUGIN_ERR_INVALID;  // an answer naming no message of ours
    }
  });
}

void AmTransport::ReceiveDone(Message *m, int status) {
  UpdateBatch(m->token, [&](Batch &b) ADXL_REQUIRES(mu_) {
    if (b.receiving > 0) --b.receiving;
    // Placed fragment by fragment (several operations), or by UCP.
    m->placement.reset();
    Answered(b, *m, status, false);
  });
}

void AmTransport::SendDone(Message *m) {
  UpdateBatch(m->token, [&](Batch &b) ADXL_REQUIRES(mu_) {
    if (b.sending > 0) --b.sending;
    m->send_done = true;
    if (m->answered) m->staging = Staging();
  });
}

void AmTransport::SendFailed(Message *m, int status) {
  UpdateBatch(m->token, [&](Batch &b) ADXL_REQUIRES(mu_) {
    if (b.sending > 0) --b.sending;
    m->send_done = true;
    Answered(b, *m, status, false);
    // The rest will not go either: none of it is sent, none answered.
    const size_t unsent = b.messages.size() - b.next_send;
    b.next_send = b.messages.size();
    if (!b.ended) b.remaining -= std::min(unsent, b.remaining);
  });
}

void AmTransport::PostDone(uint64_t token) {
  UpdateBatch(token, [](Batch &b) { b.posting = false; });
}

void AmTransport::Pump() {
  while (true) {
    Message *m = nullptr;
    ucp_ep_h ep = nullptr;
    uint64_t ep_id = 0;
    bool write = false;
    uint64_t deadline_ns = 0;
    {
      adxl::MutexLock l(&mu_);
      while (m == nullptr && !unsent_.empty() && in_flight_ < kWindowMessages) {
        auto it = batches_.find(unsent_.front());
        if (it == batches_.end() || it->second.ended || it->second.next_send >= it->second.messages.size()) {
          unsent_.pop_front();  // gone, stopped, or all sent
          continue;
        }
        Batch &b = it->second;
        ep = b.eps[b.next_send % b.eps.size()];
        m = &b.messages[b.next_send++];
        if (b.next_send == b.messages.size()) unsent_.pop_front();
        ++b.in_window;
        ++in_flight_;
        ++b.sending;  // the batch, and so *m, stays until the send is over
        ep_id = b.ep_id;
        handing_.push_back(ep_id);  // ep stays open until Handed (Fence)
        write = b.write;
        deadline_ns = b.deadline_ns;
      }
      if (m == nullptr) return;
    }
    // The test build's seam: a message of another endpoint than the one
    // this thread posts on, held between taking it and handing it to UCP.
    if (faults_.foreign_pump_delay_us != 0 && ep_id != t_posting_ep_id) FaultDelay(faults_.foreign_pump_delay_us);
    // Only this thread touches *m until it is sent.  A READ's answer needs
    // no staging: it is placed as it arrives (OnReadData).
    if (write && m->local.size() > 1) {
      m->staging = NewStaging(m->bytes);
      if (m->staging.data() == nullptr) {
        log_(ADXL_PLUGIN_LOG_ERROR, "no memory for a %zu-byte staging buffer", m->bytes);
        Handed(ep_id);
        SendFailed(m, ADXL_PLUGIN_ERR_NO_RESOURCE);
        return;
      }
      Gather(m->local, m->staging.data());
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
      m->header[2] = BudgetUs(deadline_ns);  // UCP reads the header from here on
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
    Handed(ep_id);  // before *m may go (SendDone, SendFailed)
    if (UCS_PTR_IS_ERR(r)) {
      log_(ADXL_PLUGIN_LOG_ERROR, "AM %s: %s; the rest of the batch is not sent", write ? "write" : "read request",
          ucs_status_string(UCS_PTR_STATUS(r)));
      SendFailed(m, ADXL_PLUGIN_ERR_IO);
      return;
    }
    if (r == nullptr) SendDone(m);  // completed in place: no callback
  }
}

bool AmTransport::AddBatch(uint64_t token, uint64_t ep_id, const ucp_ep_h *eps, size_t n_eps, bool write,
                           uint64_t deadline_ns, DoneFn done, void *arg, std::atomic<int64_t> *answered_ns,
                           std::vector<Message> *messages) {
  for (size_t i = 0; i < messages->size(); ++i) {
    Message &m = (*messages)[i];
    m.token = token;
    m.header[0] = token;
    m.header[1] = static_cast<uint64_t>(i) | (static_cast<uint64_t>(m.local.size()) << 32);
  }
  Batch b;
  b.ep_id = ep_id;
  try {
    b.eps.assign(eps, eps + n_eps);
  } catch (...) {
    return false;
  }
  b.write = write;
  b.deadline_ns = deadline_ns;
  b.remaining = messages->size();
  b.status = ADXL_PLUGIN_OK;
  b.done = done;
  b.arg = arg;
  b.answered_ns = answered_ns;
  b.messages.swap(*messages);
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
  return true;
}

bool AmTransport::Post(uint64_t ep_id, const ucp_ep_h *eps, size_t n_eps, bool write, const Op *ops, size_t count,
                  uint64_t deadline_ns, DoneFn done, void *arg, std::atomic<int64_t> *answered_ns) {
  if (eps == nullptr || n_eps == 0) return false;
  if (count == 0) write = false;  // the wire-up probe is a READ of nothing
  // Cut the batch into messages (outside the lock: only this thread sees them).
  std::vector<Message> messages;
  try {
    // No operation: the wire-up probe, one empty READ request per endpoint
    // (message i goes on eps[i]; am_transport.h, "Wire-up").
    for (size_t i = 0; count == 0 && i < n_eps; ++i) {
      messages.emplace_back();
      messages.back().lane = this;
      messages.back().header.assign(kRequestFixedWords, 0);
    }
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
    // An endpoint of ep_id was closed by ReleaseTargetOps: nothing may be
    // sent on it (am_transport.h, "Owned endpoints"); the batch fails below.
    const bool dead = dead_ids_.count(ep_id) != 0;
    token = dead ? 0 : next_token_++;
    if (!dead && !AddBatch(token, ep_id, eps, n_eps, write, deadline_ns, done, arg, answered_ns, &messages)) {
      return false;
    }
  }
  if (token == 0) {
    done(arg, ADXL_PLUGIN_ERR_IO);
    return true;
  }
  // What the window allows now; answers send the rest (Pump, from the
  // callbacks).  No lock is held while sending: UCP may run callbacks inside
  // these calls.
  t_posting_ep_id = ep_id;
  Pump();
  t_posting_ep_id = 0;
  PostDone(token);
  return true;
}

std::vector<uint64_t> AmTransport::EndBatches(uint64_t ep_id, int why) {
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

void AmTransport::Handed(uint64_t ep_id) {
  adxl::MutexLock l(&mu_);
  handing_.erase(std::find(handing_.begin(), handing_.end(), ep_id));
  handed_.NotifyAll();
}

void AmTransport::Fence(uint64_t ep_id, int why) {
  adxl::MutexLock l(&mu_);
  EndBatches(ep_id, why);  // Pump takes no more of them
  handed_.Wait(&mu_, [&]() ADXL_REQUIRES(mu_) {
    return std::find(handing_.begin(), handing_.end(), ep_id) == handing_.end();
  });
}

void AmTransport::Abandon(uint64_t ep_id, int why) {
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
    Completion finished;
    {
      adxl::MutexLock l(&mu_);
      auto it = batches_.find(t);
      if (it == batches_.end()) continue;  // ended meanwhile (done ran)
      if (TakeIfFinished(it, &finished)) {
        // idle: taken out of the table
      } else if (!it->second.posting && !it->second.done_called) {
        // UCP still holds a request of it (bounded wait over): report it now,
        // free it when that request ends.
        it->second.done_called = true;
        finished = Completion{it->second.done, it->second.arg, it->second.status};
      }  // posting: Post() ends it when it returns
    }
    finished.Run();
  }
  Pump();  // ended batches left room in the window
}

void AmTransport::EndpointFailed(uint64_t ep_id, int why) {
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

void AmTransport::RunDeferred() {
  std::vector<Completion> to_call;
  {
    adxl::MutexLock l(&mu_);
    deferred_pending_.store(false, std::memory_order_relaxed);
    std::vector<std::pair<uint64_t, int>> failed;
    failed.swap(failed_eps_);
    for (const auto &f : failed) {
      for (uint64_t t : EndBatches(f.first, f.second)) {
        Completion finished;
        // Batches still posting, sending or receiving end when that finishes
        // (UCP fails the requests of a failed endpoint).
        if (TakeIfFinished(batches_.find(t), &finished)) to_call.push_back(finished);
      }
    }
  }
  for (const Completion &c : to_call) c.Run();
  Pump();  // ended batches left room in the window
}

// ------------------------------------------------------------ AM handlers

bool AmTransport::ReadStillWanted(void *arg) {
  auto *m = static_cast<Message *>(arg);
  AmTransport *self = m->lane;
  adxl::MutexLock l(&self->mu_);
  auto it = self->batches_.find(m->token);
  return it != self->batches_.end() && !it->second.ended;
}

ucs_status_t AmTransport::OnAck(void *arg, const void *header, size_t header_len, void *, size_t,
                           const ucp_am_recv_param_t *) {
  auto *self = static_cast<AmTransport *>(arg);
  if (header_len != kAckWords * sizeof(uint64_t)) return UCS_OK;
  uint64_t h[kAckWords];
  memcpy(h, header, sizeof(h));
  self->MessageDone(h[0], static_cast<uint32_t>(h[1]), static_cast<int32_t>(h[1] >> 32));
  return UCS_OK;
}

ucs_status_t AmTransport::OnReadData(void *arg, const void *header, size_t header_len, void *data, size_t len,
                                const ucp_am_recv_param_t *param) {
  auto *self = static_cast<AmTransport *>(arg);
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
  FaultDelay(self->faults_.read_data_delay_us);  // a seam of the test build (fault_injection.h)
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.user_data = m;  // alive while the receive is counted
  p.cb.recv_am = [](void *req, ucs_status_t st, size_t, void *user) {
    auto *msg = static_cast<Message *>(user);
    msg->lane->ReceiveDone(msg, StatusOf(st));  // may free msg
    ucp_request_free(req);
  };
  void *buffer = nullptr;
  size_t count = 0;
  if (m->local.size() > 1) {
    // Only this thread touches m->placement until the receive is posted;
    // then UCP's fragments, then ReceiveDone.
    m->placement.reset(new (std::nothrow) Placement);
    if (m->placement == nullptr) {
      self->ReceiveDone(m, ADXL_PLUGIN_ERR_NO_RESOURCE);  // the data is dropped by UCP
      return UCS_OK;
    }
    try {
      m->placement->Start(m->local, ReadStillWanted, m);
    } catch (...) {
      self->ReceiveDone(m, ADXL_PLUGIN_ERR_NO_RESOURCE);
      return UCS_OK;
    }
    self->placement_type_.SetBuffer(m->placement.get(), &p, &buffer, &count);
  } else {
    SetBuffer(m->local, m->memh, &p, &buffer, &count);
  }
  // No lock held: UCP may fail this receive synchronously (an endpoint
  // already purged) and run the callback inside the call.
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(self->worker_, data, buffer, count, &p);
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) return UCS_OK;  // the callback ends it
  self->ReceiveDone(m, r == nullptr ? ADXL_PLUGIN_OK : StatusOf(UCS_PTR_STATUS(r)));
  return UCS_OK;
}
