// TaskWorkers (task_workers.h): the threads of the layer-wise tasks a
// manager owns, reaped as they exit and cancelled and joined at Finalize.
#include "task_workers.h"

#include <utility>

namespace llm_datadist::internal {

void TaskWorkers::ReapLocked() {
  for (auto it = workers.begin(); it != workers.end();) {
    bool exited = false;
    {
      adxl::MutexLock lock(&it->state->mu);
      exited = it->state->exited;
    }
    if (exited) {
      it->thread.join();  // it has returned from its last lock: at once
      it = workers.erase(it);
    } else {
      ++it;
    }
  }
}

void TaskWorkers::CancelAndJoinAll() {
  std::vector<TaskWorker> all;
  {
    adxl::MutexLock lock(&mu);
    all.swap(workers);
  }
  // Cancelled first (nothing more is pushed), then joined, no lock held.
  for (TaskWorker &w : all) {
    {
      adxl::MutexLock lock(&w.state->mu);
      w.state->EndLocked(LLM_FAILED);
    }
    if (w.thread.joinable()) w.thread.join();
  }
}

}  // namespace llm_datadist::internal
