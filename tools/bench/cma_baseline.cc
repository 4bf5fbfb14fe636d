#include "cma_baseline.h"

#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace bench {

namespace {

// One call of n descriptors, retried from where a partial transfer stopped.
int Move(bool write, pid_t pid, struct iovec *l, struct iovec *r, size_t n, size_t bytes) {
  size_t nl = n, nr = n;
  while (bytes > 0) {
    const ssize_t got = write ? process_vm_writev(pid, l, nl, r, nr, 0) : process_vm_readv(pid, l, nl, r, nr, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return got < 0 ? errno : EFAULT;
    bytes -= static_cast<size_t>(got);
    for (struct iovec **v : {&l, &r}) {
      size_t *c = v == &l ? &nl : &nr;
      size_t left = static_cast<size_t>(got);
      while (left > 0) {
        if ((*v)->iov_len <= left) {
          left -= (*v)->iov_len;
          ++*v;
          --*c;
        } else {
          (*v)->iov_base = static_cast<char *>((*v)->iov_base) + left;
          (*v)->iov_len -= left;
          left = 0;
        }
      }
    }
  }
  return 0;
}

}  // namespace

int CmaBaseline::LaneThreads() {
  if (const char *v = getenv("ADXL_HCCS_COPY_THREADS")) {
    const int n = atoi(v);
    if (n > 0) return n;
  }
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<int>(std::max(1L, std::min(cpus, 4L)));
}

CmaBaseline::CmaBaseline(pid_t target_pid, int threads) : pid_(target_pid) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { Work(static_cast<size_t>(i)); });
}

CmaBaseline::~CmaBaseline() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto &t : workers_) t.join();
}

int CmaBaseline::Part(const BlockBatch &b, size_t begin, size_t end) const {
  const bool write = b.op == adxl::WRITE;
  struct iovec l[IOV_MAX];
  struct iovec r[IOV_MAX];
  for (size_t i = begin; i < end;) {
    const size_t n = std::min<size_t>(IOV_MAX, end - i);
    for (size_t k = 0; k < n; ++k) {
      l[k] = {reinterpret_cast<void *>(b.local + (i + k) * b.block), b.block};
      r[k] = {reinterpret_cast<void *>(b.remote + (i + k) * b.block), b.block};
    }
    if (int e = Move(write, pid_, l, r, n, n * b.block)) return e;
    i += n;
  }
  return 0;
}

void CmaBaseline::Work(size_t index) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    cv_.wait(l, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    const BlockBatch &b = *batch_;
    l.unlock();
    const size_t parts = static_cast<size_t>(threads());
    const int e = Part(b, b.count * index / parts, b.count * (index + 1) / parts);
    l.lock();
    if (e != 0 && error_ == 0) error_ = e;
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

StepResult CmaBaseline::RunStep(const BlockBatch &b) {
  StepResult out;
  const size_t parts = static_cast<size_t>(threads());
  const Clock::time_point t0 = Clock::now();
  if (parts > 1) {
    std::lock_guard<std::mutex> l(mu_);
    batch_ = &b;
    pending_ = parts - 1;
    error_ = 0;
    ++generation_;
  }
  if (parts > 1) cv_.notify_all();
  int e = Part(b, 0, b.count / parts);
  if (parts > 1) {
    std::unique_lock<std::mutex> l(mu_);
    done_cv_.wait(l, [&] { return pending_ == 0; });
    if (e == 0) e = error_;
  }
  const Clock::time_point t1 = Clock::now();
  if (e != 0) out.Fail(std::string("process_vm_") + (b.op == adxl::WRITE ? "writev" : "readv") + ": " + strerror(e));
  out.seconds = std::chrono::duration<double>(t1 - t0).count();
  out.call_us.push_back(Micros(t1 - t0));
  return out;
}

StepResult CmaBaseline::RunLatency(const BlockBatch &one, int iters) {
  StepResult out;
  out.call_us.reserve(static_cast<size_t>(iters));
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    const Clock::time_point t0 = Clock::now();
    if (int e = Part(one, 0, 1)) {
      out.Fail(std::string("process_vm_") + (one.op == adxl::WRITE ? "writev" : "readv") + ": " + strerror(e));
      break;
    }
    out.call_us.push_back(Micros(Clock::now() - t0));
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace bench
