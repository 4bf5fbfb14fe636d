// CallGate (src/core/call_gate.h): passes while open, empty ones while
// closed, and WaitEmpty that ends exactly when the last pass is dropped.
#include "core/call_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

namespace adxl {
namespace {

TEST(CallGate, ClosedUntilOpenedAndAfterClose) {
  CallGate gate;
  EXPECT_FALSE(gate.Enter()) << "a gate starts closed (the engine is not up)";
  gate.Open();
  {
    CallGate::Pass p = gate.Enter();
    EXPECT_TRUE(p);
  }
  EXPECT_TRUE(gate.Close());
  EXPECT_FALSE(gate.Close()) << "a second Close reports the gate was closed";
  EXPECT_FALSE(gate.Enter());
  gate.WaitEmpty();  // nothing out: returns at once
}

TEST(CallGate, WaitEmptyEndsWhenTheLastPassIsDropped) {
  CallGate gate;
  gate.Open();
  std::vector<CallGate::Pass> out;
  for (int i = 0; i < 3; ++i) out.push_back(gate.Enter());
  ASSERT_TRUE(gate.Close());
  EXPECT_FALSE(gate.Enter()) << "calls that start after Close fail; they do not queue";
  std::atomic<bool> waited{false};
  std::thread finalizer([&] {
    gate.WaitEmpty();
    waited.store(true);
  });
  // The passes out are the calls in flight: dropping all but one keeps
  // WaitEmpty waiting.
  out.pop_back();
  out.pop_back();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(waited.load()) << "WaitEmpty returned with a call still in flight";
  CallGate::Pass moved = std::move(out.back());  // a moved pass is still the one call
  out.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(waited.load()) << "moving a pass let its call out";
  EXPECT_TRUE(moved);
  moved = CallGate::Pass();  // assigning over it drops it
  finalizer.join();
  EXPECT_TRUE(waited.load());
}

TEST(CallGate, ReopenedAfterAFinalize) {
  CallGate gate;
  gate.Open();
  ASSERT_TRUE(gate.Close());
  gate.WaitEmpty();
  gate.Open();  // Initialize again
  EXPECT_TRUE(gate.Enter());
}

}  // namespace
}  // namespace adxl
