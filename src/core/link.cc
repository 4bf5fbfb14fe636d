#include "core/link.h"

#include "common/log.h"

namespace adxl {

void Link::SetConnected() {
  std::lock_guard<std::mutex> l(mu_);
  state_.store(LinkState::kConnected);
  cv_.notify_all();
}

void Link::Fail(const std::string &why) {
  {
    std::lock_guard<std::mutex> l(mu_);
    LinkState prev = state_.exchange(LinkState::kFailed);
    cv_.notify_all();
    if (prev == LinkState::kFailed) return;
    if (prev == LinkState::kConnected) ADXL_WARN("link to %s failed: %s", remote_.c_str(), why.c_str());
  }
  if (endpoint) endpoint->Cancel();
}

void Link::Shutdown() {
  disconnected_.store(true);
  {
    std::lock_guard<std::mutex> l(mu_);
    state_.store(LinkState::kFailed);
    cv_.notify_all();
  }
  if (endpoint) endpoint->Cancel();
}

bool Link::WaitSettled(Clock::time_point deadline) {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_until(l, deadline, [&] { return state_.load() != LinkState::kConnecting; });
}

}  // namespace adxl
