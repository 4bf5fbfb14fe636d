#include "core/fence_drains.h"

#include "adxl/adxl_types.h"
#include "common/log.h"

namespace adxl {

bool FenceDrains::Add(AnswerFn answer) {
  MutexLock l(&mu_);
  waiting_.push_back(Waiting{std::move(answer), Clock::now() + budget_});
  if (queued_) return true;  // joins the round that waits to start
  if (!worker_->Post([this] { Round(); })) {
    waiting_.pop_back();
    return false;
  }
  queued_ = true;
  return true;
}

void FenceDrains::Round() {
  std::vector<Waiting> fences;
  {
    MutexLock l(&mu_);
    fences.swap(waiting_);
    queued_ = false;  // fences from now on wait for the next round
  }
  size_t next = 0, timed_out = 0;
  while (next < fences.size()) {
    if (drain_(fences[next].deadline)) break;
    // The earliest deadline passed with requests still running: answer the
    // fences whose time is up, and drain on for the others.
    const Clock::time_point now = Clock::now();
    do {
      fences[next++].answer(TIMEOUT);
      ++timed_out;
    } while (next < fences.size() && fences[next].deadline <= now);
  }
  for (; next < fences.size(); ++next) fences[next].answer(SUCCESS);
  if (timed_out != 0) {
    ADXL_WARN("%zu of %zu fences answered TIMEOUT: requests peers had started here were still running after %lld ms",
              timed_out, fences.size(), static_cast<long long>(budget_.count()));
  }
}

}  // namespace adxl
