// AmTransport, target side: requests peers send here (WRITE data received into
// registered memory, READ requests answered from it), tracked until UCP is
// done with them so that ReleaseTargetOps can end them before their memory
// or the worker goes (am_transport.h, "Target side").
#include "am/am_transport.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <set>

#include "adxl/plugin/adxl_plugin.h"
#include "am/am_protocol.h"

using namespace am_protocol;

uint64_t AmTransport::TargetOpStart(ucp_ep_h reply_ep, const std::vector<ucp_dt_iov_t> &iov, bool *live) {
  uintptr_t lo = 0, hi = 0;
  for (const ucp_dt_iov_t &v : iov) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(v.buffer);
    lo = lo == hi ? a : std::min(lo, a);
    hi = std::max(hi, a + v.length);
  }
  adxl::MutexLock l(&mu_);
  const uint64_t id = next_target_op_++;
  // On an endpoint being closed: never answered (it may be gone by then).
  const bool released = closing_.count(reply_ep) != 0;
  if (live != nullptr) *live = !released;
  try {
    target_ops_.emplace(id, TargetOp{reply_ep, lo, hi, released});
  } catch (...) {
    return 0;
  }
  return id;
}

bool AmTransport::TargetOpLive(uint64_t id) {
  adxl::MutexLock l(&mu_);
  auto it = target_ops_.find(id);
  return it != target_ops_.end() && !it->second.released;
}

bool AmTransport::TargetOpDone(uint64_t id) {
  adxl::MutexLock l(&mu_);
  auto it = target_ops_.find(id);
  if (it == target_ops_.end()) return id != 0;
  const bool answer = !it->second.released;
  target_ops_.erase(it);
  return answer;
}

uint64_t AmTransport::TargetOpMark() {
  adxl::MutexLock l(&mu_);
  return next_target_op_;
}

bool AmTransport::TargetOpsBefore(uint64_t mark) {
  adxl::MutexLock l(&mu_);
  for (const auto &op : target_ops_) {
    if (op.first < mark) return true;
  }
  return false;
}

bool AmTransport::TargetSend(ucp_ep_h reply_ep, unsigned id, const void *header, size_t header_len,
                        std::vector<ucp_dt_iov_t> iov, ucp_mem_h memh) {
  struct Pending {
    AmTransport *self;
    uint64_t op;
    uint64_t header[kReadDataWords];
    std::vector<ucp_dt_iov_t> iov;
    Staging staging;
  };
  std::unique_ptr<Pending> pending(new (std::nothrow) Pending{this, 0, {}, {}, {}});
  if (pending == nullptr || header_len > sizeof(pending->header)) return false;
  memcpy(pending->header, header, header_len);
  pending->iov.swap(iov);
  bool live = true;
  pending->op = TargetOpStart(reply_ep, pending->iov, &live);
  if (!live) {  // its endpoint is being closed (ReleaseTargetOps)
    TargetOpDone(pending->op);
    return false;
  }
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

void AmTransport::SendAck(ucp_ep_h reply_ep, uint64_t token, uint32_t msg, int status) {
  const uint64_t h[kAckWords] = {token, Pack32(msg, status)};
  TargetSend(reply_ep, kAck, h, sizeof(h), {}, nullptr);
}

void AmTransport::ReleaseTargetOps(uintptr_t addr, size_t len) {
  std::vector<ucp_ep_h> eps;  // to close, each once: claimed in closing_
  std::vector<uint64_t> ids;
  {
    adxl::MutexLock l(&mu_);
    std::set<ucp_ep_h> want;
    for (const auto &kv : target_ops_) {
      const TargetOp &op = kv.second;
      const bool touches = len == 0 || (op.lo < op.hi && op.lo < addr + len && addr < op.hi);
      if (touches && !op.released) want.insert(op.reply_ep);
    }
    for (ucp_ep_h ep : want) {
      if (closing_.insert(ep).second) eps.push_back(ep);  // else another thread closes it
    }
    // Every request on a closed endpoint ends with it: none is answered.
    for (auto &kv : target_ops_) {
      if (want.count(kv.second.reply_ep) == 0) continue;
      kv.second.released = true;
      ids.push_back(kv.first);
    }
  }
  if (ids.empty()) return;
  if (!eps.empty()) {
    log_(ADXL_PLUGIN_LOG_INFO, "closing %zu peer endpoint(s) with %zu request(s) pending on memory going away",
         eps.size(), ids.size());
    CloseReplyEndpoints(eps);  // owned ones as their owners would
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

bool AmTransport::ReadTargetRequest(const void *header, size_t header_len, const ucp_am_recv_param_t *param,
                               const char *what, bool probe_ok, TargetRequest *req) {
  uint64_t words[kRequestFixedWords];
  std::vector<uint64_t> pairs;
  bool parsed = false;
  try {
    parsed = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) &&
             ParseRequest(header, header_len, kMaxMessageOps, probe_ok, words, &pairs);
    if (parsed) {
      req->token = words[0];
      req->msg = static_cast<uint32_t>(words[1]);
      req->budget_us = words[2];
      req->ops = pairs.size() / 2;
      // A probe reads nothing: valid, answered with no data.
      req->valid = req->ops == 0 || ResolveTargetOps(pairs.data(), req->ops, &req->iov, &req->memh, &req->total);
    }
  } catch (...) {
    req->valid = false;  // out of memory: refused like an invalid request
  }
  if (!parsed) log_(ADXL_PLUGIN_LOG_ERROR, "malformed AM %s (%zu header bytes) dropped", what, header_len);
  return parsed;
}

bool AmTransport::Late(uint64_t until_ns, size_t len) {
  if (until_ns == 0) return false;
  const uint64_t now = MonotonicNs();
  if (now <= until_ns) return false;
  log_(ADXL_PLUGIN_LOG_WARN, "AM write of %zu bytes dropped: its data was complete %.1f ms after its deadline", len,
       static_cast<double>(now - until_ns) / 1e6);
  return true;
}

ucs_status_t AmTransport::OnWrite(void *arg, const void *header, size_t header_len, void *data, size_t len,
                             const ucp_am_recv_param_t *param) {
  auto *self = static_cast<AmTransport *>(arg);
  const uint64_t arrived_ns = MonotonicNs();
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  TargetRequest req;
  // A malformed request is dropped: a rendezvous descriptor not received is
  // dropped by UCP.
  if (!self->ReadTargetRequest(header, header_len, param, "write", false, &req)) return UCS_OK;
  // This side's deadline for placing the data (am_transport.h, "Deadlines"); 0:
  // none.  A budget too large to add is no deadline in practice.
  const uint64_t until_ns =
      req.budget_us == 0 ? 0 : arrived_ns + std::min<uint64_t>(req.budget_us, UINT64_MAX / 2000) * 1000;
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
  FaultDelay(self->faults_.write_accept_delay_us);  // a seam of the test build (fault_injection.h)
  if (!rndv) {
    int status = ADXL_PLUGIN_OK;
    if (self->Late(until_ns, len)) {
      status = ADXL_PLUGIN_ERR_IO;
    } else {
      Scatter(data, len, iov);
    }
    self->SendAck(param->reply_ep, token, msg, status);
    return UCS_OK;
  }
  // Rendezvous: pull the data into place, acknowledge when it is there.
  struct Pending {
    AmTransport *self;
    ucp_ep_h reply_ep;
    uint64_t token;
    uint32_t msg;
    uint64_t op;
    size_t len;
    uint64_t until_ns;  // this side's deadline (0: none)
    // Several operations, or a deadline: each fragment is placed by
    // Placement, and only while MayPlace says so.  Otherwise UCP receives
    // into the one contiguous range itself.
    Placement placement;
    uint64_t late_ns = 0;  // when a fragment was refused for the deadline (0: none was)
    static bool MayPlace(void *arg) {
      auto *pd = static_cast<Pending *>(arg);
      if (pd->until_ns != 0) {
        const uint64_t now = MonotonicNs();
        if (now > pd->until_ns) {
          pd->late_ns = now;
          return false;
        }
      }
      // Released: its memory may be going away (TargetOpLive).
      return pd->self->TargetOpLive(pd->op);
    }
    // Ends the request and acknowledges it (unless it was released).
    void Finish(ucs_status_t st) {
      int status = StatusOf(st);
      if (status == ADXL_PLUGIN_OK && late_ns != 0) {
        self->log_(ADXL_PLUGIN_LOG_WARN,
                   "AM write of %zu bytes cut short: its data still arriving %.1f ms after its deadline was dropped",
                   len, static_cast<double>(late_ns - until_ns) / 1e6);
        status = ADXL_PLUGIN_ERR_IO;
      }
      if (self->TargetOpDone(op)) self->SendAck(reply_ep, token, msg, status);
    }
  };
  std::unique_ptr<Pending> pending(
      new (std::nothrow) Pending{self, param->reply_ep, token, msg, 0, len, until_ns, {}});
  if (pending == nullptr) {
    self->SendAck(param->reply_ep, token, msg, ADXL_PLUGIN_ERR_NO_RESOURCE);
    return UCS_OK;
  }
  pending->op = self->TargetOpStart(param->reply_ep, iov);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.user_data = pending.get();
  p.cb.recv_am = [](void *req, ucs_status_t st, size_t, void *user) {
    std::unique_ptr<Pending> pd(static_cast<Pending *>(user));
    pd->Finish(st);
    ucp_request_free(req);
  };
  void *buffer = nullptr;
  size_t count = 0;
  // With a deadline the data never goes straight into place: bytes that
  // arrive after it must not land.
  if (iov.size() > 1 || until_ns != 0) {
    pending->placement.Start(std::move(iov), Pending::MayPlace, pending.get());
    self->placement_type_.SetBuffer(&pending->placement, &p, &buffer, &count);
  } else {
    SetBuffer(iov, memh, &p, &buffer, &count);
  }
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(self->worker_, data, buffer, count, &p);
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) {
    pending.release();  // the callback owns it
    return UCS_OK;
  }
  pending->Finish(r == nullptr ? UCS_OK : UCS_PTR_STATUS(r));
  return UCS_OK;
}

ucs_status_t AmTransport::OnReadRequest(void *arg, const void *header, size_t header_len, void *, size_t,
                                   const ucp_am_recv_param_t *param) {
  auto *self = static_cast<AmTransport *>(arg);
  TargetRequest req;
  if (!self->ReadTargetRequest(header, header_len, param, "read request", true, &req)) return UCS_OK;
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
