#include "core/call_gate.h"

namespace adxl {

CallGate::Pass &CallGate::Pass::operator=(Pass &&other) noexcept {
  if (this != &other) {
    if (gate_ != nullptr) gate_->Leave();
    gate_ = other.gate_;
    other.gate_ = nullptr;
  }
  return *this;
}

CallGate::Pass::~Pass() {
  if (gate_ != nullptr) gate_->Leave();
}

CallGate::Pass CallGate::Enter() {
  MutexLock l(&mu_);
  if (!open_) return Pass();
  ++inside_;
  return Pass(this);
}

void CallGate::Open() {
  MutexLock l(&mu_);
  open_ = true;
}

bool CallGate::Close() {
  MutexLock l(&mu_);
  const bool was_open = open_;
  open_ = false;
  return was_open;
}

void CallGate::WaitEmpty() {
  MutexLock l(&mu_);
  empty_.Wait(&mu_, [this]() ADXL_REQUIRES(mu_) { return inside_ == 0; });
}

void CallGate::Leave() {
  MutexLock l(&mu_);
  if (--inside_ == 0) empty_.NotifyAll();
}

}  // namespace adxl
