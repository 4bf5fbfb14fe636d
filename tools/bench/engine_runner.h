// The measured engine loop: one step moves a batch of block descriptors with
// TransferSync or TransferAsync, from one or several initiator threads.
#ifndef ADXL_TOOLS_BENCH_ENGINE_RUNNER_H_
#define ADXL_TOOLS_BENCH_ENGINE_RUNNER_H_

#include <functional>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "measurement.h"
#include "options.h"

namespace bench {

// `count` blocks of `block` bytes: block i of the local buffer maps to block
// i of the remote buffer.  The baselines use the same mapping.
struct BlockBatch {
  adxl::TransferOp op = adxl::WRITE;
  uintptr_t local = 0;
  uintptr_t remote = 0;
  size_t block = 0;
  size_t count = 0;
};

struct EngineSettings {
  Mode mode = Mode::kSync;
  int threads = 1;
  int async_batch = 64;
  int timeout_ms = 30000;
};

using adxl::StatusName;  // include/adxl/adxl_types.h

// Runs body(i, &result_i) on n threads released together; the step's time
// runs from the release to the last thread's end, so thread start-up is not
// measured; latencies and errors of all parts are merged.  One thread runs
// inline: no start-up to hide.
StepResult RunParallel(int n, const std::function<void(int, StepResult *)> &body);

class EngineRunner {
 public:
  EngineRunner(adxl::AdxlEngine &engine, std::string remote) : engine_(engine), remote_(std::move(remote)) {}

  // Descriptors per transfer call for this batch and these settings.
  static size_t CallSize(const BlockBatch &b, const EngineSettings &s);

  StepResult RunStep(const BlockBatch &batch, const EngineSettings &s);
  // `iters` TransferSync calls of one descriptor each.
  StepResult RunLatency(const BlockBatch &one, int iters, int timeout_ms);

  // What the engine reports its link runs on ("hccs over posix/memory"), or
  // "" when this engine build has no adxl/adxl_ext.h to ask.
  std::string LinkDescription() const;
  // The engine's own counters of the link (adxl_ext.h GetLinkStats), a few
  // indented lines; "" when this engine build cannot say.
  std::string EngineCounters() const;

  // A failed transfer leaves the link failed (ADXL semantics): the next row
  // needs a fresh link.
  bool Reconnect(int timeout_ms, std::string *why);

 private:
  using Call = std::vector<adxl::TransferOpDesc>;
  // calls[thread][i]: what each thread submits, built before timing.
  static std::vector<std::vector<Call>> Plan(const BlockBatch &b, const EngineSettings &s);
  void RunSyncCalls(adxl::TransferOp op, const std::vector<Call> &calls, int timeout_ms, StepResult *out);
  void RunAsyncCalls(adxl::TransferOp op, const std::vector<Call> &calls, int timeout_ms, StepResult *out);

  adxl::AdxlEngine &engine_;
  std::string remote_;
};

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_ENGINE_RUNNER_H_
