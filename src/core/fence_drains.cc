#include "core/fence_drains.h"

#include "adxl/adxl_types.h"
#include "common/log.h"

namespace adxl {

bool FenceDrains::Add(const void *source, const std::string &peer, AnswerFn answer) {
  MutexLock l(&mu_);
  size_t &mine = per_peer_[source];
  if (mine >= kMaxPerPeer) {
    ADXL_ERROR("'%s' sent more than %zu fences while a drain waits to start; cutting it off", peer.c_str(),
               kMaxPerPeer);
    return false;
  }
  waiting_.push_back(Waiting{peer, std::move(answer), Clock::now() + budget_});
  ++mine;
  if (queued_) return true;  // joins the round that waits to start
  if (!worker_->Post([this] { Round(); })) {
    waiting_.pop_back();
    per_peer_.clear();  // nothing waits now
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
    per_peer_.clear();
    queued_ = false;  // fences from now on wait for the next round
  }
  size_t next = 0, timed_out = 0;
  std::string first_late;
  while (next < fences.size()) {
    if (drain_(fences[next].deadline)) break;
    // The earliest deadline passed with requests still running: answer the
    // fences whose time is up, and drain on for the others.
    const Clock::time_point now = Clock::now();
    if (first_late.empty()) first_late = fences[next].peer;
    do {
      fences[next++].answer(TIMEOUT);
      ++timed_out;
    } while (next < fences.size() && fences[next].deadline <= now);
  }
  for (; next < fences.size(); ++next) fences[next].answer(SUCCESS);
  if (timed_out != 0) {
    ADXL_WARN("fence from '%s'%s: requests peers had started here were still running after %lld ms (%zu of %zu "
              "fences answered TIMEOUT)",
              first_late.c_str(), timed_out > 1 ? " and others" : "", static_cast<long long>(budget_.count()),
              timed_out, fences.size());
  }
}

}  // namespace adxl
