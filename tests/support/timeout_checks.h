// Checks of docs/contract.md §6.4 (the TIMEOUT guarantee) shared by the
// conformance suite and the multi-process tests:
//  - TimeoutCameOnTime: a TransferSync that returned TIMEOUT took no longer
//    than its deadline plus 50 ms (plus the scheduling slack of a loaded
//    2-core machine; both scaled by time_scale.h for slow builds), and did
//    not come before its deadline had passed (not scaled, and no slack: a
//    TIMEOUT 0.5 ms early on a 1 ms deadline is refused);
//  - LateBytesProbe: no byte of the timed-out call lands after it returned,
//    checked from the moment it returned (not from whenever the test got
//    round to hashing the target).
#ifndef ADXL_TESTS_SUPPORT_TIMEOUT_CHECKS_H_
#define ADXL_TESTS_SUPPORT_TIMEOUT_CHECKS_H_

#include <gtest/gtest.h>

#include <sys/types.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "adxl/adxl_types.h"
#include "time_scale.h"

namespace adxl_test {

// docs/contract.md §6.4: TIMEOUT within the deadline plus 50 ms.
constexpr double kTimeoutLateMs = 50;
// What a loaded 2-core machine may add to any wake-up (measured: a CPU hog
// beside the test delays a sleeping thread by up to a few tens of ms).
constexpr double kSchedulingSlackMs = 50;
// How long the "nothing lands afterwards" checks wait for stragglers before
// they look again (the wait is the point of those checks, not a guess at
// when something finishes).
constexpr int kStragglerWaitMs = 300;

// How far past its deadline a TIMEOUT may come: the contract's 50 ms plus
// the scheduling slack, scaled (time_scale.h) for slow builds.
inline double TimeoutAllowedLateMs() { return ScaledMs(kTimeoutLateMs + kSchedulingSlackMs); }

// A TransferSync with deadline `deadline_ms` returned TIMEOUT after
// `elapsed_ms` (measured around the call by the caller: the caller's clock
// starts before the engine's, and the engine returns TIMEOUT only once its
// own deadline passed on the same steady clock, so an on-time TIMEOUT never
// measures less than the deadline here, whatever the deadline).
inline ::testing::AssertionResult TimeoutCameOnTime(double elapsed_ms, int32_t deadline_ms) {
  if (elapsed_ms > deadline_ms + TimeoutAllowedLateMs()) {
    return ::testing::AssertionFailure() << "TIMEOUT came late: " << elapsed_ms << " ms for a " << deadline_ms
                                         << " ms deadline (allowed: + " << TimeoutAllowedLateMs()
                                         << " ms: the contract's " << kTimeoutLateMs << " ms and " << kSchedulingSlackMs
                                         << " ms of scheduling slack, times ADXL_TEST_TIME_SCALE " << TimeScale() << ")";
  }
  if (elapsed_ms < deadline_ms) {
    return ::testing::AssertionFailure() << "TIMEOUT came before the deadline: " << elapsed_ms << " ms for a "
                                         << deadline_ms << " ms deadline";
  }
  return ::testing::AssertionSuccess() << elapsed_ms << " ms for a " << deadline_ms << " ms deadline";
}

// Reads / writes `len` bytes at `addr` of process `pid` (on this machine;
// the peers are children of the test, so the kernel allows it, and it works
// while the peer is stopped).  False, with errno, on failure.
inline bool AccessProcessMemory(pid_t pid, uintptr_t addr, void *buf, size_t len, bool write) {
  size_t done = 0;
  while (done < len) {
    iovec mine{static_cast<uint8_t *>(buf) + done, len - done};
    iovec theirs{reinterpret_cast<void *>(addr + done), len - done};
    const ssize_t n =
        write ? process_vm_writev(pid, &mine, 1, &theirs, 1, 0) : process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Construct it right after a TransferSync returned TIMEOUT.  It overwrites
// the call's source range with a poison byte at once (a copy still running
// afterwards carries poison into the target) and snapshots the target
// range.  NothingLanded(), called after the caller waited for stragglers
// (kStragglerWaitMs), expects the target to equal the snapshot and to hold
// no run of poison.  For WRITE the source is `local` in this process and
// the target `remote` in process `peer`; for READ the other way round.
class LateBytesProbe {
 public:
  static constexpr uint8_t kPoison = 0xEE;

  LateBytesProbe(adxl::TransferOp op, pid_t peer, uintptr_t local, uintptr_t remote, size_t len)
      : op_(op), peer_(peer), local_(local), remote_(remote), len_(len) {
    if (op_ == adxl::WRITE) {
      memset(reinterpret_cast<void *>(local_), kPoison, len_);
    } else {
      std::vector<uint8_t> poison(len_, kPoison);
      if (!AccessProcessMemory(peer_, remote_, poison.data(), len_, true)) error_ = "poisoning the peer's memory";
    }
    if (error_.empty() && !ReadTarget(&at_return_)) error_ = "reading the peer's memory";
  }

  ::testing::AssertionResult NothingLanded() const {
    if (!error_.empty()) return ::testing::AssertionFailure() << error_ << " failed: " << strerror(errno);
    const char *where = op_ == adxl::WRITE ? "in the target" : "locally";
    const size_t poisoned = FirstPoisonRun(at_return_);
    if (poisoned != SIZE_MAX) {
      return ::testing::AssertionFailure() << "bytes of the timed-out call landed " << where
                                           << " after it returned (poison at offset " << poisoned << ")";
    }
    std::vector<uint8_t> now;
    if (!ReadTarget(&now)) return ::testing::AssertionFailure() << "reading the peer's memory failed";
    if (now != at_return_) {
      size_t i = 0;
      while (now[i] == at_return_[i]) ++i;
      return ::testing::AssertionFailure() << "bytes of the timed-out call landed " << where
                                           << " after it returned (first change at offset " << i << ")";
    }
    return ::testing::AssertionSuccess();
  }

 private:
  bool ReadTarget(std::vector<uint8_t> *out) const {
    out->resize(len_);
    if (op_ == adxl::READ) {
      memcpy(out->data(), reinterpret_cast<const void *>(local_), len_);
      return true;
    }
    return AccessProcessMemory(peer_, remote_, out->data(), len_, false);
  }

  // Offset of the first 64-byte aligned block that is all poison (what a
  // copy of 127 or more poisoned bytes leaves), SIZE_MAX if none.
  static size_t FirstPoisonRun(const std::vector<uint8_t> &v) {
    static const std::vector<uint8_t> block(64, kPoison);
    for (size_t off = 0; off + 64 <= v.size(); off += 64) {
      if (memcmp(v.data() + off, block.data(), 64) == 0) return off;
    }
    return SIZE_MAX;
  }

  adxl::TransferOp op_;
  pid_t peer_;
  uintptr_t local_, remote_;
  size_t len_;
  std::vector<uint8_t> at_return_;
  std::string error_;
};

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_TIMEOUT_CHECKS_H_
