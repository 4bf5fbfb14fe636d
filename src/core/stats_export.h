// Per-link statistics as operators read them: the public structs of
// adxl_ext.h, Prometheus text, and the one-line log summary.  Pure
// functions of snapshots (link_stats.h); no state, no locks.
#ifndef ADXL_SRC_CORE_STATS_EXPORT_H_
#define ADXL_SRC_CORE_STATS_EXPORT_H_

#include <map>
#include <set>
#include <string>

#include "adxl/adxl_ext.h"
#include "core/link_stats.h"

namespace adxl {

// Peer counters by name, the retired counts, and which peers have a link now.
struct StatsView {
  std::map<std::string, CountersSnapshot> peers;
  CountersSnapshot retired;
  std::set<std::string> linked;  // peers with a connected link now

  CountersSnapshot Totals() const;
};

ext::LinkStats ToPublic(const std::string &remote, bool linked, const CountersSnapshot &s);

// Prometheus text exposition format 0.0.4 (see adxl_ext.h RenderPrometheus).
std::string RenderPrometheusText(const StatsView &view);

// One log line: totals per direction since `previous` (and in all), and the
// busiest peers of the interval by bytes.  `previous` is the view of the
// last line (empty at first).
std::string SummaryLine(const StatsView &view, const StatsView &previous, size_t busiest);

}  // namespace adxl

#endif  // ADXL_SRC_CORE_STATS_EXPORT_H_
