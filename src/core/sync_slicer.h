// SyncSlicer: cuts a TransferSync's plan into the slices it posts one by
// one, checking its deadline between them (lanes that copy inside Post, cma
// and mapped memory, would otherwise run a large batch far past it).
//
// A slice holds at most `max_ops` operations and `max_bytes` bytes; an
// operation that does not fit is split, its pieces keeping local and remote
// addresses in step.  The slices cover the plan exactly once, in order.
// Not thread-safe: one slicer per call.
#ifndef ADXL_SRC_CORE_SYNC_SLICER_H_
#define ADXL_SRC_CORE_SYNC_SLICER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "adxl/plugin/adxl_plugin.h"

namespace adxl {

class SyncSlicer {
 public:
  // About 2 ms of copying per slice on the same-node lanes (16 MiB at
  // 8 GB/s; 16 ms if a loaded machine copies at 1 GB/s): the deadline is
  // checked often enough for a TIMEOUT within 50 ms, and a slice is large
  // enough that handing it to the copy threads costs little.  Measured with
  // adxl-bench against the cma baseline: 1024 ops / 4 MiB slices ran at
  // 0.66-0.82x, these at 0.79-1.00x.
  static constexpr size_t kDefaultMaxOps = 4096;
  static constexpr uint64_t kDefaultMaxBytes = 16u << 20;

  // A slice never carries more than the time the call has left could move
  // at kPessimisticBytesPerSecond, and never less than kMinCapBytes
  // (CapFor).  A lane may do much of its work inside Post (the same-node
  // copies; the network lane's gathering into staging buffers, slow beside
  // a CPU hog), so with a short deadline a slice sized for throughput would
  // return far past it; the deadline is only checked between slices.
  // Long deadlines (16 ms and more at these values) are not affected.
  static constexpr uint64_t kPessimisticBytesPerSecond = 1000ull * 1000 * 1000;
  static constexpr uint64_t kMinCapBytes = 256u << 10;
  static uint64_t CapFor(std::chrono::nanoseconds left);

  // `iov` must outlive the slicer; max_ops and max_bytes must be > 0.
  explicit SyncSlicer(const std::vector<adxl_plugin_iov_t> &iov, size_t max_ops = kDefaultMaxOps,
                      uint64_t max_bytes = kDefaultMaxBytes);

  bool done() const { return op_ == iov_.size(); }
  // Replaces *slice with the next slice; returns false (and leaves *slice
  // empty) once everything was handed out.
  bool Next(std::vector<adxl_plugin_iov_t> *slice) { return Next(slice, max_bytes_); }
  // The same, the slice holding at most min(max_bytes, the slicer's) bytes.
  bool Next(std::vector<adxl_plugin_iov_t> *slice, uint64_t max_bytes);

 private:
  const std::vector<adxl_plugin_iov_t> &iov_;
  const size_t max_ops_;
  const uint64_t max_bytes_;
  size_t op_ = 0;     // the operation the next slice starts in
  uint64_t off_ = 0;  // bytes of iov_[op_] already handed out
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_SYNC_SLICER_H_
