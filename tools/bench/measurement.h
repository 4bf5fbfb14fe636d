// What one timed step returns, and how steps add up to one result row.
#ifndef ADXL_TOOLS_BENCH_MEASUREMENT_H_
#define ADXL_TOOLS_BENCH_MEASUREMENT_H_

#include <chrono>
#include <cmath>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

inline double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// One step: `seconds` of wall time for the whole batch, and the duration of
// every transfer call inside it (one per thread in sync mode, one per
// request in async mode, one per iteration in the latency mode).
struct StepResult {
  double seconds = 0;
  std::vector<double> call_us;
  int errors = 0;
  std::string first_error;
  // CPU time of both sides' processes in the step (-1: not measured; the
  // in-turn loop of the bandwidth rows then measures both bench processes).
  double cpu_seconds = -1;
  void Fail(const std::string &why) {
    if (errors++ == 0) first_error = why;
  }
};

// One line of the table / CSV / JSON.
struct Row {
  std::string benchmark;  // engine_sync, engine_async, ucp, tcp, memcpy
  std::string pattern;    // "seq" (block i -> block i) or "latency"
  size_t block_size = 0;
  size_t batch_size = 0;  // descriptors per transfer call
  int threads = 1;
  std::string transport;
  std::string direction;
  std::string initiator_memory;
  std::string target_memory;
  double bandwidth_gbps = 0;
  double ops_per_sec = 0;
  double avg_latency_us = 0;
  double p99_us = 0;
  double p50_us = 0;  // the median call: what a noisy machine disturbs least
  double cpu_s_per_gb = NAN;  // CPU seconds of both sides per GB moved (NaN: not measured)
  int error_count = 0;
  std::string consistency = "unchecked";  // pass, fail, unchecked
  // Engine rows only: engine GB/s divided by the baseline's (NaN: none).
  double vs_memcpy = NAN;
  double vs_ucp = NAN;
  double vs_tcp = NAN;
  double vs_cma = NAN;
  double vs_nixl = NAN;      // over the best NIXL row of the group
  double vs_mooncake = NAN;
  std::string note;  // first error, for the table
};

// Adds timed steps up into a row's numbers.
class RowAccumulator {
 public:
  // A timed step that moved `bytes` in `ops` descriptors.
  void AddStep(const StepResult &s, size_t bytes, size_t ops) {
    seconds_ += s.seconds;
    bytes_ += bytes;
    ops_ += ops;
    latencies_.insert(latencies_.end(), s.call_us.begin(), s.call_us.end());
    errors_ += s.errors;
    if (note_.empty()) note_ = s.first_error;
    if (s.cpu_seconds >= 0) {
      cpu_seconds_ += s.cpu_seconds;
      cpu_bytes_ += bytes;
    }
  }
  // One verified step: whether the destination matched the source.  A row
  // with no check at all reports "unchecked".
  void AddCheck(bool matched) {
    checked_ = true;
    mismatched_ = mismatched_ || !matched;
  }
  // A failure outside the timed steps (the warm-up).
  void AddError(const std::string &why) {
    ++errors_;
    if (note_.empty()) note_ = why;
  }
  int errors() const { return errors_; }
  void FillRow(Row *row) const;

 private:
  double seconds_ = 0;
  size_t bytes_ = 0;
  size_t ops_ = 0;
  double cpu_seconds_ = 0;
  size_t cpu_bytes_ = 0;
  std::vector<double> latencies_;
  int errors_ = 0;
  bool checked_ = false;
  bool mismatched_ = false;
  std::string note_;
};

// Nearest-rank percentile of unsorted samples (0 when empty).
double Percentile(std::vector<double> samples, double pct);

// One row measured in turn with others (MeasureInTurn): a step of it, and
// after a step that had no error whether its destination matched (null: no
// verify pass); what a step moves.
struct TurnRow {
  std::function<StepResult()> step;
  std::function<bool()> check;
  size_t bytes = 0;
  size_t ops = 0;
};

// Measures rows step by step in turn (A, B, ..., A, B, ...): each a warm-up
// step, then `loops` timed steps.  In turn, every row sees the same machine
// load, so that their ratios hold on a host whose load changes during the
// run.  A row whose step fails takes no more steps (its link needs
// resetting); the others go on.  One accumulator per row, in order.
std::vector<RowAccumulator> MeasureInTurn(int loops, const std::vector<TurnRow> &rows);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_MEASUREMENT_H_
