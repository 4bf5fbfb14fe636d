// A real partition between two hosts: engines in two network namespaces
// joined by one rate-limited veth pair (netns_fixture.h), verified
// transfers over the RDMA lane, then `ip link set down` on the only path
// while a transfer is on the wire.  Unlike a stopped peer (SIGSTOP) the
// sockets stay open and nothing is refused: packets simply vanish.
//  - every transfer ends in an error within its deadline, none hangs;
//  - once the path is back, a new Connect and verified transfers work;
//  - nothing of a failed WRITE lands in the target afterwards, not even when
//    the path returns and TCP retransmits what the initiator's kernel still
//    held (docs/contract.md §6.4): force-closing the UCP endpoint closes
//    its socket, and the kernel keeps sending the queued data; the target's
//    pending receive completes seconds after the initiator reported TIMEOUT,
//    and must drop it (the WRITE carried its deadline; README, "Multi-path
//    links").
#include <chrono>
#include <string>
#include <thread>

#include "mp_fixture.h"
#include "netns_fixture.h"

using namespace adxl_test;

namespace {

constexpr size_t kLen = 8 << 20;       // 8 MiB: ~170 ms on the wire at 400 Mbit/s
constexpr int32_t kDeadlineMs = 2000;  // per transfer
// An error other than TIMEOUT (the link failed) may come a little after the
// deadline as well: the same allowance as for TIMEOUT (timeout_checks.h).
constexpr double kLateMs = kTimeoutLateMs + kSchedulingSlackMs;
// How long the path stays up before a straggler check gives up: TCP backs
// its retransmissions off exponentially (0.2 s doubling), so after a
// partition of ~5 s the next one comes within ~7 s of the path's return.
constexpr int kRetransmitWaitMs = 8000;

class NetnsPartitionTest : public NetnsFixture {
 protected:
  std::string RateLimit() const override { return "400mbit"; }

  // Runs `cmd` on peer `p`; *ms gets how long it took.
  static std::string Timed(PeerProcess &p, const std::string &cmd, double *ms) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string answer = p.Command(cmd, 60000);
    *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return answer;
  }
  // A transfer that must fail: an error status, within its deadline.
  static void ExpectFailsInTime(PeerProcess &p, const std::string &cmd) {
    double ms = 0;
    const std::string answer = Timed(p, cmd, &ms);
    ExpectFailedInTime(answer, ms, cmd);
  }
  static void ExpectFailedInTime(const std::string &answer, double ms, const std::string &cmd) {
    EXPECT_NE(answer, "ok") << cmd << ": succeeded across a partition";
    EXPECT_NE(answer, "") << cmd << ": no answer (the peer hung or died)";
    if (answer == "status " + std::to_string(adxl::TIMEOUT)) {
      EXPECT_TRUE(TimeoutCameOnTime(ms, kDeadlineMs)) << cmd;
    } else {
      EXPECT_LE(ms, kDeadlineMs + ScaledMs(kLateMs)) << cmd << " -> " << answer << " came after its deadline";
    }
  }
  // B writes its buffer `buf` (pattern `seed`) to A's buffer `buf`, then
  // reads A's (pattern seed+1) back; both verified by hash.
  void VerifiedRoundTrip(int buf, int seed) {
    ASSERT_EQ(b_->Command(Fill(buf, seed)), "ok");
    ASSERT_EQ(b_->Command(Op("write", buf)), "ok");
    EXPECT_EQ(a_->Ok(Hash(buf)).at(0), b_->Ok(Hash(buf)).at(0)) << "WRITE " << seed << " arrived corrupted";
    ASSERT_EQ(a_->Command(Fill(buf, seed + 1)), "ok");
    ASSERT_EQ(b_->Command(Op("read", buf)), "ok");
    EXPECT_EQ(b_->Ok(Hash(buf)).at(0), a_->Ok(Hash(buf)).at(0)) << "READ " << seed << " arrived corrupted";
  }
  std::string Op(const char *what, int buf) const {
    return std::string(what) + " " + a_name_ + " " + std::to_string(kDeadlineMs) + " " + std::to_string(buf) +
           " 0 " + remotes_[buf] + " " + std::to_string(kLen);
  }
  static std::string Fill(int buf, int seed) { return "fill " + std::to_string(buf) + " " + std::to_string(seed); }
  static std::string Hash(int buf) { return "hash " + std::to_string(buf) + " 0 " + std::to_string(kLen); }

  // A (target, two registered buffers) and B (initiator, two buffers),
  // linked over the one path, verified round trips on buffer 0; then the
  // path goes down while a WRITE of buffer 0 is on the wire, and every
  // transfer fails in time.  Leaves the path down; *a_at_failure gets the
  // hash of A's buffer 0 after the failures (B's buffer 0 then holds
  // another pattern, so nothing that lands later can match it).
  void PartitionDuringWrites(std::string *a_at_failure) {
    ASSERT_TRUE(made_);
    a_name_ = paths_[0].ip_a + ":26311";
    a_ = PeerIn(ns_a_);
    b_ = PeerIn(ns_b_);
    ASSERT_EQ(a_->Command("init " + a_name_), "ok");
    ASSERT_EQ(b_->Command("init " + paths_[0].ip_b), "ok");
    for (int buf = 0; buf < 2; ++buf) {
      auto words = a_->Ok("alloc " + std::to_string(kLen));
      ASSERT_EQ(words.size(), 2u);
      remotes_[buf] = words[1];
      ASSERT_EQ(a_->Ok("reg " + std::to_string(buf)).size(), 1u);
      ASSERT_EQ(b_->Ok("alloc " + std::to_string(kLen)).size(), 2u);
      ASSERT_EQ(b_->Ok("reg " + std::to_string(buf)).size(), 1u);
    }
    ASSERT_EQ(b_->Command("connect " + a_name_ + " 5000"), "ok");
    ASSERT_EQ(b_->Ok("lane " + a_name_).at(0), "rdma");
    for (int seed = 10; seed < 13; ++seed) VerifiedRoundTrip(0, seed * 2);

    // The path goes down while a WRITE is on the wire.  Under load the cut
    // (two `ip` processes) can come after the transfer ended: that WRITE
    // succeeded legitimately (then its bytes must all be in A), and the
    // attempt is repeated with the cut started at once.
    bool cut_mid_write = false;
    for (int attempt = 0; attempt < 3 && !cut_mid_write; ++attempt) {
      ASSERT_EQ(b_->Command(Fill(0, 77 + attempt)), "ok");
      std::thread cut([this, attempt] {
        std::this_thread::sleep_for(std::chrono::milliseconds(attempt == 0 ? 60 : 0));
        SetPath(0, false);
      });
      double ms = 0;
      const std::string answer = Timed(*b_, Op("write", 0), &ms);
      cut.join();
      if (answer == "ok") {
        ASSERT_EQ(a_->Ok(Hash(0)).at(0), b_->Ok(Hash(0)).at(0)) << "a WRITE succeeded without its bytes in the target";
        ASSERT_TRUE(SetPath(0, true));
        continue;
      }
      cut_mid_write = true;
      ExpectFailedInTime(answer, ms, Op("write", 0));
    }
    ASSERT_TRUE(cut_mid_write) << "three WRITEs each ended before the path went down";
    ASSERT_EQ(b_->Command(Fill(0, 90)), "ok");
    *a_at_failure = a_->Ok(Hash(0)).at(0);
    // Every further transfer, either direction, fails within its deadline.
    ExpectFailsInTime(*b_, Op("write", 0));
    ExpectFailsInTime(*b_, Op("read", 0));
  }

  std::string remotes_[2];  // A's buffers (a_, b_, a_name_: NetnsFixture's)
};

TEST_F(NetnsPartitionTest, LinkDownFailsEveryTransferInTimeAndLinkUpConnectsAgain) {
  std::string a_at_failure;
  PartitionDuringWrites(&a_at_failure);
  if (HasFatalFailure() || IsSkipped()) return;
  ASSERT_TRUE(SetPath(0, true));
  // A new Connect (the old link failed) and verified data, on buffer 1:
  // stragglers of the failed WRITEs may still reach buffer 0's target (the
  // test below checks that none of them lands).
  b_->Command("disconnect " + a_name_ + " 2000");
  ASSERT_EQ(b_->Command("connect " + a_name_ + " 5000"), "ok");
  for (int seed = 40; seed < 43; ++seed) VerifiedRoundTrip(1, seed * 2);
}

TEST_F(NetnsPartitionTest, NothingOfAFailedWriteLandsWhenThePathReturns) {
  std::string a_at_failure;
  PartitionDuringWrites(&a_at_failure);
  if (HasFatalFailure() || IsSkipped()) return;
  ASSERT_TRUE(SetPath(0, true));
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRetransmitWaitMs);
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(a_->Ok(Hash(0)).at(0), a_at_failure) << "bytes of a failed WRITE landed after it returned";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace
