// Two hosts joined by two rate-limited veth pairs (netns_fixture.h), UCP
// allowed both devices (UCX_NET_DEVICES listing both, UCX_MAX_EAGER_RAILS=2,
// so that one UCP endpoint has a lane on each), and a stream of verified
// transfers over the RDMA lane while the second path (not the one the
// control channel uses) goes down and comes back.  What failover must give:
//  - every transfer either succeeds with the right bytes or ends in an error
//    within its deadline, none hangs;
//  - after an error, Disconnect + Connect gives a working link again (over
//    the surviving path), and once the path is back every transfer succeeds.
// It prints how many transfers failed, for the record.
//
// Disabled: it FAILS on this engine and UCX 1.13 (README, "Multi-path
// links"): with the second path down every transfer fails at once, and
// every Connect fails too ("ucp_ep_create: Destination is unreachable"),
// because a UCP endpoint needs all of its lanes and UCP wires one up on the
// dead device.  Enable it with per-path endpoints and failover.
#include <chrono>
#include <cstdio>
#include <string>

#include "mp_fixture.h"
#include "netns_fixture.h"

using namespace adxl_test;

namespace {

constexpr size_t kLen = 4 << 20;
constexpr int32_t kDeadlineMs = 2000;
constexpr int32_t kConnectMs = 5000;
constexpr double kLateMs = kTimeoutLateMs + kSchedulingSlackMs;

class NetnsTwoPathsTest : public NetnsFixture {
 protected:
  int Paths() const override { return 2; }
  std::string RateLimit() const override { return "2gbit"; }

  std::vector<std::string> UcxEnv(bool side_a) const {
    const std::string devs = side_a ? paths_[0].veth_a + "," + paths_[1].veth_a
                                    : paths_[0].veth_b + "," + paths_[1].veth_b;
    return {"UCX_NET_DEVICES=" + devs, "UCX_MAX_EAGER_RAILS=2"};
  }
  std::string Op(const char *what) const {
    return std::string(what) + " " + a_name_ + " " + std::to_string(kDeadlineMs) + " 0 0 " + remote_ + " " +
           std::to_string(kLen);
  }
  static std::string Hash() { return "hash 0 0 " + std::to_string(kLen); }

  // One verified transfer (WRITE when `seed` is even, else READ); false
  // when it ended in an error (checked to have come in time).
  bool Transfer(int seed) {
    const bool write = seed % 2 == 0;
    PeerProcess &source = write ? *b_ : *a_;
    EXPECT_EQ(source.Command("fill 0 " + std::to_string(seed)), "ok");
    const auto t0 = std::chrono::steady_clock::now();
    const std::string answer = b_->Command(Op(write ? "write" : "read"), 60000);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(answer, "") << "transfer " << seed << ": no answer (the peer hung or died)";
    if (answer == "ok") {
      EXPECT_EQ(a_->Ok(Hash()).at(0), b_->Ok(Hash()).at(0)) << "transfer " << seed << " arrived corrupted";
      return true;
    }
    if (answer == "status " + std::to_string(adxl::TIMEOUT)) {
      EXPECT_TRUE(TimeoutCameOnTime(ms, kDeadlineMs)) << "transfer " << seed;
    } else {
      EXPECT_LE(ms, kDeadlineMs + kLateMs) << "transfer " << seed << " -> " << answer << " came after its deadline";
    }
    return false;
  }
  // Disconnect + Connect after a failed transfer; the control path is up.
  void Reconnect() {
    b_->Command("disconnect " + a_name_ + " 2000");
    EXPECT_EQ(b_->Command("connect " + a_name_ + " " + std::to_string(kConnectMs), kConnectMs + 5000), "ok");
  }

  std::unique_ptr<PeerProcess> a_, b_;
  std::string a_name_, remote_;
};

TEST_F(NetnsTwoPathsTest, DISABLED_SecondPathDownAndUpDuringAStreamLosesNoBytesAndRecovers) {
  ASSERT_TRUE(made_);
  a_name_ = paths_[0].ip_a + ":26312";
  a_ = PeerIn(ns_a_, UcxEnv(true));
  b_ = PeerIn(ns_b_, UcxEnv(false));
  ASSERT_EQ(a_->Command("init " + a_name_), "ok");
  auto buf = a_->Ok("alloc " + std::to_string(kLen));
  ASSERT_EQ(buf.size(), 2u);
  remote_ = buf[1];
  ASSERT_EQ(a_->Ok("reg 0").size(), 1u);
  ASSERT_EQ(b_->Command("init " + paths_[0].ip_b), "ok");
  ASSERT_EQ(b_->Ok("alloc " + std::to_string(kLen)).size(), 2u);
  ASSERT_EQ(b_->Ok("reg 0").size(), 1u);
  ASSERT_EQ(b_->Command("connect " + a_name_ + " " + std::to_string(kConnectMs)), "ok");
  auto lane = b_->Ok("lane " + a_name_);
  ASSERT_EQ(lane.size(), 2u);
  printf("two paths: the link runs over %s\n", lane[1].c_str());

  int failed_before = 0, failed_down = 0, failed_after = 0;
  for (int seed = 0; seed < 6; ++seed) failed_before += Transfer(seed) ? 0 : 1;
  EXPECT_EQ(failed_before, 0) << "transfers failed with both paths up";
  ASSERT_TRUE(SetPath(1, false));
  for (int seed = 6; seed < 12; ++seed) {
    if (!Transfer(seed)) {
      ++failed_down;
      Reconnect();
    }
  }
  ASSERT_TRUE(SetPath(1, true));
  // The first transfer after the path's return may still meet the link a
  // failure left behind: one reconnect is allowed, then all must succeed.
  if (!Transfer(12)) Reconnect();
  for (int seed = 13; seed < 19; ++seed) failed_after += Transfer(seed) ? 0 : 1;
  EXPECT_EQ(failed_after, 0) << "transfers failed after the path came back";
  printf("two paths: failed transfers with both up %d, with path 2 down %d of 6, after its return %d\n",
         failed_before, failed_down, failed_after);
}

}  // namespace
