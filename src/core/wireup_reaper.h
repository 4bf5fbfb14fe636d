// WireupReaper: transport endpoints whose wire-up was still running when the
// Connect that made them gave up (its deadline passed, or a later step
// failed).
//
// Why: UCX 1.13 aborts the process (ucp_request.c:684, "got REP message")
// when an endpoint fails while the wire-up REPLY it owes a peer still waits
// in its send queue.  The peer that answers is the one being connected to;
// the failure comes from the initiator closing its endpoint half way (a
// force-close resets the TCP connection under the peer's pending REPLY).  A
// connect storm, in which many wire-ups take seconds, made that routine:
// every Connect that timed out could kill the engine it connected to.  So
// an initiator never closes an endpoint in mid wire-up: the endpoint and
// its wire-up flush are adopted here and closed once the flush has ended
// (the peer answered, or UCP itself declared the peer failed), or after
// kMaxAge when the peer never answers (stopped).  Closing a wired-up
// endpoint leaves the peer nothing pending.
//
// Thread-safety: any thread.  mu_ guards entries_ (count_ mirrors its size
// for lock-free polling) and is a leaf: it is never held across a call into
// the transport (testing or closing an endpoint, which take UCP's worker
// lock inside the plugin and may progress UCP), which Reap makes outside
// it.  Lock order: mu_ alone; UCP's worker lock is never taken under it.  Reap may wait (an endpoint close) and runs
// on the background worker, never on the control thread.
#ifndef ADXL_SRC_CORE_WIREUP_REAPER_H_
#define ADXL_SRC_CORE_WIREUP_REAPER_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "common/thread_annotations.h"
#include "transport/transport.h"

namespace adxl {

class WireupReaper {
 public:
  static constexpr std::chrono::seconds kMaxAge{60};

  // Takes `ep` and its wire-up `flush` (null: nothing in flight, released
  // at once by the caller instead).
  void Adopt(std::shared_ptr<Endpoint> ep, std::unique_ptr<Batch> flush) ADXL_EXCLUDES(mu_);
  // Releases the endpoints whose wire-up ended (or that are older than
  // kMaxAge; all of them when `all`).
  void Reap(bool all = false) ADXL_EXCLUDES(mu_);
  size_t pending() const { return count_.load(); }
  // Finalize: reaps until nothing is pending or `wait` passed, then
  // releases the rest.
  void Drain(std::chrono::milliseconds wait) ADXL_EXCLUDES(mu_);

 private:
  struct Entry {
    std::shared_ptr<Endpoint> ep;
    std::unique_ptr<Batch> flush;
    std::chrono::steady_clock::time_point since;
  };
  Mutex mu_;
  std::vector<Entry> entries_ ADXL_GUARDED_BY(mu_);
  std::atomic<size_t> count_{0};
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_WIREUP_REAPER_H_
