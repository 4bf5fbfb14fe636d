// StatsLog: the periodic one-line summary of the per-link statistics
// (option adxl.StatsIntervalMs): every interval, one INFO line with the
// totals per direction since the last line and in all, and the busiest
// peers of the interval (stats_export.h SummaryLine).
//
// It runs on the control thread, from the engine's tick (the heartbeat's
// period, so a line comes at most one period late), and never on the data
// path: reading the counters takes the book's and the link table's leaf
// locks only.  Nothing is logged while no peer was ever linked.
//
// Thread-safety: the control thread only; no lock of its own.
#ifndef ADXL_SRC_CORE_STATS_LOG_H_
#define ADXL_SRC_CORE_STATS_LOG_H_

#include <chrono>
#include <cstdint>

#include "core/stats_export.h"

namespace adxl {

class StatsLog {
 public:
  static constexpr size_t kBusiest = 3;

  // interval_ms 0: never.
  explicit StatsLog(uint32_t interval_ms);

  // Whether a line is due at `now`.
  bool Due(std::chrono::steady_clock::time_point now) const;
  // Logs the line for `view` and starts the next interval at `now`.
  void Emit(StatsView view, std::chrono::steady_clock::time_point now);

 private:
  const std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point next_;
  StatsView previous_;
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_STATS_LOG_H_
