// Link (src/core/link.h): the state of this engine's connection to one peer.
// No transport: the link's endpoint stays null (Fail and Shutdown cancel it
// only when there is one), so these tests see the state machine alone.
#include "core/link.h"
#include "time_scale.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace adxl {
namespace {

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

TEST(LinkTest, StartsConnecting) {
  Link link("127.0.0.1:5000");
  EXPECT_EQ(link.remote(), "127.0.0.1:5000");
  EXPECT_EQ(link.state(), LinkState::kConnecting);
  EXPECT_FALSE(link.disconnected());
  EXPECT_EQ(link.endpoint, nullptr);
}

TEST(LinkTest, ConnectingThenConnectedThenFailed) {
  Link link("peer");
  EXPECT_TRUE(link.SetConnected());
  EXPECT_EQ(link.state(), LinkState::kConnected);
  link.Fail("heartbeat lost");
  EXPECT_EQ(link.state(), LinkState::kFailed);
  EXPECT_FALSE(link.disconnected()) << "a failed link is not a disconnected one";
}

// A link that failed before its Connect published the outcome (a Bye or an
// EOF read by the loop as soon as it had the connection) stays failed.
TEST(LinkTest, AFailureBeforeConnectedIsNotOverwritten) {
  Link link("peer");
  link.Fail("the peer said Bye during the set-up");
  EXPECT_FALSE(link.SetConnected());
  EXPECT_EQ(link.state(), LinkState::kFailed);
}

TEST(LinkTest, AConnectThatFailsSettlesAsFailed) {
  Link link("peer");
  link.Fail("handshake refused");
  EXPECT_EQ(link.state(), LinkState::kFailed);
  EXPECT_TRUE(link.WaitSettled(Clock::now()));
}

TEST(LinkTest, FailIsIdempotent) {
  Link link("peer");
  link.SetConnected();
  link.Fail("first");
  link.Fail("second");
  link.Fail("third");
  EXPECT_EQ(link.state(), LinkState::kFailed);
  EXPECT_FALSE(link.disconnected());
}

TEST(LinkTest, ShutdownMarksTheLinkDisconnectedAndFailed) {
  Link link("peer");
  link.SetConnected();
  link.Shutdown();
  EXPECT_TRUE(link.disconnected());
  EXPECT_EQ(link.state(), LinkState::kFailed);
  // Failing it afterwards changes nothing.
  link.Fail("late failure");
  EXPECT_TRUE(link.disconnected());
  EXPECT_EQ(link.state(), LinkState::kFailed);
}

TEST(LinkTest, ShutdownWhileConnectingSettlesTheLink) {
  Link link("peer");
  link.Shutdown();
  EXPECT_TRUE(link.disconnected());
  EXPECT_TRUE(link.WaitSettled(Clock::now()));
}

TEST(LinkTest, WaitSettledReturnsAtOnceForASettledLink) {
  Link link("peer");
  link.SetConnected();
  const auto t0 = Clock::now();
  EXPECT_TRUE(link.WaitSettled(t0 + std::chrono::seconds(10)));
  EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(1000));
}

TEST(LinkTest, WaitSettledTimesOutWhileConnecting) {
  Link link("peer");
  const auto t0 = Clock::now();
  EXPECT_FALSE(link.WaitSettled(t0 + std::chrono::milliseconds(50)));
  EXPECT_GE(MsSince(t0), 49.0) << "returned before the deadline";
  EXPECT_EQ(link.state(), LinkState::kConnecting);
}

// A caller waiting on a connecting link wakes when another thread settles
// it, long before its deadline.
TEST(LinkTest, WaitSettledWakesWhenAnotherThreadSettles) {
  for (const bool connect : {true, false}) {
    Link link("peer");
    std::thread settler([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (connect) {
        link.SetConnected();
      } else {
        link.Fail("connect failed");
      }
    });
    const auto t0 = Clock::now();
    EXPECT_TRUE(link.WaitSettled(t0 + std::chrono::seconds(10)));
    EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(5000)) << "woke at the deadline, not when settled";
    settler.join();
    EXPECT_EQ(link.state(), connect ? LinkState::kConnected : LinkState::kFailed);
  }
}

}  // namespace
}  // namespace adxl
