#include "transport/transport.h"

#include <time.h>

#include <cstdint>
#include <mutex>
#include <utility>

#include "common/log.h"

namespace adxl {
namespace {

// Reads a variable-size blob through the plugin's (buf, *len) convention.
template <typename F>
int ReadBlob(F &&f, std::string *out) {
  size_t len = 256;
  for (int attempt = 0; attempt < 2; ++attempt) {
    out->resize(len);
    int rc = f(out->data(), &len);
    if (rc == ADXL_PLUGIN_OK) {
      out->resize(len);
      return rc;
    }
    if (rc != ADXL_PLUGIN_ERR_NO_RESOURCE) return rc;
  }
  return ADXL_PLUGIN_ERR_NO_RESOURCE;
}

// `t` as CLOCK_MONOTONIC nanoseconds (the plugin ABI's clock), at least 1
// (0 means no deadline there).  Converted through the time left rather than
// assuming steady_clock's epoch.
uint64_t MonotonicNs(std::chrono::steady_clock::time_point t) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t left = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           t - std::chrono::steady_clock::now()).count();
  const int64_t at = static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec + left;
  return at > 0 ? static_cast<uint64_t>(at) : 1;
}

}  // namespace

bool Transport::Drain(std::chrono::steady_clock::time_point deadline) const {
  if (ops().drain != nullptr) return ops().drain(ctx_, MonotonicNs(deadline)) == ADXL_PLUGIN_OK;
  // Without drain: progress until 8 calls in a row find nothing (a transport
  // may report one idle pass between bursts of what it receives).
  for (int idle = 0; idle < 8;) {
    idle = Progress() != 0 ? 0 : idle + 1;
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
  return true;
}

std::shared_ptr<Transport> Transport::Open(std::unique_ptr<PluginLibrary> lib,
                                           const std::map<std::string, std::string> &params, std::string *why) {
  std::shared_ptr<Transport> t(new Transport());
  t->lib_ = std::move(lib);
  t->name_ = t->lib_->ops().name != nullptr ? t->lib_->ops().name : "?";
  std::vector<adxl_plugin_param_t> p;
  for (const auto &kv : params) p.push_back({kv.first.c_str(), kv.second.c_str()});
  // The plugin logs through the engine's logger, under its own name (a
  // static string of the plugin's, which stays mapped).
  adxl_plugin_config_t cfg{p.data(), p.size(), PluginLogCallback, const_cast<char *>(t->lib_->ops().name)};
  int rc = t->ops().open(&cfg, &t->ctx_);
  if (rc != ADXL_PLUGIN_OK) {
    t->ctx_ = nullptr;
    *why = "plugin " + t->name_ + " failed to open (status " + std::to_string(rc) + ")";
    return nullptr;
  }
  t->ops().query(t->ctx_, &t->caps_);
  adxl_plugin_context_t *ctx = t->ctx_;
  const adxl_plugin_ops_t &ops = t->ops();
  rc = ReadBlob([&](void *b, size_t *l) { return ops.get_address(ctx, b, l); }, &t->address_);
  if (rc != ADXL_PLUGIN_OK) {
    *why = "plugin " + t->name_ + " has no address (status " + std::to_string(rc) + ")";
    return nullptr;
  }
  return t;
}

Transport::~Transport() {
  if (ctx_ != nullptr) ops().close(ctx_);
}

int TransportMem::Register(std::shared_ptr<Transport> t, void *addr, size_t len, int mem_type,
                           const std::string &share_path, uint64_t share_offset, std::unique_ptr<TransportMem> *out) {
  adxl_plugin_mem_t *m = nullptr;
  int rc = t->ops().mem_reg(t->ctx(), addr, len, mem_type, share_path.empty() ? nullptr : share_path.c_str(),
                            share_offset, &m);
  if (rc != ADXL_PLUGIN_OK) return rc;
  std::unique_ptr<TransportMem> mem(new TransportMem(t, m));
  rc = ReadBlob([&](void *b, size_t *l) { return t->ops().mem_pack(t->ctx(), m, b, l); }, &mem->packed_key_);
  if (rc != ADXL_PLUGIN_OK) return rc;
  *out = std::move(mem);
  return ADXL_PLUGIN_OK;
}

TransportMem::~TransportMem() { t_->ops().mem_dereg(t_->ctx(), mem_); }

int Endpoint::Create(std::shared_ptr<Transport> t, const std::string &address, uint32_t lanes,
                     std::shared_ptr<Endpoint> *out) {
  adxl_plugin_ep_t *ep = nullptr;
  int rc = t->ops().ep_create(t->ctx(), address.data(), address.size(), lanes, &ep);
  if (rc != ADXL_PLUGIN_OK) return rc;
  const uint32_t lane = t->ops().ep_lane(ep);
  out->reset(new Endpoint(std::move(t), ep));
  (*out)->lane_ = lane;
  return ADXL_PLUGIN_OK;
}

// One plugin call on the endpoint's handle, made outside mu_: the handle
// (null once cancelled) while it lives; Cancel does not destroy it before.
class Endpoint::Use {
 public:
  explicit Use(Endpoint *ep) : ep_(ep), handle_(ep->Acquire()) {}
  ~Use() {
    if (handle_ != nullptr) ep_->Release();
  }
  Use(const Use &) = delete;
  Use &operator=(const Use &) = delete;
  adxl_plugin_ep_t *handle() const { return handle_; }

 private:
  Endpoint *ep_;
  adxl_plugin_ep_t *handle_;
};

Endpoint::~Endpoint() {
  Cancel();
  // No Use is left (they hold the endpoint), so no orphan either; defensive.
  adxl_plugin_ep_t *orphan = nullptr;
  {
    MutexLock l(&mu_);
    std::swap(orphan, orphan_);
  }
  if (orphan != nullptr) t_->ops().ep_destroy(orphan, 1);
}

adxl_plugin_ep_t *Endpoint::Acquire() {
  MutexLock l(&mu_);
  if (ep_ != nullptr) ++users_;
  return ep_;
}

void Endpoint::Release() {
  adxl_plugin_ep_t *orphan = nullptr;
  {
    MutexLock l(&mu_);
    if (--users_ == 0) {
      std::swap(orphan, orphan_);
      idle_.NotifyAll();
    }
  }
  if (orphan != nullptr) t_->ops().ep_destroy(orphan, 1);  // Cancel gave up waiting for us
}

int Endpoint::Post(int op, const adxl_plugin_iov_t *iov, size_t count, std::chrono::steady_clock::time_point deadline,
                   std::unique_ptr<Batch> *out) {
  Use use(this);
  if (use.handle() == nullptr) return ADXL_PLUGIN_ERR_IO;
  adxl_plugin_batch_t *b = nullptr;
  int rc;
  if (deadline != kNoDeadline && t_->ops().post_by != nullptr) {
    rc = t_->ops().post_by(use.handle(), op, iov, count, MonotonicNs(deadline), &b);
  } else {
    rc = t_->ops().post(use.handle(), op, iov, count, &b);
  }
  if (rc != ADXL_PLUGIN_OK) return rc;
  *out = std::make_unique<Batch>(t_, b);
  return ADXL_PLUGIN_OK;
}

void Endpoint::Cancel() {
  adxl_plugin_ep_t *ep = nullptr;
  {
    MutexLock l(&mu_);
    if (ep_ == nullptr) {
      // Cancelled already; a Cancel still destroying the handle is waited
      // for (the fence holds for every caller).  Bounded by that Cancel's
      // own bounds (kInUseWait, and the plugin's on ep_destroy).
      idle_.Wait(&mu_, [this]() ADXL_REQUIRES(mu_) { return !closing_; });
      return;
    }
    std::swap(ep, ep_);  // calls from now on fail at once
    closing_ = true;
  }
  // A post still in flight on the handle may be moving its whole batch
  // inside the call (the same-node lane's copy): the plugin stops it at its
  // next chunk, so that the wait below ends promptly and no byte of it
  // moves after this Cancel returns (without ep_cancel, a copy longer than
  // kInUseWait runs on).  Outside mu_, as every plugin call; the handle
  // stays valid, as only this Cancel destroys it or hands it on.
  if (t_->ops().ep_cancel != nullptr) t_->ops().ep_cancel(ep);
  {
    MutexLock l(&mu_);
    const bool idle = idle_.WaitUntil(&mu_, std::chrono::steady_clock::now() + kInUseWait,
                                      [this]() ADXL_REQUIRES(mu_) { return users_ == 0; });
    if (!idle) {
      orphan_ = ep;  // the last call destroys it
      ep = nullptr;
      ADXL_WARN("endpoint teardown: a call on it did not return within %lld ms; the last call "
                "destroys it", static_cast<long long>(kInUseWait.count()));
    }
  }
  if (ep != nullptr) t_->ops().ep_destroy(ep, 1);  // outside mu_: may take a while (a forced UCP close)
  MutexLock l(&mu_);
  closing_ = false;
  idle_.NotifyAll();
}

std::string Endpoint::Describe() {
  Use use(this);
  if (use.handle() == nullptr) return "closed";
  char buf[256];
  if (t_->ops().ep_describe(use.handle(), buf, sizeof(buf)) != ADXL_PLUGIN_OK) return "unknown";
  return buf;
}

int RemoteKey::Unpack(const std::shared_ptr<Endpoint> &ep, const std::string &packed,
                      std::unique_ptr<RemoteKey> *out) {
  Endpoint::Use use(ep.get());
  if (use.handle() == nullptr) return ADXL_PLUGIN_ERR_IO;
  adxl_plugin_rkey_t *k = nullptr;
  int rc = ep->t_->ops().rkey_unpack(use.handle(), packed.data(), packed.size(), &k);
  if (rc != ADXL_PLUGIN_OK) return rc;
  out->reset(new RemoteKey(ep, k));
  return ADXL_PLUGIN_OK;
}

RemoteKey::~RemoteKey() { ep_->transport()->ops().rkey_destroy(rkey_); }

std::string RemoteKey::Describe() const {
  char buf[64] = {};
  if (ep_->transport()->ops().rkey_describe(rkey_, buf, sizeof(buf)) != ADXL_PLUGIN_OK) return "unknown";
  return buf;
}

}  // namespace adxl
