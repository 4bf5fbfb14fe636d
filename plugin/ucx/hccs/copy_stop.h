// CopyStop: what ends a same-node copy before its last byte.  The HCCS
// lane's movers (cma_mover.h, mapped_mover.h) move a whole batch inside
// post, whatever its size (a TransferAsync posts its plan at once), so the
// copy itself must notice that it is no longer wanted:
//  - its endpoint was cancelled (ep_cancel, from the engine's
//    Endpoint::Cancel on another thread: a TIMEOUT fence, Disconnect,
//    Finalize), which then waits for this post to return and must not find
//    bytes of it landing afterwards;
//  - post_by's deadline passed (no byte may land after it).
// The copy goes in pieces of at most kPieceBytes (one cma system call, one
// memcpy of the mapping) and checks before each: one relaxed atomic load
// and, with a deadline, one vDSO clock read per piece, no lock.
//
// Thread-safety: read-only once the post made it; the cma copy threads
// read it through the batch they help with (it lives on the posting
// thread's stack until every part of the batch has ended).
#ifndef ADXL_PLUGIN_UCX_HCCS_COPY_STOP_H_
#define ADXL_PLUGIN_UCX_HCCS_COPY_STOP_H_

#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "core/fault_injection.h"

struct CopyStop {
  // Bytes copied between two checks at most.  1 MiB: a fraction of a
  // millisecond of one copy thread (cma runs at 3-5 GB/s a thread), so a
  // cancel is noticed within about that; and the system call or memcpy it
  // adds per MiB costs a few microseconds, under 1 % of the copy (measured
  // with adxl-bench --lane hccs, 256 KiB and 2 MiB blocks: within noise).
  static constexpr size_t kPieceBytes = 1u << 20;

  const std::atomic<bool> *cancelled = nullptr;  // the endpoint's (ep_cancel); null: never
  uint64_t deadline_ns = 0;                      // post_by's, CLOCK_MONOTONIC; 0: none
  // "test_hccs_piece_delay_us" (fault_injection.h; 0 in the installed
  // plugin): a wait before each piece, a copy a loaded machine slows down,
  // so that a test finds a post in the middle of its copy.
  unsigned piece_delay_us = 0;

  // Before each piece: 0 to copy it, else ECANCELED (the endpoint was
  // cancelled) or ETIMEDOUT (the deadline passed): the copy stops there.
  int Check() const {
    if (piece_delay_us != 0) FaultDelay(piece_delay_us);
    // Relaxed: a flag that publishes nothing; a piece more or less before
    // it is seen is what "at its next chunk" allows.
    if (cancelled != nullptr && cancelled->load(std::memory_order_relaxed)) return ECANCELED;
    if (deadline_ns != 0) {
      timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      const uint64_t now = static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
      if (now >= deadline_ns) return ETIMEDOUT;
    }
    return 0;
  }
};

#endif  // ADXL_PLUGIN_UCX_HCCS_COPY_STOP_H_
