// The "cma" baseline: the kernel's cross-memory-attach limit between the two
// processes, with no engine and no UCX in between.  The same blocks (block i
// of the initiator's buffer <-> block i of the target's) move with
// process_vm_writev (WRITE) / process_vm_readv (READ), IOV_MAX descriptors
// per system call, descriptors as given (no merging of adjacent blocks),
// split by blocks over `threads` threads (the caller and threads - 1
// workers started once), as many as the engine's same-node lane uses
// (adxl.HccsCopyThreads, else min(CPUs, 4); ADXL_HCCS_COPY_THREADS here too).
// Latency rows: one call of one 4 KiB descriptor on the caller's thread.
// KV rows (--workload kv --baselines cma): the very (offset, length) list the
// engine moves, one transfer call's descriptors at a time, each call's list
// cut by bytes at descriptor boundaries into one part per thread; within a
// part, adjacent local ranges are merged with each other and adjacent remote
// ones with each other, as any caller of these system calls can (the two
// lists are independent byte streams of equal length): the kernel's limit
// for that list, which for the contiguous uniform reference is one range.
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

#include <functional>

#include "engine_runner.h"
#include "kv_layout.h"
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
  // One step of a kv plan: its keys one after another, a key's calls one
  // after another (sync), offsets from the two buffer bases.  One sample per
  // key, as the engine's kv rows.
  StepResult RunKeys(adxl::TransferOp op, uintptr_t local_base, uint64_t remote_base, const KvPlan &plan);

 private:
  // Blocks [begin, end) of b; 0 or errno.
  int Part(const BlockBatch &b, size_t begin, size_t end) const;
  // Segments [begin, end) of a call, adjacent ranges merged; 0 or errno.
  int Segments(bool write, uintptr_t local_base, uint64_t remote_base, const Segment *s, size_t begin,
               size_t end) const;
  // Runs part(index) for index 0 .. threads() - 1, index 0 on the caller's
  // thread, the others on the workers; the first error or 0.
  int RunParts(const std::function<int(size_t)> &part);
  void Work(size_t index);

  const pid_t pid_;
  std::vector<std::thread> workers_;
  // mu_ guards generation_, part_, pending_, error_ and stop_; the only lock
  // here, never held while a part copies.
  std::mutex mu_;
  std::condition_variable cv_;       // workers wait for a new generation
  std::condition_variable done_cv_;  // the caller waits for pending_ == 0
  uint64_t generation_ = 0;
  const std::function<int(size_t)> *part_ = nullptr;  // the current generation's work
  size_t pending_ = 0;
  int error_ = 0;
  bool stop_ = false;
};

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_CMA_BASELINE_H_
