#include "ucp_baseline.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

namespace bench {
namespace {

std::string Ucs(const char *what, ucs_status_t st) { return std::string(what) + ": " + ucs_status_string(st); }

// Waits for a UCP request by progressing the worker from this thread (the
// engine's TransferSync does the same).  Frees the request.
ucs_status_t Wait(ucp_worker_h worker, ucs_status_ptr_t req, Clock::time_point deadline, bool *timed_out) {
  *timed_out = false;
  if (req == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
  ucs_status_t st;
  while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
    ucp_worker_progress(worker);
    if (Clock::now() > deadline) {
      *timed_out = true;
      break;
    }
  }
  ucp_request_free(req);  // an unfinished request is released when it completes
  return st;
}

void EpFailed(void *arg, ucp_ep_h, ucs_status_t status) {
  static_cast<std::atomic<bool> *>(arg)->store(true);
  fprintf(stderr, "adxl-bench: ucp baseline endpoint failed: %s\n", ucs_status_string(status));
}

}  // namespace

// ---------------------------------------------------------------- UcpWorker

namespace {

// The engine's plugin lets the shared-memory transports accept endpoints
// with peer error handling (UCX_{POSIX,SYSV}_ERROR_HANDLING=y) while it
// creates its context and worker; do the same here, the same way (only where
// the user set nothing and UCX_TLS may pick them, removed afterwards), so
// that both pick the same lanes.
class ScopedErrorHandlingDefaults {
 public:
  ScopedErrorHandlingDefaults() {
    const char *tls = getenv("UCX_TLS");
    auto may_use = [tls](const char *t) {
      return tls == nullptr || strstr(tls, "all") != nullptr || strstr(tls, "sm") != nullptr ||
             strstr(tls, t) != nullptr;
    };
    if (may_use("posix")) Set("UCX_POSIX_ERROR_HANDLING");
    if (may_use("sysv")) Set("UCX_SYSV_ERROR_HANDLING");
  }
  ~ScopedErrorHandlingDefaults() {
    for (const char *name : set_) unsetenv(name);
  }
  ScopedErrorHandlingDefaults(const ScopedErrorHandlingDefaults &) = delete;
  ScopedErrorHandlingDefaults &operator=(const ScopedErrorHandlingDefaults &) = delete;

 private:
  void Set(const char *name) {
    if (getenv(name) != nullptr) return;  // the user's setting wins
    setenv(name, "y", 0);
    set_.push_back(name);
  }
  std::vector<const char *> set_;
};

}  // namespace

std::unique_ptr<UcpWorker> UcpWorker::Create(std::string *why) {
  ScopedErrorHandlingDefaults defaults;
  std::unique_ptr<UcpWorker> w(new UcpWorker());
  ucp_config_t *config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) {
    *why = Ucs("ucp_config_read", st);
    return nullptr;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  st = ucp_init(&params, config, &w->context_);
  ucp_config_release(config);
  if (st != UCS_OK) {
    *why = Ucs("ucp_init", st);
    return nullptr;
  }
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;  // one thread drives each side's worker
  st = ucp_worker_create(w->context_, &wp, &w->worker_);
  if (st != UCS_OK) {
    *why = Ucs("ucp_worker_create", st);
    return nullptr;
  }
  return w;
}

UcpWorker::~UcpWorker() {
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

bool UcpWorker::Map(void *addr, size_t len, ucp_mem_h *memh, std::string *why) {
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  p.address = addr;
  p.length = len;
  ucs_status_t st = ucp_mem_map(context_, &p, memh);
  if (st != UCS_OK) {
    *why = Ucs("ucp_mem_map", st);
    return false;
  }
  return true;
}

// ---------------------------------------------------------------- UcpTarget

std::unique_ptr<UcpTarget> UcpTarget::Create(void *buf, size_t len, TargetProgress progress, std::string *why) {
  std::unique_ptr<UcpTarget> t(new UcpTarget());
  t->ucp_ = UcpWorker::Create(why);
  if (!t->ucp_ || !t->ucp_->Map(buf, len, &t->memh_, why)) return nullptr;
  void *packed = nullptr;
  size_t packed_len = 0;
  ucs_status_t st = ucp_rkey_pack(t->ucp_->context(), t->memh_, &packed, &packed_len);
  if (st != UCS_OK) {
    *why = Ucs("ucp_rkey_pack", st);
    return nullptr;
  }
  t->packed_rkey_.assign(static_cast<char *>(packed), packed_len);
  ucp_rkey_buffer_release(packed);
  ucp_address_t *addr = nullptr;
  size_t addr_len = 0;
  st = ucp_worker_get_address(t->ucp_->worker(), &addr, &addr_len);
  if (st != UCS_OK) {
    *why = Ucs("ucp_worker_get_address", st);
    return nullptr;
  }
  t->worker_address_.assign(reinterpret_cast<char *>(addr), addr_len);
  ucp_worker_release_address(t->ucp_->worker(), addr);

  if (progress == TargetProgress::kPoll) {
    t->progress_ = std::thread(&UcpTarget::ProgressByPolling, t.get());
    return t;
  }
  int efd = -1;
  st = ucp_worker_get_efd(t->ucp_->worker(), &efd);
  if (st != UCS_OK) {
    *why = Ucs("ucp_worker_get_efd", st);
    return nullptr;
  }
  t->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  t->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  bool ok = t->epoll_fd_ >= 0 && t->wake_fd_ >= 0;
  ev.data.fd = efd;
  ok = ok && epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, efd, &ev) == 0;
  ev.data.fd = t->wake_fd_;
  ok = ok && epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->wake_fd_, &ev) == 0;
  if (!ok) {
    *why = std::string("ucp baseline: epoll set-up: ") + strerror(errno);
    return nullptr;
  }
  t->progress_ = std::thread(&UcpTarget::ProgressByEvents, t.get());
  return t;
}

// The engine plugin's policy (its ProgressLoop): poll while events come and
// for kProgressLinger after the last one -- a transfer is a burst of
// messages, and a wake-up for each costs tens of microseconds -- then sleep
// until the worker has something to do, so that an idle target burns no CPU
// that the initiator on the same host could use.
void UcpTarget::ProgressByEvents() {
  epoll_event events[2];
  while (!stop_.load(std::memory_order_acquire)) {
    Clock::time_point last_event = Clock::now();
    while (!stop_.load(std::memory_order_relaxed)) {
      if (ucp_worker_progress(ucp_->worker()) != 0) {
        last_event = Clock::now();
      } else if (Clock::now() - last_event > kProgressLinger) {
        break;
      }
    }
    ucs_status_t st = ucp_worker_arm(ucp_->worker());
    if (st == UCS_ERR_BUSY) continue;  // events arrived meanwhile
    epoll_wait(epoll_fd_, events, 2, st == UCS_OK ? -1 : 1);
  }
}

void UcpTarget::ProgressByPolling() {
  while (!stop_.load(std::memory_order_relaxed)) ucp_worker_progress(ucp_->worker());
}

UcpTarget::~UcpTarget() {
  stop_.store(true, std::memory_order_release);
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    ssize_t rc = write(wake_fd_, &one, sizeof(one));
    (void)rc;  // a full counter still wakes the thread
  }
  if (progress_.joinable()) progress_.join();
  if (memh_ != nullptr) ucp_mem_unmap(ucp_->context(), memh_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

// ---------------------------------------------------------------- UcpInitiator

std::unique_ptr<UcpInitiator> UcpInitiator::Create(void *local, size_t len, const std::string &peer_worker_address,
                                                   const std::string &peer_rkey, uint64_t peer_base,
                                                   int timeout_ms, std::string *why) {
  std::unique_ptr<UcpInitiator> u(new UcpInitiator());
  u->ucp_ = UcpWorker::Create(why);
  if (!u->ucp_ || !u->ucp_->Map(local, len, &u->memh_, why)) return nullptr;
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = reinterpret_cast<const ucp_address_t *>(peer_worker_address.data());
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;  // as the engine's plugin: same lanes
  p.err_handler.cb = EpFailed;
  p.err_handler.arg = &u->ep_failed_;
  ucs_status_t st = ucp_ep_create(u->ucp_->worker(), &p, &u->ep_);
  if (st != UCS_OK) {
    *why = Ucs("ucp_ep_create (is the target reachable over these transports?)", st);
    return nullptr;
  }
  st = ucp_ep_rkey_unpack(u->ep_, peer_rkey.data(), &u->rkey_);
  if (st != UCS_OK) {
    *why = Ucs("ucp_ep_rkey_unpack", st);
    return nullptr;
  }
  // Finish the wire-up outside any timed step.
  StepResult wireup;
  if (!u->Flush(timeout_ms, &wireup)) {
    *why = "ucp baseline wire-up: " + wireup.first_error;
    return nullptr;
  }
  void *mapped = nullptr;
  u->peer_mapped_ = ucp_rkey_ptr(u->rkey_, peer_base, &mapped) == UCS_OK;
  u->transports_ = u->DescribeLanes();
  return u;
}

UcpInitiator::~UcpInitiator() {
  if (rkey_ != nullptr) ucp_rkey_destroy(rkey_);
  if (ep_ != nullptr) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = broken_ || ep_failed_.load() ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    bool timed_out = false;
    Wait(ucp_->worker(), ucp_ep_close_nbx(ep_, &p), Clock::now() + std::chrono::seconds(2), &timed_out);
  }
  if (memh_ != nullptr) ucp_mem_unmap(ucp_->context(), memh_);
}

bool UcpInitiator::Post(const BlockBatch &b, size_t i, StepResult *out) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH;
  p.memh = memh_;
  void *local = reinterpret_cast<void *>(b.local + i * b.block);
  const uint64_t remote = b.remote + i * b.block;
  ucs_status_ptr_t r = b.op == adxl::WRITE ? ucp_put_nbx(ep_, local, b.block, remote, rkey_, &p)
                                           : ucp_get_nbx(ep_, local, b.block, remote, rkey_, &p);
  if (UCS_PTR_IS_ERR(r)) {
    out->Fail(Ucs(b.op == adxl::WRITE ? "ucp_put_nbx" : "ucp_get_nbx", UCS_PTR_STATUS(r)));
    return false;
  }
  if (r != nullptr) ucp_request_free(r);  // completion is observed through the flush
  return true;
}

bool UcpInitiator::Flush(int timeout_ms, StepResult *out) {
  ucp_request_param_t p{};
  bool timed_out = false;
  ucs_status_t st = Wait(ucp_->worker(), ucp_ep_flush_nbx(ep_, &p),
                         Clock::now() + std::chrono::milliseconds(timeout_ms), &timed_out);
  if (timed_out) {
    broken_ = true;
    out->Fail("ucp flush did not complete within " + std::to_string(timeout_ms) + " ms");
    return false;
  }
  if (st != UCS_OK || ep_failed_.load()) {
    broken_ = true;
    out->Fail(Ucs("ucp_ep_flush_nbx", st != UCS_OK ? st : UCS_ERR_ENDPOINT_TIMEOUT));
    return false;
  }
  return true;
}

StepResult UcpInitiator::RunStep(const BlockBatch &batch, int timeout_ms) {
  StepResult out;
  if (broken_) {
    out.Fail("ucp baseline endpoint unusable after an earlier failure");
    return out;
  }
  const Clock::time_point t0 = Clock::now();
  for (size_t i = 0; i < batch.count; ++i) {
    if (!Post(batch, i, &out)) break;  // what was posted still drains below
  }
  Flush(timeout_ms, &out);
  const Clock::time_point t1 = Clock::now();
  out.seconds = std::chrono::duration<double>(t1 - t0).count();
  out.call_us.push_back(Micros(t1 - t0));
  return out;
}

StepResult UcpInitiator::RunKeys(adxl::TransferOp op, uintptr_t local_base, uint64_t remote_base,
                                 const KvPlan &plan, int timeout_ms) {
  StepResult out;
  if (broken_) {
    out.Fail("ucp baseline endpoint unusable after an earlier failure");
    return out;
  }
  const Clock::time_point t0 = Clock::now();
  for (const KeyTransfer &key : plan.keys) {
    const Clock::time_point k0 = Clock::now();
    for (const SegmentCall &call : key.calls) {
      for (const Segment &seg : call) {
        // One descriptor as a one-block batch: Post's put/get, same flags.
        if (!Post(BlockBatch{op, local_base + seg.local, remote_base + seg.remote, seg.len, 1}, 0, &out)) break;
      }
      if (!Flush(timeout_ms, &out) || out.errors > 0) break;
    }
    if (out.errors > 0) break;
    out.call_us.push_back(Micros(Clock::now() - k0));
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

StepResult UcpInitiator::RunLatency(const BlockBatch &one, int iters, int timeout_ms) {
  StepResult out;
  out.call_us.reserve(static_cast<size_t>(iters));
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < iters && !broken_; ++i) {
    const Clock::time_point t0 = Clock::now();
    if (!Post(one, 0, &out) || !Flush(timeout_ms, &out)) break;
    out.call_us.push_back(Micros(Clock::now() - t0));
  }
  if (broken_ && out.errors == 0) out.Fail("ucp baseline endpoint unusable after an earlier failure");
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

std::string UcpInitiator::DescribeLanes() const {
  // ucp_ep_print_info writes lines like
  //   "#   lane[0]:  8:posix/memory.0 md[4] ... -> ... rma_bw#0 am am_bw#0"
  // (ucp_ep_query cannot tell the lanes in 1.13).  Keep the transport names.
  char *text = nullptr;
  size_t text_len = 0;
  FILE *f = open_memstream(&text, &text_len);
  if (f == nullptr) return "unknown";
  ucp_ep_print_info(ep_, f);
  fclose(f);
  std::string all(text, text_len);
  free(text);
  std::string out;
  std::set<std::string> seen;
  for (size_t pos = all.find("lane["); pos != std::string::npos; pos = all.find("lane[", pos + 1)) {
    size_t colon = all.find(':', pos);
    if (colon == std::string::npos) break;
    size_t s = all.find_first_not_of(' ', colon + 1);
    s = all.find_first_not_of("0123456789", s);
    if (s == std::string::npos || all[s] != ':') continue;
    size_t e = all.find_first_of("/ \n", s + 1);
    std::string name = all.substr(s + 1, e == std::string::npos ? std::string::npos : e - s - 1);
    if (!name.empty() && seen.insert(name).second) out += (out.empty() ? "" : ",") + name;
  }
  return out.empty() ? "unknown" : out;
}

}  // namespace bench
