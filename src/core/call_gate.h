// CallGate: admits the engine's API calls while the engine is up and lets
// Finalize wait until the calls it admitted have left.
//
// Every API call asks for a Pass first and holds it for its whole length:
// the modules it reaches exist while any pass is out.  Finalize closes the
// gate (calls that start from then on get an empty pass and fail at once),
// ends the calls in flight by shutting their links down (a call blocked on
// a peer returns), then waits until the last pass is dropped, and only then
// destroys the modules.
//
// Not a lock: a pass holds no mutex, so nothing waits on a call in flight
// but Finalize, and a new call never queues behind Finalize (a reader-writer
// lock held by every call for its whole length did both: a TransferSync
// against a stopped peer held Finalize out until its deadline, and new
// readers kept a waiting writer out for as long as they came).
//
// Lock: mu_ guards open_ and inside_; a leaf, held for a few instructions,
// never across a call out.
//
// Thread-safety: every method may be called from any thread.  Open and
// Close are the engine's (Initialize and Finalize, one at a time).
#ifndef ADXL_SRC_CORE_CALL_GATE_H_
#define ADXL_SRC_CORE_CALL_GATE_H_

#include <cstdint>

#include "common/thread_annotations.h"

namespace adxl {

class CallGate {
 public:
  // One admitted call; empty (false) when the gate was closed.  Move-only;
  // dropping a non-empty pass lets the call out.
  class Pass {
   public:
    Pass() = default;
    Pass(Pass &&other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Pass &operator=(Pass &&other) noexcept;
    Pass(const Pass &) = delete;
    Pass &operator=(const Pass &) = delete;
    ~Pass();
    explicit operator bool() const { return gate_ != nullptr; }

   private:
    friend class CallGate;
    explicit Pass(CallGate *gate) : gate_(gate) {}
    CallGate *gate_ = nullptr;
  };

  CallGate() = default;
  CallGate(const CallGate &) = delete;
  CallGate &operator=(const CallGate &) = delete;

  // A pass while the gate is open, an empty one while it is closed.
  Pass Enter() ADXL_EXCLUDES(mu_);
  // Opens the gate (the engine is up).
  void Open() ADXL_EXCLUDES(mu_);
  // Closes it: passes asked for from now on are empty.  False when it was
  // closed already.
  bool Close() ADXL_EXCLUDES(mu_);
  // Waits until every pass handed out has been dropped.  After Close, the
  // wait ends once the calls in flight end.
  void WaitEmpty() ADXL_EXCLUDES(mu_);

 private:
  void Leave() ADXL_EXCLUDES(mu_);

  Mutex mu_;
  CondVar empty_;  // signalled when inside_ drops to 0
  bool open_ ADXL_GUARDED_BY(mu_) = false;
  uint64_t inside_ ADXL_GUARDED_BY(mu_) = 0;  // passes out
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_CALL_GATE_H_
