#include "core/stats_log.h"

#include "common/log.h"

namespace adxl {

StatsLog::StatsLog(uint32_t interval_ms)
    : interval_(interval_ms), next_(std::chrono::steady_clock::now() + interval_) {}

bool StatsLog::Due(std::chrono::steady_clock::time_point now) const {
  return interval_.count() != 0 && now >= next_;
}

void StatsLog::Emit(StatsView view, std::chrono::steady_clock::time_point now) {
  next_ = now + interval_;
  if (view.peers.empty() && view.retired.connects == 0) return;  // never linked: nothing to say
  ADXL_INFO("%s", SummaryLine(view, previous_, kBusiest).c_str());
  previous_ = std::move(view);
}

}  // namespace adxl
