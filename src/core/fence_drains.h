// FenceDrains: the target's side of a fence (wire::Fence, Link::
// FenceAfterTimeout): drains this engine's transport of what peers put in
// flight towards it, then answers each fence with whether everything ended.
//
// The drain waits (up to Link::kFenceDrain), so it runs on the engine's
// BackgroundWorker, never on the control thread.  It is one drain of the
// whole transport whoever asked, so fences that arrive while a drain waits
// to start join it: however many fences peers send (several initiators
// timing out together, or a peer flooding them), at most one drain task is
// queued, and the worker's other tasks (link failures, Bye answers) never
// wait behind a queue of them.  A round holds at most kMaxPerPeer fences of
// one connection (an initiator fences once per transfer that timed out, so
// more is a flood): past that Add refuses, and the caller cuts it off, so the
// fences waiting stay bounded while a round answers the last ones.  Each
// fence keeps its own deadline, counted
// from its arrival: a round drains until the earliest deadline of those
// waiting, answers TIMEOUT to the fences whose deadline has passed, and
// goes on for the rest.
//
// Thread-safety: Add from any thread (the control thread); the drain runs
// on the worker.  mu_ guards the waiting fences and whether a round is
// queued; held across neither a drain nor an answer.  Lock order:
// mu_ -> BackgroundWorker::mu_ (Add posts the round under mu_, so that a
// round is queued exactly when queued_ says so); nothing else nests.
#ifndef ADXL_SRC_CORE_FENCE_DRAINS_H_
#define ADXL_SRC_CORE_FENCE_DRAINS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/background_worker.h"
#include "common/thread_annotations.h"

namespace adxl {

class FenceDrains {
 public:
  using Clock = std::chrono::steady_clock;
  // Drains the transport until `deadline`; true when nothing it waits for is
  // left (Transport::Drain).
  using DrainFn = std::function<bool(Clock::time_point deadline)>;
  // Answers one fence: SUCCESS or TIMEOUT (the Ack's status).
  using AnswerFn = std::function<void(uint32_t status)>;

  // `worker` outlives this object's last round (the engine stops it first).
  FenceDrains(DrainFn drain, BackgroundWorker *worker, std::chrono::milliseconds budget)
      : drain_(std::move(drain)), worker_(worker), budget_(budget) {}

  // Fences of one connection that may wait for one round.
  static constexpr size_t kMaxPerPeer = 256;

  // A fence arrived now on connection `source` (any key that stays unique
  // while its fences wait) from the peer named `peer` (for the log): it is
  // answered within `budget` from now.  False, and not answered, when the
  // worker has stopped (the peer's wait ends on its own) or `source` has
  // kMaxPerPeer fences waiting already (logged; cut it off).
  bool Add(const void *source, const std::string &peer, AnswerFn answer) ADXL_EXCLUDES(mu_);

 private:
  struct Waiting {
    std::string peer;
    AnswerFn answer;
    Clock::time_point deadline;
  };
  // One round (on the worker): the fences waiting when it starts.
  void Round() ADXL_EXCLUDES(mu_);

  const DrainFn drain_;
  BackgroundWorker *const worker_;
  const std::chrono::milliseconds budget_;
  Mutex mu_;
  std::vector<Waiting> waiting_ ADXL_GUARDED_BY(mu_);  // arrival order, so deadline order
  std::map<const void *, size_t> per_peer_ ADXL_GUARDED_BY(mu_);  // waiting_'s fences by source
  bool queued_ ADXL_GUARDED_BY(mu_) = false;            // a Round is posted and has not started
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_FENCE_DRAINS_H_
