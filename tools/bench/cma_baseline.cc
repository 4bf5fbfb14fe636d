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

// One call of nl local and nr remote iovecs (`bytes` in all), retried from
// where a partial transfer stopped.  The lists are consumed.
constexpr size_t kIov = IOV_MAX;  // iovecs a call carries at most, on each side

int MoveLists(bool write, pid_t pid, struct iovec *l, size_t nl, struct iovec *r, size_t nr, size_t bytes) {
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

// One call of n descriptors on each side.
int Move(bool write, pid_t pid, struct iovec *l, struct iovec *r, size_t n, size_t bytes) {
  return MoveLists(write, pid, l, n, r, n, bytes);
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

int CmaBaseline::Segments(bool write, uintptr_t local_base, uint64_t remote_base, const Segment *s, size_t begin,
                          size_t end) const {
  struct iovec l[kIov];
  struct iovec r[kIov];
  size_t nl = 0, nr = 0, bytes = 0;
  for (size_t i = begin; i < end; ++i) {
    char *lp = reinterpret_cast<char *>(local_base + s[i].local);
    char *rp = reinterpret_cast<char *>(static_cast<uintptr_t>(remote_base + s[i].remote));
    bool merge_l = nl > 0 && static_cast<char *>(l[nl - 1].iov_base) + l[nl - 1].iov_len == lp;
    bool merge_r = nr > 0 && static_cast<char *>(r[nr - 1].iov_base) + r[nr - 1].iov_len == rp;
    if ((!merge_l && nl == kIov) || (!merge_r && nr == kIov)) {
      if (int e = MoveLists(write, pid_, l, nl, r, nr, bytes)) return e;
      nl = nr = bytes = 0;
      merge_l = merge_r = false;
    }
    if (merge_l) {
      l[nl - 1].iov_len += s[i].len;
    } else {
      l[nl++] = {lp, s[i].len};
    }
    if (merge_r) {
      r[nr - 1].iov_len += s[i].len;
    } else {
      r[nr++] = {rp, s[i].len};
    }
    bytes += s[i].len;
  }
  return bytes > 0 ? MoveLists(write, pid_, l, nl, r, nr, bytes) : 0;
}

void CmaBaseline::Work(size_t index) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    cv_.wait(l, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    const std::function<int(size_t)> &part = *part_;
    l.unlock();
    const int e = part(index);
    l.lock();
    if (e != 0 && error_ == 0) error_ = e;
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

int CmaBaseline::RunParts(const std::function<int(size_t)> &part) {
  const size_t parts = static_cast<size_t>(threads());
  if (parts > 1) {
    {
      std::lock_guard<std::mutex> l(mu_);
      part_ = &part;
      pending_ = parts - 1;
      error_ = 0;
      ++generation_;
    }
    cv_.notify_all();
  }
  int e = part(0);
  if (parts > 1) {
    std::unique_lock<std::mutex> l(mu_);
    done_cv_.wait(l, [&] { return pending_ == 0; });
    if (e == 0) e = error_;
  }
  return e;
}

StepResult CmaBaseline::RunStep(const BlockBatch &b) {
  StepResult out;
  const size_t parts = static_cast<size_t>(threads());
  const std::function<int(size_t)> part = [&](size_t i) {
    return Part(b, b.count * i / parts, b.count * (i + 1) / parts);
  };
  const Clock::time_point t0 = Clock::now();
  const int e = RunParts(part);
  const Clock::time_point t1 = Clock::now();
  if (e != 0) out.Fail(std::string("process_vm_") + (b.op == adxl::WRITE ? "writev" : "readv") + ": " + strerror(e));
  out.seconds = std::chrono::duration<double>(t1 - t0).count();
  out.call_us.push_back(Micros(t1 - t0));
  return out;
}

StepResult CmaBaseline::RunKeys(adxl::TransferOp op, uintptr_t local_base, uint64_t remote_base, const KvPlan &plan) {
  StepResult out;
  const bool write = op == adxl::WRITE;
  const size_t parts = static_cast<size_t>(threads());
  std::vector<size_t> cuts(parts + 1);
  const Clock::time_point t0 = Clock::now();
  for (const KeyTransfer &key : plan.keys) {
    const Clock::time_point k0 = Clock::now();
    int e = 0;
    for (const SegmentCall &call : key.calls) {
      // Part p: the segments that start in bytes [total * p / parts,
      // total * (p + 1) / parts) of the call.
      uint64_t total = 0;
      for (const Segment &s : call) total += s.len;
      size_t i = 0;
      uint64_t at = 0;  // where segment i starts in the call
      for (size_t p = 0; p < parts; ++p) {
        while (i < call.size() && at < total * p / parts) at += call[i++].len;
        cuts[p] = i;
      }
      cuts[parts] = call.size();
      const std::function<int(size_t)> part = [&](size_t p) {
        return Segments(write, local_base, remote_base, call.data(), cuts[p], cuts[p + 1]);
      };
      if ((e = RunParts(part)) != 0) break;
    }
    if (e != 0) {
      out.Fail(std::string("process_vm_") + (write ? "writev" : "readv") + ": " + strerror(e));
      break;
    }
    out.call_us.push_back(Micros(Clock::now() - k0));
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
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
