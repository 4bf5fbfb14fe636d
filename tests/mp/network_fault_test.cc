// Faults on the RDMA lane over TCP (the network lane), with real processes:
// a TransferSync that ends in TIMEOUT, against a stopped target or a live one
// with a deadline too short for the data.  After it:
//  - the call returned within its deadline plus 50 ms (plus the scheduling
//    slack of a loaded 2-core machine), not before the deadline
//    (TimeoutCameOnTime, timeout_checks.h);
//  - no byte of the timed-out call lands afterwards, from the moment it
//    returned (LateBytesProbe); against a stopped target nothing lands at
//    all;
//  - both engines stay usable: the initiator reconnects and moves verified
//    data both ways;
//  - both engines finalize cleanly: the target's Finalize returns and its
//    process exits with status 0 (no UCX assertion about receives left
//    behind by the fenced endpoint), and so does the initiator's.
// The stopped-target cases run again with the initiator on three connections
// per link (ADXL_UCX_RDMA_CONNECTIONS=3): the fence must stop all of them.
// ADXL_FAULT_ROUNDS (default 2) repeats each case inside one test; the stress
// script runs the test itself hundreds of times beside a CPU hog.
#include <sys/wait.h>

#include <csignal>
#include <cstdlib>
#include <thread>

#include "adxl/adxl_ext.h"
#include "mp_fixture.h"

using namespace adxl;
using namespace adxl_test;

namespace {

const std::vector<std::string> kRemoteTcpPeer = {"ADXL_NODE_ID=another-host", "UCX_TLS=tcp"};

int Rounds() {
  const char *e = getenv("ADXL_FAULT_ROUNDS");
  return e != nullptr ? std::max(1, atoi(e)) : 2;
}

struct Case {
  const char *name;
  bool stopped_target;  // else: a live target and a 1 ms deadline
  TransferOp op;
  // ADXL_UCX_RDMA_CONNECTIONS of the initiator: the batch's messages take
  // that many connections in turn, and the fence must close them all.
  const char *connections = "1";
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class NetworkTimeoutTest : public PeerTest, public ::testing::WithParamInterface<Case> {
 protected:
  void SetUp() override {}  // each round starts its own peer

  // The link is on the network lane over active messages with `connections`
  // connections: LinkInfo::transports "am:..." for one, "am*3:..." for three
  // (the plugin's ep_describe counts the connections it made), so a case
  // that fell back to fewer connections cannot pass as the 3-connection one.
  void ExpectConnections(const std::string &connections) {
    ext::LinkInfo info;
    ASSERT_EQ(ext::GetLinkInfo(engine_, peer_name_.c_str(), info), SUCCESS);
    EXPECT_EQ(info.lane, "rdma");
    const std::string want = connections == "1" ? "am:" : "am*" + connections + ":";
    EXPECT_EQ(info.transports.rfind(want, 0), 0u)
        << "the link is not on " << connections << " connection(s): transports " << info.transports;
  }

  // One round: TIMEOUT, checks, reuse, clean finalize of the target.
  void Round(int round) {
    SCOPED_TRACE("round " + std::to_string(round));
    StartPeer(kRemoteTcpPeer);
    ASSERT_EQ(Connect(), SUCCESS);
    const Case c = GetParam();
    ExpectConnections(c.connections);
    ASSERT_EQ(peer_->Command("fill 0 " + std::to_string(100 + round)), "ok");
    FillPattern(local_.data(), local_.size(), 200 + round);
    std::vector<TransferOpDesc> descs;
    constexpr size_t kBlock = 64 << 10;
    for (size_t off = 0; off < kRemoteSize; off += kBlock) descs.push_back({local_.addr() + off, remote_ + off, kBlock});
    const uint64_t remote_before = RemoteHash(0, kRemoteSize);
    const uint64_t local_before = Hash(local_.data(), local_.size());
    int deadline_ms = c.stopped_target ? 300 : 1;
    if (c.stopped_target) peer_->Stop();
    Status st = SUCCESS;
    double ms = 0;
    for (int attempt = 0; attempt < 20 && st == SUCCESS; ++attempt) {
      const auto t0 = std::chrono::steady_clock::now();
      st = engine_.TransferSync(peer_name_.c_str(), c.op, descs, deadline_ms);
      ms = MsSince(t0);
    }
    ASSERT_EQ(st, TIMEOUT) << "20 attempts of 4 MiB with a " << deadline_ms << " ms deadline all finished";
    // What the memories hold when the call returned may not change later.
    LateBytesProbe probe(c.op, peer_->pid(), local_.addr(), remote_, kRemoteSize);
    EXPECT_TRUE(TimeoutCameOnTime(ms, deadline_ms));
    if (c.stopped_target) peer_->Signal(SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(kStragglerWaitMs));  // nothing may land meanwhile
    EXPECT_TRUE(probe.NothingLanded());
    if (c.stopped_target) {
      // Stopped before anything could land: nothing of it may land at all.
      if (c.op == WRITE) {
        EXPECT_EQ(RemoteHash(0, kRemoteSize), remote_before) << "bytes of a timed-out WRITE landed";
      } else {
        EXPECT_EQ(Hash(local_.data(), local_.size()), local_before) << "bytes of a timed-out READ landed";
      }
    }
    // The link is failed; both engines are usable after Disconnect + Connect.
    EXPECT_EQ(engine_.TransferSync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 64}}, 1000), FAILED);
    EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), SUCCESS);
    ASSERT_EQ(Connect(), SUCCESS);
    ExpectConnections(c.connections);
    FillPattern(local_.data(), local_.size(), 300 + round);
    ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), WRITE, descs, 5000), SUCCESS);
    EXPECT_EQ(RemoteHash(0, kRemoteSize), Hash(local_.data(), local_.size()));
    ASSERT_EQ(peer_->Command("fill 0 " + std::to_string(400 + round)), "ok");
    ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, descs, 5000), SUCCESS);
    EXPECT_EQ(Hash(local_.data(), local_.size()), RemoteHash(0, kRemoteSize));
    // The target finalizes and exits cleanly while the link is still up.
    const int status = peer_->FinalizeAndExit();
    EXPECT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "the target did not finalize cleanly: wait status " << status
        << (status > 0 && WIFSIGNALED(status) ? " (killed by signal " + std::to_string(WTERMSIG(status)) + ")" : "");
    EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), SUCCESS);
  }
};

TEST_P(NetworkTimeoutTest, BothSidesUsableAndFinalizeCleanly) {
  // Read when the initiator's plugin opens (the first StartPeer).
  setenv("ADXL_UCX_RDMA_CONNECTIONS", GetParam().connections, 1);
  for (int r = 0; r < Rounds() && !HasFatalFailure(); ++r) Round(r);
  // And the initiator finalizes cleanly too (a crash here fails the binary).
  const auto t0 = std::chrono::steady_clock::now();
  engine_.Finalize();
  EXPECT_LT(MsSince(t0), ScaledMs(3000));
  unsetenv("ADXL_UCX_RDMA_CONNECTIONS");
}

INSTANTIATE_TEST_SUITE_P(Cases, NetworkTimeoutTest,
                         ::testing::Values(Case{"StoppedTargetWrite", true, WRITE}, Case{"StoppedTargetRead", true, READ},
                                           Case{"LiveTargetWrite", false, WRITE}, Case{"LiveTargetRead", false, READ},
                                           Case{"StoppedTargetWrite3Connections", true, WRITE, "3"},
                                           Case{"StoppedTargetRead3Connections", true, READ, "3"}),
                         [](const ::testing::TestParamInfo<Case> &i) { return std::string(i.param.name); });

}  // namespace
