// The "cma" baseline: the kernel's cross-memory-attach limit between the two
// processes, with no engine and no UCX in between.  The same blocks (block i
// of the initiator's buffer <-> block i of the target's) move with
// process_vm_writev (WRITE) / process_vm_readv (READ), IOV_MAX descriptors
// per system call, descriptors as given (no merging of adjacent blocks),
// split by blocks over `threads` threads (the caller and threads - 1
// workers started once), as many as the engine's same-node lane uses
// (adxl.HccsCopyThreads, else min(CPUs, 4); ADXL_HCCS_COPY_THREADS here too).
// Latency rows: one call of one 4 KiB descriptor on the caller's thread.
// Same node only: another host's PID means nothing here (the row fails).
#ifndef ADXL_TOOLS_BENCH_CMA_BASELINE_H_
#define ADXL_TOOLS_BENCH_CMA_BASELINE_H_

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "engine_runner.h"
#include "measurement.h"

namespace bench {

class CmaBaseline {
 public:
  CmaBaseline(pid_t target_pid, int threads);
  ~CmaBaseline();
  CmaBaseline(const CmaBaseline &) = delete;
  CmaBaseline &operator=(const CmaBaseline &) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // The thread count the engine's same-node lane uses on this host.
  static int LaneThreads();

  StepResult RunStep(const BlockBatch &b);
  StepResult RunLatency(const BlockBatch &one, int iters);

 private:
  // Blocks [begin, end) of b; 0 or errno.
  int Part(const BlockBatch &b, size_t begin, size_t end) const;
  void Work(size_t index);

  const pid_t pid_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;       // workers wait for a new generation
  std::condition_variable done_cv_;  // the caller waits for pending_ == 0
  uint64_t generation_ = 0;
  const BlockBatch *batch_ = nullptr;
  size_t pending_ = 0;
  int error_ = 0;
  bool stop_ = false;
};

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_CMA_BASELINE_H_
