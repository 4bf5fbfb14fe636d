// BackgroundWorker: one thread that runs posted tasks in order.
//
// The engine's control thread must never wait (on a peer, on a transport
// drain, on an endpoint cancel that waits for copies in progress): it posts
// such work here.  Tasks run one at a time, in posting order.  Stop() runs
// the tasks already posted, then joins; Post after Stop refuses the task.
// Thread-safety: any thread may Post; mu_ is a leaf, never held while a task
// runs.
#ifndef ADXL_SRC_COMMON_BACKGROUND_WORKER_H_
#define ADXL_SRC_COMMON_BACKGROUND_WORKER_H_

#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "common/thread_annotations.h"

namespace adxl {

class BackgroundWorker {
 public:
  BackgroundWorker() = default;
  ~BackgroundWorker() { Stop(); }
  BackgroundWorker(const BackgroundWorker &) = delete;
  BackgroundWorker &operator=(const BackgroundWorker &) = delete;

  void Start() ADXL_EXCLUDES(mu_);
  // False when the worker is not running (the task is dropped).
  bool Post(std::function<void()> task) ADXL_EXCLUDES(mu_);
  // Runs what was posted, then joins.  Idempotent.
  void Stop() ADXL_EXCLUDES(mu_);

 private:
  void Run() ADXL_EXCLUDES(mu_);
  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> tasks_ ADXL_GUARDED_BY(mu_);
  bool running_ ADXL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // started and joined by the owner's thread only
};

}  // namespace adxl

#endif  // ADXL_SRC_COMMON_BACKGROUND_WORKER_H_
