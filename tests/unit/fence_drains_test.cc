// FenceDrains (src/core/fence_drains.h): the target's answer to fences.  The
// drain is a test double here (a transport whose requests end when the test
// says); the worker is the engine's real BackgroundWorker.
#include "core/fence_drains.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "adxl/adxl_types.h"

namespace adxl {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What the answers were, in the order they came.
struct Answers {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint32_t> statuses;
  FenceDrains::AnswerFn Fn() {
    return [this](uint32_t s) {
      std::lock_guard<std::mutex> l(mu);
      statuses.push_back(s);
      cv.notify_all();
    };
  }
  bool WaitFor(size_t n, milliseconds timeout) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, timeout, [&] { return statuses.size() >= n; });
  }
};

// A peer floods fences while a request of its own never ends here (each
// drain waits out its deadline).  The fences that wait for one round share
// its drains: a drain runs until the earliest deadline left, then every
// fence whose deadline has passed is answered, so the drains follow the
// spread of the fences' arrival in time (a few, where a stalled test
// thread splits the flood into bursts), not their number: one queued task
// and a few drains, where one round per fence made 2000 of each.  Work
// posted behind the flood runs soon after it.
TEST(FenceDrains, AFloodOfFencesIsAnsweredInAFewDrainsNotOneEach) {
  BackgroundWorker worker;
  worker.Start();
  std::atomic<int> drains{0};
  FenceDrains fences(
      [&](Clock::time_point deadline) {
        ++drains;
        std::this_thread::sleep_until(deadline);
        return false;
      },
      &worker, milliseconds(1000));
  // The worker is held while the flood arrives, as a worker busy with a
  // drain would be, so that every fence waits for the same round.
  std::mutex hold;
  std::unique_lock<std::mutex> held(hold);
  ASSERT_TRUE(worker.Post([&] { std::lock_guard<std::mutex> l(hold); }));
  Answers answers;
  // Ten connections, each under its bound of fences per round.
  constexpr size_t kFences = 2000, kSources = 10;
  int sources[kSources];
  const Clock::time_point flood = Clock::now();
  for (size_t i = 0; i < kFences; ++i) ASSERT_TRUE(fences.Add(&sources[i % kSources], "peer", answers.Fn())) << i;
  // Meaningful only if the flood came within one budget (a stall of the
  // test thread longer than that would spread the deadlines).
  ASSERT_LT(Clock::now() - flood, milliseconds(1000)) << "the flood took longer than a fence's budget";
  std::atomic<bool> behind{false};
  ASSERT_TRUE(worker.Post([&] { behind = true; }));
  const Clock::time_point posted = Clock::now();
  held.unlock();
  ASSERT_TRUE(answers.WaitFor(kFences, milliseconds(10000)))
      << answers.statuses.size() << " of " << kFences << " fences answered after 10 s (" << drains.load()
      << " drains)";
  for (uint32_t s : answers.statuses) EXPECT_EQ(s, TIMEOUT);
  EXPECT_LT(drains.load(), static_cast<int>(kFences / 20)) << "drains follow the fences' number";
  while (!behind && Clock::now() - posted < milliseconds(10000)) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_TRUE(behind.load()) << "the worker's next task waited behind the fences";
  worker.Stop();
}

// Fences that wait for one round keep their own deadlines: the first times
// out, and the second, whose deadline is later, sees the requests end.
TEST(FenceDrains, EachFenceOfARoundIsAnsweredByItsOwnDeadline) {
  BackgroundWorker worker;
  worker.Start();
  constexpr milliseconds kBudget(300);
  std::atomic<int64_t> end_ns{INT64_MAX};  // when the peers' requests end
  // Decided by the deadline asked for, not by when the drain wakes: a late
  // wake-up on a busy machine changes nothing.
  FenceDrains fences(
      [&](Clock::time_point deadline) {
        const Clock::time_point end{Clock::duration(end_ns.load())};
        std::this_thread::sleep_until(std::min(deadline, end));
        return deadline >= end;
      },
      &worker, kBudget);
  // Hold the worker so that both fences wait for the same round.
  std::mutex hold;
  std::unique_lock<std::mutex> held(hold);
  ASSERT_TRUE(worker.Post([&] { std::lock_guard<std::mutex> l(hold); }));
  Answers answers;
  int a = 0, b = 0;
  const Clock::time_point first = Clock::now();
  ASSERT_TRUE(fences.Add(&a, "a", answers.Fn()));
  std::this_thread::sleep_for(milliseconds(200));
  const Clock::time_point second = Clock::now();
  ASSERT_TRUE(fences.Add(&b, "b", answers.Fn()));
  // The requests end between the first fence's deadline and the second's.
  end_ns = (first + kBudget + (second - first) / 2).time_since_epoch().count();
  held.unlock();
  ASSERT_TRUE(answers.WaitFor(2, milliseconds(5000)));
  EXPECT_EQ(answers.statuses[0], TIMEOUT);
  EXPECT_EQ(answers.statuses[1], SUCCESS);
  worker.Stop();
}

TEST(FenceDrains, AfterTheWorkerStoppedAFenceIsRefused) {
  BackgroundWorker worker;
  worker.Start();
  worker.Stop();
  FenceDrains fences([](Clock::time_point) { return true; }, &worker, milliseconds(30));
  Answers answers;
  int source = 0;
  EXPECT_FALSE(fences.Add(&source, "peer", answers.Fn()));
  EXPECT_TRUE(answers.statuses.empty());
}

// One connection past its bound of fences waiting for a round is refused
// (the engine cuts it off); others still get in, and every fence taken is
// answered.
TEST(FenceDrains, AConnectionPastItsBoundIsRefusedAndOthersAreNot) {
  BackgroundWorker worker;
  worker.Start();
  std::mutex hold;  // holds the worker: every fence waits for one round
  std::unique_lock<std::mutex> held(hold);
  ASSERT_TRUE(worker.Post([&] { std::lock_guard<std::mutex> l(hold); }));
  FenceDrains fences([](Clock::time_point) { return true; }, &worker, milliseconds(30));
  Answers answers;
  int flooder = 0, other = 0;
  for (size_t i = 0; i < FenceDrains::kMaxPerPeer; ++i) ASSERT_TRUE(fences.Add(&flooder, "flooder", answers.Fn()));
  EXPECT_FALSE(fences.Add(&flooder, "flooder", answers.Fn()));
  EXPECT_TRUE(fences.Add(&other, "other", answers.Fn()));
  held.unlock();
  ASSERT_TRUE(answers.WaitFor(FenceDrains::kMaxPerPeer + 1, milliseconds(5000)));
  for (uint32_t s : answers.statuses) EXPECT_EQ(s, SUCCESS);
  // The next round takes the flooder's fences again.
  EXPECT_TRUE(fences.Add(&flooder, "flooder", answers.Fn()));
  EXPECT_TRUE(answers.WaitFor(FenceDrains::kMaxPerPeer + 2, milliseconds(5000)));
  worker.Stop();
}

}  // namespace
}  // namespace adxl
