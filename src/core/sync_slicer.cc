#include "core/sync_slicer.h"

#include <algorithm>

namespace adxl {

SyncSlicer::SyncSlicer(const std::vector<adxl_plugin_iov_t> &iov, size_t max_ops, uint64_t max_bytes)
    : iov_(iov), max_ops_(max_ops), max_bytes_(max_bytes) {}

uint64_t SyncSlicer::CapFor(std::chrono::nanoseconds left) {
  const double bytes = static_cast<double>(left.count()) * (static_cast<double>(kPessimisticBytesPerSecond) / 1e9);
  if (bytes <= static_cast<double>(kMinCapBytes)) return kMinCapBytes;
  if (bytes >= static_cast<double>(kDefaultMaxBytes)) return kDefaultMaxBytes;
  return static_cast<uint64_t>(bytes);
}

bool SyncSlicer::Next(std::vector<adxl_plugin_iov_t> *slice, uint64_t max_bytes) {
  max_bytes = std::min(max_bytes, max_bytes_);
  slice->clear();
  // Zero-length operations carry nothing: skipped.
  while (op_ < iov_.size() && iov_[op_].length == 0) ++op_;
  uint64_t bytes = 0;
  while (op_ < iov_.size() && slice->size() < max_ops_ && bytes < max_bytes) {
    adxl_plugin_iov_t piece = iov_[op_];
    piece.local_addr += off_;
    piece.remote_addr += off_;
    piece.length = std::min<uint64_t>(piece.length - off_, max_bytes - bytes);
    slice->push_back(piece);
    bytes += piece.length;
    off_ += piece.length;
    if (off_ == iov_[op_].length) {
      ++op_;
      off_ = 0;
      while (op_ < iov_.size() && iov_[op_].length == 0) ++op_;
    }
  }
  return !slice->empty();
}

}  // namespace adxl
