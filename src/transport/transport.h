// RAII over a transport plugin: the context, registrations, endpoints,
// remote keys and batches, each releasing itself through the plugin's ops.
//
// Lifetimes: every object holds the Transport (so the plugin context closes
// last); a RemoteKey holds its Endpoint.  Endpoint::Cancel() is the fence of
// the TIMEOUT guarantee: once it returns, nothing posted on it moves from this
// side, and posting fails.
#ifndef ADXL_SRC_TRANSPORT_TRANSPORT_H_
#define ADXL_SRC_TRANSPORT_TRANSPORT_H_

#include <chrono>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "adxl/plugin/adxl_plugin.h"
#include "common/thread_annotations.h"
#include "transport/plugin_loader.h"

namespace adxl {

class Transport {
 public:
  // Opens a context of `lib` with the given plugin parameters.
  static std::shared_ptr<Transport> Open(std::unique_ptr<PluginLibrary> lib,
                                         const std::map<std::string, std::string> &params, std::string *why);
  ~Transport();
  Transport(const Transport &) = delete;
  Transport &operator=(const Transport &) = delete;

  const adxl_plugin_ops_t &ops() const { return lib_->ops(); }
  adxl_plugin_context_t *ctx() const { return ctx_; }
  const std::string &address() const { return address_; }
  const std::string &name() const { return name_; }
  bool device_memory() const { return (caps_.flags & ADXL_PLUGIN_CAP_MEM_DEVICE) != 0; }
  // Drives the plugin once; nonzero when it did some work.  Callers waiting
  // for a batch step it through core/batch_wait.h.
  int Progress() const { return ops().progress(ctx_); }
  // The target side of a peer's fence: true once what peers had started
  // towards this side has ended here (the plugin's drain), false when
  // `deadline` came first.  A plugin without drain is progressed until 8
  // calls in a row find nothing to do, within the same deadline.
  bool Drain(std::chrono::steady_clock::time_point deadline) const;

 private:
  Transport() = default;
  std::unique_ptr<PluginLibrary> lib_;
  adxl_plugin_context_t *ctx_ = nullptr;
  adxl_plugin_caps_t caps_{};
  std::string address_;
  std::string name_;
};

class TransportMem {
 public:
  // Registers [addr, addr+len); returns the plugin status on failure.
  static int Register(std::shared_ptr<Transport> t, void *addr, size_t len, int mem_type,
                      std::unique_ptr<TransportMem> *out) {
    return Register(std::move(t), addr, len, mem_type, std::string(), 0, out);
  }
  // share_path / share_offset: see adxl_plugin_ops_t::mem_reg ("" for none).
  static int Register(std::shared_ptr<Transport> t, void *addr, size_t len, int mem_type,
                      const std::string &share_path, uint64_t share_offset, std::unique_ptr<TransportMem> *out);
  ~TransportMem();
  adxl_plugin_mem_t *get() const { return mem_; }
  const std::string &packed_key() const { return packed_key_; }

 private:
  TransportMem(std::shared_ptr<Transport> t, adxl_plugin_mem_t *m) : t_(std::move(t)), mem_(m) {}
  std::shared_ptr<Transport> t_;
  adxl_plugin_mem_t *mem_;
  std::string packed_key_;
};

class Batch {
 public:
  Batch(std::shared_ptr<Transport> t, adxl_plugin_batch_t *b) : t_(std::move(t)), b_(b) {}
  ~Batch() { t_->ops().release(b_); }
  Batch(const Batch &) = delete;
  Batch &operator=(const Batch &) = delete;
  int Test() const { return t_->ops().test(b_); }

 private:
  std::shared_ptr<Transport> t_;
  adxl_plugin_batch_t *b_;
};

class Endpoint {
 public:
  // Connects over the first lane of `lanes` (ADXL_PLUGIN_LANE_* mask) that
  // reaches the peer.
  static int Create(std::shared_ptr<Transport> t, const std::string &address, uint32_t lanes,
                    std::shared_ptr<Endpoint> *out);
  ~Endpoint();
  // No deadline for Post.
  static constexpr std::chrono::steady_clock::time_point kNoDeadline = std::chrono::steady_clock::time_point::max();
  // Posts a batch (count 0: flush only).  ERR_IO once cancelled.  With a
  // deadline, through the plugin's post_by when it has one: no byte of the
  // batch then lands after `deadline` (adxl_plugin.h); plain post otherwise.
  int Post(int op, const adxl_plugin_iov_t *iov, size_t count, std::unique_ptr<Batch> *out) ADXL_EXCLUDES(mu_) {
    return Post(op, iov, count, kNoDeadline, out);
  }
  int Post(int op, const adxl_plugin_iov_t *iov, size_t count, std::chrono::steady_clock::time_point deadline,
           std::unique_ptr<Batch> *out) ADXL_EXCLUDES(mu_);
  // Force-closes the endpoint; idempotent.  Returns once the plugin handle is
  // destroyed (every call on it has returned first, so a same-node copy in
  // progress ends before: the plugin's ep_cancel, called first, stops it at
  // its next chunk), or, past kInUseWait with a call still on it, leaves
  // the destroy to that call (logged).  Calls that start meanwhile
  // fail at once (ERR_IO / "closed"): they never wait for the teardown.
  void Cancel() ADXL_EXCLUDES(mu_);
  std::string Describe() ADXL_EXCLUDES(mu_);
  uint32_t lane() const { return lane_; }
  const std::shared_ptr<Transport> &transport() const { return t_; }

  // Bound on Cancel waiting for the calls in flight on the handle (a post,
  // a key unpack) to return before it destroys it.
  static constexpr std::chrono::milliseconds kInUseWait{2000};

 private:
  friend class RemoteKey;
  class Use;
  Endpoint(std::shared_ptr<Transport> t, adxl_plugin_ep_t *ep) : t_(std::move(t)), ep_(ep) {}
  // Takes the handle for one plugin call made outside mu_ (null once
  // cancelled); Release gives it back.
  adxl_plugin_ep_t *Acquire() ADXL_EXCLUDES(mu_);
  void Release() ADXL_EXCLUDES(mu_);

  std::shared_ptr<Transport> t_;
  // Guards the handle's state only, never a plugin call: calls take the
  // handle under it and run outside it, counted in users_; Cancel clears the
  // handle under it, waits (on idle_, bounded) for users_ to reach 0 and
  // destroys the handle outside it.  So the control thread, which unpacks
  // keys on every region update, never waits for a teardown (a forced UCP
  // close and the AM lane's Abandon).  A leaf: nothing is taken under it;
  // held across no plugin call, it never nests with the plugin's locks or
  // UCP's worker lock, and the plugin never calls back into the engine.
  Mutex mu_;
  CondVar idle_;
  adxl_plugin_ep_t *ep_ ADXL_GUARDED_BY(mu_);  // null once cancelled
  int users_ ADXL_GUARDED_BY(mu_) = 0;         // plugin calls in flight on the handle
  bool closing_ ADXL_GUARDED_BY(mu_) = false;  // a Cancel is destroying the handle
  // Cancelled while users_ stayed > 0 past kInUseWait: the last user destroys it.
  adxl_plugin_ep_t *orphan_ ADXL_GUARDED_BY(mu_) = nullptr;
  uint32_t lane_ = 0;
};

class RemoteKey {
 public:
  static int Unpack(const std::shared_ptr<Endpoint> &ep, const std::string &packed, std::unique_ptr<RemoteKey> *out);
  ~RemoteKey();
  adxl_plugin_rkey_t *get() const { return rkey_; }
  // The path transfers to this region take (the plugin's rkey_describe):
  // "cma", "mapped/<kind>", "ucp", ...
  std::string Describe() const;

 private:
  RemoteKey(std::shared_ptr<Endpoint> ep, adxl_plugin_rkey_t *k) : ep_(std::move(ep)), rkey_(k) {}
  std::shared_ptr<Endpoint> ep_;
  adxl_plugin_rkey_t *rkey_;
};

}  // namespace adxl

#endif  // ADXL_SRC_TRANSPORT_TRANSPORT_H_
