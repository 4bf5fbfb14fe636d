// The cache layer's layer-wise tasks (CacheManager::TransferCacheAsync,
// cache_task.h): one of the three parts of CacheManager's state
// (cache_manager_impl.h), with the local caches (local_caches.h) and the
// links (link_table.h).
//
// Locks, and what each guards:
//  - TaskWorkers::mu: the task threads this manager owns (`workers`).  Held
//    to add a thread, to reap the ones that have exited (their join returns
//    at once) and to take them all at Finalize; never across a join of a
//    running thread, a synchronizer call or I/O.
//  - CacheTask::State::mu (one per task): the task's progress and results.
//    Taken under TaskWorkers::mu (reaping reads `exited`) and by Finalize's
//    cancel with no other lock; never the other way round; never held across
//    a TransferSync or a synchronizer call (EndLocked waits on the task's
//    condition variable, which releases it, for a transfer in flight).
// Order: CacheManager::Impl::mu -> TaskWorkers::mu -> CacheTask::State::mu.
// TaskWorkers::mu is never held with LocalCaches::mu or LinkTable::mu.
#ifndef LLM_DATADIST_SRC_TASK_WORKERS_H_
#define LLM_DATADIST_SRC_TASK_WORKERS_H_

#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "cache_task.h"
#include "common/thread_annotations.h"

// CacheTask is a public type (llm_datadist_ext_layerwise.h), so its State is
// defined in its namespace.
namespace llm_datadist::ext {

// The shared state of one layer-wise push (cache_task.h).
struct CacheTask::State {
  enum Phase : uint8_t { kNotStarted, kStarted, kComplete, kFailed };
  explicit State(size_t targets) : results(targets), phase(targets, kNotStarted) {}

  adxl::Mutex mu;
  adxl::CondVar cv;  // done, pushing
  bool done ADXL_GUARDED_BY(mu) = false;       // the result is reported: final
  bool cancelled ADXL_GUARDED_BY(mu) = false;  // the worker pushes nothing more
  bool pushing ADXL_GUARDED_BY(mu) = false;    // a TransferSync of this task is in flight
  bool exited ADXL_GUARDED_BY(mu) = false;     // the worker thread has returned (joinable at once)
  uint32_t synced ADXL_GUARDED_BY(mu) = 0;
  Status status ADXL_GUARDED_BY(mu) = LLM_SUCCESS;
  std::vector<std::optional<Status>> results ADXL_GUARDED_BY(mu);
  std::vector<Phase> phase ADXL_GUARDED_BY(mu);

  // Ends the task with `why` for every started, unfinished target (and its
  // first failure as the status); wakes the waiters.  Waits for a transfer
  // in flight first, so nothing lands after the task reported.
  void EndLocked(Status why) ADXL_REQUIRES(mu);
};

}  // namespace llm_datadist::ext

namespace llm_datadist::internal {

struct TaskWorker {
  std::thread thread;
  std::shared_ptr<CacheTask::State> state;
};

class TaskWorkers {
 public:
  mutable adxl::Mutex mu;
  std::vector<TaskWorker> workers ADXL_GUARDED_BY(mu);

  // Joins and drops the workers whose thread has exited.
  void ReapLocked() ADXL_REQUIRES(mu);
  // Takes every worker (Finalize), cancels each task and joins its thread,
  // with no lock held.
  void CancelAndJoinAll() ADXL_EXCLUDES(mu);
};

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_SRC_TASK_WORKERS_H_
