#include "common/background_worker.h"

namespace adxl {

void BackgroundWorker::Start() {
  {
    MutexLock l(&mu_);
    if (running_) return;
    running_ = true;
  }
  thread_ = std::thread([this] { Run(); });
}

bool BackgroundWorker::Post(std::function<void()> task) {
  MutexLock l(&mu_);
  if (!running_) return false;
  tasks_.push_back(std::move(task));
  cv_.NotifyOne();
  return true;
}

void BackgroundWorker::Stop() {
  {
    MutexLock l(&mu_);
    if (!running_) return;
    running_ = false;
    cv_.NotifyAll();
  }
  if (thread_.joinable()) thread_.join();
}

void BackgroundWorker::Run() {
  while (true) {
    std::function<void()> task;
    {
      MutexLock l(&mu_);
      cv_.Wait(&mu_, [&]() ADXL_REQUIRES(mu_) { return !tasks_.empty() || !running_; });
      if (tasks_.empty()) return;  // stopped and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace adxl
