#include "measurement.h"

#include <algorithm>
#include <numeric>

namespace bench {

double Percentile(std::vector<double> samples, double pct) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  size_t rank = static_cast<size_t>(std::ceil(pct / 100.0 * static_cast<double>(samples.size())));
  return samples[std::min(samples.size(), std::max<size_t>(rank, 1)) - 1];
}

void RowAccumulator::FillRow(Row *row) const {
  // Rates only from steps that moved data without error.
  if (seconds_ > 0 && errors_ == 0) {
    row->bandwidth_gbps = static_cast<double>(bytes_) / seconds_ / 1e9;
    row->ops_per_sec = static_cast<double>(ops_) / seconds_;
  }
  if (!latencies_.empty()) {
    row->avg_latency_us = std::accumulate(latencies_.begin(), latencies_.end(), 0.0) /
                          static_cast<double>(latencies_.size());
    row->p99_us = Percentile(latencies_, 99);
    row->p50_us = Percentile(latencies_, 50);
  }
  if (cpu_bytes_ > 0 && errors_ == 0) row->cpu_s_per_gb = cpu_seconds_ / (static_cast<double>(cpu_bytes_) / 1e9);
  row->error_count = errors_;
  row->consistency = !checked_ ? "unchecked" : mismatched_ ? "fail" : "pass";
  row->note = note_;
}

std::vector<RowAccumulator> MeasureInTurn(int loops, const std::vector<TurnRow> &rows) {
  std::vector<RowAccumulator> acc(rows.size());
  std::vector<bool> failed(rows.size(), false);
  for (int i = 0; i <= loops; ++i) {
    for (size_t k = 0; k < rows.size(); ++k) {
      if (failed[k]) continue;
      StepResult r = rows[k].step();
      if (i == 0) {
        if (r.errors > 0) acc[k].AddError(r.first_error);
      } else {
        acc[k].AddStep(r, rows[k].bytes, rows[k].ops);
      }
      if (r.errors > 0) {
        failed[k] = true;
        continue;
      }
      if (rows[k].check) acc[k].AddCheck(rows[k].check());
    }
  }
  return acc;
}

}  // namespace bench
