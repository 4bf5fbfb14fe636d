// Placement (am_placement.h): where each received fragment goes.
#include "am/am_placement.h"

#include <algorithm>
#include <cstring>
#include <utility>

void Placement::Start(std::vector<ucp_dt_iov_t> iov, Gate gate, void *gate_arg) {
  iov_.swap(iov);
  total_ = 0;
  for (const ucp_dt_iov_t &v : iov_) total_ += v.length;
  gate_ = gate;
  gate_arg_ = gate_arg;
  refused_ = false;
  at_ = 0;
  at_offset_ = 0;
}

void Placement::Unpack(size_t offset, const void *src, size_t len) {
  if (refused_) return;
  if (gate_ != nullptr && !gate_(gate_arg_)) {
    refused_ = true;
    return;
  }
  // UCP never hands more than the receive's length; clip anyway.
  if (offset >= total_) return;
  len = std::min(len, total_ - offset);
  if (offset < at_offset_) {  // out of order: search from the start
    at_ = 0;
    at_offset_ = 0;
  }
  while (at_ < iov_.size() && at_offset_ + iov_[at_].length <= offset) at_offset_ += iov_[at_++].length;
  const char *from = static_cast<const char *>(src);
  size_t i = at_, start = at_offset_;
  while (len > 0 && i < iov_.size()) {
    const size_t skip = offset - start;  // nonzero only in the first entry
    const size_t n = std::min(len, iov_[i].length - skip);
    memcpy(static_cast<char *>(iov_[i].buffer) + skip, from, n);
    from += n;
    offset += n;
    len -= n;
    start += iov_[i].length;
    ++i;
  }
}
