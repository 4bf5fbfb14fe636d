// docs/contract.md §6 (transfers) with a real peer process on loopback.
#include <atomic>
#include <csignal>
#include <random>
#include <thread>

#include "adxl/adxl_ext.h"
#include "mp_fixture.h"

using namespace adxl;
using namespace adxl_test;

namespace {

class TransferTest : public PeerTest {
 protected:
  void SetUp() override {
    PeerTest::SetUp();
    ASSERT_EQ(Connect(), SUCCESS);
  }
  Status Sync(TransferOp op, const std::vector<TransferOpDesc> &d, int32_t timeout_ms = 5000) {
    return engine_.TransferSync(peer_name_.c_str(), op, d, timeout_ms);
  }
};

TEST_F(TransferTest, ManyThreadsOnOneEngine) {
  constexpr int kThreads = 8;
  constexpr size_t kSlice = kRemoteSize / kThreads;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint8_t *mine = local_.data() + t * kSlice;
      for (int i = 0; i < 10; ++i) {
        FillPattern(mine, kSlice, 100 * t + i);
        const size_t blk = kSlice / 8;
        std::vector<TransferOpDesc> d;
        for (size_t b = 0; b < 8; ++b) d.push_back({local_.addr() + t * kSlice + b * blk, remote_ + t * kSlice + b * blk, blk});
        if (engine_.TransferSync(peer_name_.c_str(), WRITE, d, 10000) != SUCCESS) failures++;
        memset(mine, 0, kSlice);
        if (engine_.TransferSync(peer_name_.c_str(), READ, d, 10000) != SUCCESS) failures++;
        std::vector<uint8_t> want(kSlice);
        FillPattern(want.data(), kSlice, 100 * t + i);
        if (memcmp(want.data(), mine, kSlice) != 0) failures++;
      }
    });
  }
  for (auto &th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// A transfer naming a remote range its link's table lacks asks the peer for
// its table once (refresh on miss) and waits for the answer at most
// Link::kRefreshOnMissWait (200 ms, src/core/link.h), not the rest of the
// call's deadline: against a stopped peer, which never answers, a call with
// a 5 s deadline is refused (PARAM_INVALID) after about 200 ms.  The engine
// here has a heartbeat far longer than the test, so that only the refresh's
// own bound can end the wait (a failed link would end it too).
class RefreshOnMissTest : public PeerTest {
 protected:
  void SetUp() override {
    PeerTest::SetUp();
    ASSERT_EQ(quiet_.Initialize("127.0.0.1", {{"adxl.HeartbeatMs", "60000"}}), SUCCESS);
    MemHandle h = nullptr;
    ASSERT_EQ(quiet_.RegisterMem({local_.addr(), local_.size()}, MEM_HOST, h), SUCCESS);
    ASSERT_EQ(quiet_.Connect(peer_name_.c_str(), 5000), SUCCESS);
  }
  AdxlEngine quiet_;
};

TEST_F(RefreshOnMissTest, AStoppedPeerDelaysTheRefusalOnlyBriefly) {
  constexpr double kRefreshOnMissWaitMs = 200;
  constexpr int32_t kDeadlineMs = 5000;
  const uintptr_t unknown = remote_ + kRemoteSize + (1u << 20);  // never registered by the peer
  peer_->Stop();
  const auto start = std::chrono::steady_clock::now();
  const Status st = quiet_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), unknown, 64}}, kDeadlineMs);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  peer_->Signal(SIGCONT);
  EXPECT_EQ(st, PARAM_INVALID);
  // The engine's wait starts after our clock did, on the same steady clock.
  EXPECT_GE(ms, kRefreshOnMissWaitMs) << "refused without asking the peer for its table";
  // Far below the deadline whatever the machine's load: the wait is bounded
  // by the refresh, not by the call.
  EXPECT_LT(ms, kRefreshOnMissWaitMs + ScaledMs(10 * kSchedulingSlackMs)) << "the refresh waited for the call's deadline";
}

// The engine holds at most 65536 async requests whose final status was not
// yet reported (kMaxAsyncRequests, src/core/engine.cc); one more is
// RESOURCE_EXHAUSTED.  Eight threads submit until each is refused: the limit
// must hold under concurrent callers (it once was checked before the post and
// the request inserted after it, so callers racing at the limit all passed),
// the table must be exactly full, and reporting the requests frees the slots.
TEST_F(TransferTest, AsyncRequestLimitHoldsUnderConcurrentCallers) {
  constexpr size_t kLimit = 65536;
  constexpr int kThreads = 8;
  constexpr size_t kLen = 4096;  // a copy long enough that callers overlap inside the post
  std::vector<std::vector<TransferReq>> reqs(kThreads);
  std::atomic<int> other_errors{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      const size_t slot = t * kLen;
      for (size_t i = 0;; ++i) {
        TransferReq req = nullptr;
        const Status st = engine_.TransferAsync(peer_name_.c_str(), WRITE,
                                                {{local_.addr() + slot, remote_ + slot, kLen}}, TransferArgs{}, req);
        if (st == RESOURCE_EXHAUSTED) break;
        if (st != SUCCESS || req == nullptr) {
          other_errors++;
          break;
        }
        reqs[t].push_back(req);
      }
    });
  }
  go.store(true);
  for (auto &th : threads) th.join();
  ASSERT_EQ(other_errors.load(), 0);
  size_t accepted = 0;
  for (const auto &v : reqs) accepted += v.size();
  // Every thread stopped only when refused, so the table is exactly full.
  EXPECT_LE(accepted, kLimit) << "the async request limit was exceeded by concurrent callers";
  EXPECT_EQ(accepted, kLimit);
  // A single caller is refused too while the table is full.
  TransferReq extra = nullptr;
  EXPECT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 8}}, TransferArgs{}, extra), RESOURCE_EXHAUSTED);
  // Report every request: each completes, and the slots are free again.
  size_t completed = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto &v : reqs) {
    for (TransferReq req : v) {
      TransferStatus status = TransferStatus::WAITING;
      while (status == TransferStatus::WAITING && MsSince(t0) < 60000) {
        ASSERT_EQ(engine_.GetTransferStatus(req, status), SUCCESS);
      }
      completed += status == TransferStatus::COMPLETED ? 1 : 0;
    }
  }
  EXPECT_EQ(completed, accepted);
  TransferReq again = nullptr;
  ASSERT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 8}}, TransferArgs{}, again), SUCCESS);
  TransferStatus status = TransferStatus::WAITING;
  while (status == TransferStatus::WAITING) ASSERT_EQ(engine_.GetTransferStatus(again, status), SUCCESS);
  EXPECT_EQ(status, TransferStatus::COMPLETED);
}

// A peer on "another host" over TCP: the network lane, active-message
// rendezvous without an RDMA device, which needs the target to progress.
const std::vector<std::string> kRemoteTcpPeer = {"ADXL_NODE_ID=another-host", "UCX_TLS=tcp"};

TEST_F(TransferTest, HccsLaneIsOneSidedAgainstAStoppedTarget) {
  // Same node, default transports: the HCCS lane.  The target process is
  // stopped, so only the initiator can move bytes.
  peer_->Stop();
  FillPattern(local_.data(), kRemoteSize, 31);
  std::vector<TransferOpDesc> descs;
  for (size_t off = 0; off < kRemoteSize; off += 65536) descs.push_back({local_.addr() + off, remote_ + off, 65536});
  EXPECT_EQ(Sync(WRITE, descs, 5000), SUCCESS);
  memset(local_.data(), 0, kRemoteSize);
  EXPECT_EQ(Sync(READ, descs, 5000), SUCCESS);
  std::vector<uint8_t> want(kRemoteSize);
  FillPattern(want.data(), kRemoteSize, 31);
  EXPECT_EQ(memcmp(local_.data(), want.data(), kRemoteSize), 0);
  peer_->Signal(SIGCONT);
  EXPECT_EQ(RemoteHash(0, kRemoteSize), Hash(want.data(), kRemoteSize));
}

TEST_F(TransferTest, SharedMallocMemIsReachedByDirectMappingOneSided) {
  // EnableUseFabricMem=1 on the target: its MallocMem memory is offered as a
  // mapping of its memfd, and same-node initiators copy with memcpy.
  peer_ = std::make_unique<PeerProcess>();
  peer_name_ = LoopbackName(FreePort());
  ASSERT_EQ(peer_->Command("init " + peer_name_ + " EnableUseFabricMem=1"), "ok");
  auto a = peer_->Ok("malloc " + std::to_string(kRemoteSize));
  ASSERT_EQ(a.size(), 2u);
  remote_ = std::stoull(a[1]);
  ASSERT_EQ(peer_->Ok("reg 0").size(), 1u);
  ASSERT_EQ(Connect(), SUCCESS);
  adxl::ext::LinkInfo info;
  ASSERT_EQ(adxl::ext::GetLinkInfo(engine_, peer_name_.c_str(), info), SUCCESS);
  EXPECT_EQ(info.lane, "hccs");
  EXPECT_NE(info.transports.find("mapped"), std::string::npos) << info.transports;
  peer_->Stop();  // one-sided: the stopped target does nothing
  FillPattern(local_.data(), kRemoteSize, 57);
  std::vector<TransferOpDesc> descs;
  for (size_t off = 0; off < kRemoteSize; off += 65536) descs.push_back({local_.addr() + off, remote_ + off, 65536});
  EXPECT_EQ(Sync(WRITE, descs), SUCCESS);
  memset(local_.data(), 0, kRemoteSize);
  EXPECT_EQ(Sync(READ, descs), SUCCESS);
  std::vector<uint8_t> want(kRemoteSize);
  FillPattern(want.data(), kRemoteSize, 57);
  EXPECT_EQ(memcmp(local_.data(), want.data(), kRemoteSize), 0);
  // Bounds still hold: a range past the region is refused before anything moves.
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), remote_ + kRemoteSize - 8, 16}}), PARAM_INVALID);
  peer_->Signal(SIGCONT);
  EXPECT_EQ(RemoteHash(0, kRemoteSize), Hash(want.data(), kRemoteSize));
}

}  // namespace

namespace {

// The §6.4 checks of timeout_checks.h can fail: LateBytesProbe sees bytes
// that land after it was made, in either direction, and TimeoutCameOnTime
// refuses a late and an early TIMEOUT.
class TimeoutChecksTest : public PeerTest {};

TEST_F(TimeoutChecksTest, TheChecksSeeWhatTheyAreFor) {
  ASSERT_EQ(Connect(), SUCCESS);
  constexpr size_t kLen = 65536;
  FillPattern(local_.data(), kLen, 7);
  LateBytesProbe write_probe(WRITE, peer_->pid(), local_.addr(), remote_, kLen);
  EXPECT_TRUE(write_probe.NothingLanded());
  // A WRITE that lands now carries the poison the probe put in its source.
  ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), WRITE, {{local_.addr() + 4096, remote_ + 4096, 4096}}, 5000),
            SUCCESS);
  EXPECT_FALSE(write_probe.NothingLanded());
  memset(local_.data(), 0x11, kLen);
  LateBytesProbe read_probe(READ, peer_->pid(), local_.addr(), remote_, kLen);
  EXPECT_TRUE(read_probe.NothingLanded());
  ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), remote_, 4096}}, 5000), SUCCESS);
  EXPECT_FALSE(read_probe.NothingLanded());
  EXPECT_EQ(local_.data()[0], LateBytesProbe::kPoison);
  EXPECT_TRUE(TimeoutCameOnTime(300, 300));
  EXPECT_TRUE(TimeoutCameOnTime(300 + TimeoutAllowedLateMs() - 1, 300));
  EXPECT_FALSE(TimeoutCameOnTime(300 + TimeoutAllowedLateMs() + 1, 300));
  EXPECT_FALSE(TimeoutCameOnTime(250, 300));
  // The early bound holds at the 1 ms deadlines of the same-node §6.4 tests.
  EXPECT_TRUE(TimeoutCameOnTime(1.0, 1));
  EXPECT_FALSE(TimeoutCameOnTime(0.5, 1));
  EXPECT_FALSE(TimeoutCameOnTime(0.0, 1));
}

}  // namespace
