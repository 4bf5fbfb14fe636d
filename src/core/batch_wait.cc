#include "core/batch_wait.h"

#include <thread>

namespace adxl {

BatchWait::Outcome BatchWait::Step(const Batch &batch, Clock::time_point deadline, int *rc) {
  *rc = batch.Test();
  if (*rc != ADXL_PLUGIN_IN_PROGRESS) return Outcome::kEnded;
  if (Clock::now() >= deadline) return Outcome::kTimedOut;
  ProgressOnce();
  return Outcome::kRunning;
}

BatchWait::Outcome BatchWait::Until(const Batch &batch, Clock::time_point deadline, int *rc) {
  Outcome o;
  while ((o = Step(batch, deadline, rc)) == Outcome::kRunning) {
  }
  return o;
}

void BatchWait::ProgressOnce() {
  if (transport_.Progress() != 0) {
    idle_ = false;
    return;
  }
  const Clock::time_point now = Clock::now();
  if (!idle_) {
    idle_ = true;
    idle_since_ = now;
  } else if (now - idle_since_ > kSpinFor) {
    std::this_thread::sleep_for(kIdleSleep);
  }
}

}  // namespace adxl
