// Spec §6 (transfers) with a real peer process on loopback.
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

TEST_F(TransferTest, ArgumentChecks) {
  const TransferOpDesc ok{local_.addr(), remote_, 64};
  EXPECT_EQ(Sync(WRITE, {ok}, 0), PARAM_INVALID);
  EXPECT_EQ(Sync(WRITE, {ok}, -1), PARAM_INVALID);
  EXPECT_EQ(Sync(WRITE, {}), PARAM_INVALID);
  EXPECT_EQ(Sync(WRITE, {ok, {0, remote_, 64}}), PARAM_INVALID);
  EXPECT_EQ(Sync(WRITE, {ok, {local_.addr(), 0, 64}}), PARAM_INVALID);
  EXPECT_EQ(Sync(WRITE, {ok, {local_.addr(), remote_, 0}}), PARAM_INVALID);
  EXPECT_EQ(Sync(static_cast<TransferOp>(7), {ok}), PARAM_INVALID);
  EXPECT_EQ(engine_.TransferSync(LoopbackName(FreePort()).c_str(), WRITE, {ok}), NOT_CONNECTED);
  TransferReq req = nullptr;
  EXPECT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {}, TransferArgs{}, req), PARAM_INVALID);
  EXPECT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {{0, remote_, 1}}, TransferArgs{}, req), PARAM_INVALID);
  EXPECT_EQ(engine_.TransferAsync(LoopbackName(FreePort()).c_str(), WRITE, {ok}, TransferArgs{}, req), NOT_CONNECTED);
}

TEST_F(TransferTest, RangesOutsideRegistrationsAreRejectedBeforeAnythingMoves) {
  FillPattern(local_.data(), local_.size(), 99);
  const uint64_t before = RemoteHash(0, kRemoteSize);
  const TransferOpDesc good{local_.addr(), remote_, 1 << 20};
  // The bad descriptor comes last: nothing of the good one may have moved.
  const std::vector<std::vector<TransferOpDesc>> bad = {
      {good, {local_.addr(), remote_ + kRemoteSize - 10, 11}},         // remote end + 1 byte
      {good, {local_.addr(), remote_ - 1, 16}},                        // remote start - 1
      {good, {local_.addr() + kLocalSize - 10, remote_, 11}},          // local end + 1 byte
      {good, {local_.addr() - 4096, remote_, 16}},                     // local before
      {good, {local_.addr(), remote_ + kRemoteSize + 4096, 16}},       // remote nowhere
      {good, {local_.addr(), UINTPTR_MAX - 8, 16}},                    // remote overflow
      {good, {UINTPTR_MAX - 8, remote_, 16}},                          // local overflow
  };
  for (const auto &b : bad) {
    EXPECT_EQ(Sync(WRITE, b), PARAM_INVALID);
    TransferReq req = nullptr;
    EXPECT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, b, TransferArgs{}, req), PARAM_INVALID);
  }
  EXPECT_EQ(RemoteHash(0, kRemoteSize), before);
  // The link is still fine.
  EXPECT_EQ(Sync(WRITE, {good}), SUCCESS);
  EXPECT_EQ(RemoteHash(0, 1 << 20), Hash(local_.data(), 1 << 20));
}

TEST_F(TransferTest, RandomBatchesMoveEveryByte) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 12; ++round) {
    const uint64_t seed = 1000 + round;
    FillPattern(local_.data(), local_.size(), seed);
    // Random non-overlapping remote slots of random sizes at random offsets.
    std::vector<TransferOpDesc> descs;
    size_t remote_off = rng() % 4096;
    while (true) {
      size_t len = 1 + rng() % (round % 2 == 0 ? 4096 : 300000);
      size_t local_off = rng() % (kLocalSize - len);
      if (remote_off + len > kRemoteSize) break;
      descs.push_back({local_.addr() + local_off, remote_ + remote_off, len});
      remote_off += len + rng() % 512;
    }
    ASSERT_EQ(Sync(WRITE, descs), SUCCESS) << "round " << round;
    for (const auto &d : descs) {
      ASSERT_EQ(RemoteHash(d.remote_addr - remote_, d.len), Hash(reinterpret_cast<void *>(d.local_addr), d.len))
          << "round " << round << " remote offset " << d.remote_addr - remote_ << " len " << d.len;
    }
    // Read everything back into a zeroed scratch area and compare.
    std::vector<TransferOpDesc> back;
    size_t off = 0;
    memset(local_.data(), 0, local_.size());
    for (const auto &d : descs) {
      if (off + d.len > kLocalSize) break;
      back.push_back({local_.addr() + off, d.remote_addr, d.len});
      off += d.len;
    }
    ASSERT_EQ(Sync(READ, back), SUCCESS);
    for (const auto &d : back) {
      ASSERT_EQ(Hash(reinterpret_cast<void *>(d.local_addr), d.len), RemoteHash(d.remote_addr - remote_, d.len));
    }
  }
}

TEST_F(TransferTest, DescriptorsSpanAdjacentRegistrationsOnBothSides) {
  // Remote: a second buffer registered as three adjacent pieces.
  auto a = peer_->Ok("alloc 3145728");
  ASSERT_EQ(a.size(), 2u);
  const uintptr_t r2 = std::stoull(a[1]);
  ASSERT_EQ(peer_->Ok("reg 1 0 1048576").size(), 1u);
  ASSERT_EQ(peer_->Ok("reg 1 1048576 1048576").size(), 1u);
  ASSERT_EQ(peer_->Ok("reg 1 2097152 1048576").size(), 1u);
  // Local: a second buffer registered as two adjacent halves.
  AlignedBuffer l2(2 << 20);
  MemHandle h1, h2;
  ASSERT_EQ(engine_.RegisterMem({l2.addr(), 1 << 20}, MEM_HOST, h1), SUCCESS);
  ASSERT_EQ(engine_.RegisterMem({l2.addr() + (1 << 20), 1 << 20}, MEM_HOST, h2), SUCCESS);
  FillPattern(l2.data(), l2.size(), 5);
  // Crosses the local boundary at +1 MiB and the remote ones at +1 and +2 MiB.
  const size_t len = (3 << 19) + 777;  // 1.5 MiB + 777
  const TransferOpDesc d{l2.addr() + (1 << 19) - 1000, r2 + 1048576 - 5000, len};
  ASSERT_EQ(Sync(WRITE, {d}), SUCCESS);
  auto h = peer_->Ok("hash 1 " + std::to_string(1048576 - 5000) + " " + std::to_string(len));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(std::stoull(h[0]), Hash(l2.data() + (1 << 19) - 1000, len));
  // A span with a hole (beyond the third piece) is refused.
  EXPECT_EQ(Sync(WRITE, {{l2.addr(), r2 + 3 * 1048576 - 10, 20}}), PARAM_INVALID);
  // And back.
  memset(l2.data(), 0, l2.size());
  ASSERT_EQ(Sync(READ, {d}), SUCCESS);
  EXPECT_EQ(std::stoull(h[0]), Hash(l2.data() + (1 << 19) - 1000, len));
}

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

TEST_F(TransferTest, AsyncStatusLifecycle) {
  FillPattern(local_.data(), 1 << 20, 42);
  TransferReq req = nullptr;
  ASSERT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 1 << 20}}, TransferArgs{}, req),
            SUCCESS);
  ASSERT_NE(req, nullptr);
  TransferStatus st = TransferStatus::WAITING;
  const auto t0 = std::chrono::steady_clock::now();
  Status rc = SUCCESS;
  while (MsSince(t0) < 5000) {
    rc = engine_.GetTransferStatus(req, st);
    if (rc != SUCCESS || st != TransferStatus::WAITING) break;
  }
  EXPECT_EQ(rc, SUCCESS);
  EXPECT_EQ(st, TransferStatus::COMPLETED);
  EXPECT_EQ(RemoteHash(0, 1 << 20), Hash(local_.data(), 1 << 20));
  // Reported once: the handle is gone afterwards.
  EXPECT_EQ(engine_.GetTransferStatus(req, st), PARAM_INVALID);
  EXPECT_EQ(st, TransferStatus::FAILED);
  TransferReq null_req = nullptr;
  EXPECT_EQ(engine_.GetTransferStatus(null_req, st), FAILED);
  TransferReq bogus = reinterpret_cast<TransferReq>(uintptr_t{0xdeadbeef});
  EXPECT_EQ(engine_.GetTransferStatus(bogus, st), PARAM_INVALID);
  EXPECT_EQ(st, TransferStatus::FAILED);
}

TEST_F(TransferTest, ManyAsyncRequestsCompleteWhileTheTargetCallsNothing) {
  // The peer process is idle in its command loop: emulated transports must
  // still complete through its progress thread.
  std::vector<TransferReq> reqs;
  for (int i = 0; i < 64; ++i) {
    TransferReq r = nullptr;
    const size_t off = static_cast<size_t>(i) * 65536;
    ASSERT_EQ(engine_.TransferAsync(peer_name_.c_str(), i % 2 ? READ : WRITE,
                                    {{local_.addr() + off, remote_ + off, 65536}}, TransferArgs{}, r),
              SUCCESS);
    reqs.push_back(r);
  }
  const auto t0 = std::chrono::steady_clock::now();
  size_t done = 0;
  while (done < reqs.size() && MsSince(t0) < 10000) {
    for (auto &r : reqs) {
      if (r == nullptr) continue;
      TransferStatus st;
      ASSERT_EQ(engine_.GetTransferStatus(r, st), SUCCESS);
      if (st == TransferStatus::WAITING) continue;
      EXPECT_EQ(st, TransferStatus::COMPLETED);
      r = nullptr;
      ++done;
    }
  }
  EXPECT_EQ(done, reqs.size());
}

// A peer on "another host" over TCP: UCP RMA there needs the target to progress.
const std::vector<std::string> kRemoteTcpPeer = {"ADXL_NODE_ID=another-host", "UCX_TLS=tcp"};

TEST_F(TransferTest, AsyncRequestOnADisconnectedLinkIsNotConnected) {
  StartPeer(kRemoteTcpPeer);
  ASSERT_EQ(Connect(), SUCCESS);
  peer_->Stop();
  TransferReq req = nullptr;
  ASSERT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 4 << 20}}, TransferArgs{}, req),
            SUCCESS);
  TransferStatus st;
  ASSERT_EQ(engine_.GetTransferStatus(req, st), SUCCESS);
  EXPECT_EQ(st, TransferStatus::WAITING);
  ASSERT_EQ(engine_.Disconnect(peer_name_.c_str(), 500), SUCCESS);
  EXPECT_EQ(engine_.GetTransferStatus(req, st), NOT_CONNECTED);
  EXPECT_EQ(st, TransferStatus::FAILED);
  peer_->Signal(SIGCONT);
}

TEST_F(TransferTest, DeadlineGivesTimeoutFailsTheLinkAndNoByteLandsAfterwards) {
  StartPeer(kRemoteTcpPeer);  // RDMA lane over TCP: a stopped target cannot complete it
  ASSERT_EQ(Connect(), SUCCESS);
  const uint64_t guard = RemoteHash(0, kRemoteSize);  // pattern 1 everywhere
  FillPattern(local_.data(), local_.size(), 77);
  peer_->Stop();
  std::vector<TransferOpDesc> descs;
  for (size_t off = 0; off < kRemoteSize; off += 256 << 10) descs.push_back({local_.addr() + off, remote_ + off, 256 << 10});
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Sync(WRITE, descs, 300), TIMEOUT);
  EXPECT_LT(MsSince(t0), 300 + 1500);  // the deadline plus the bounded fence
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), remote_, 64}}), FAILED);
  peer_->Signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The target was stopped before anything could land, so the guard pattern
  // must be intact: nothing of the timed-out WRITE arrived afterwards.
  EXPECT_EQ(RemoteHash(0, kRemoteSize), guard) << "bytes of a timed-out WRITE landed after TransferSync returned TIMEOUT";
  EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), SUCCESS);
  ASSERT_EQ(Connect(), SUCCESS);
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), remote_, 64}}), SUCCESS);
}

TEST_F(TransferTest, TimedOutReadWritesNothingLocallyAfterwards) {
  StartPeer(kRemoteTcpPeer);
  ASSERT_EQ(Connect(), SUCCESS);
  memset(local_.data(), 0xAB, local_.size());
  const uint64_t guard = Hash(local_.data(), local_.size());
  peer_->Stop();
  std::vector<TransferOpDesc> descs;
  for (size_t off = 0; off < kRemoteSize; off += 256 << 10) descs.push_back({local_.addr() + off, remote_ + off, 256 << 10});
  EXPECT_EQ(Sync(READ, descs, 300), TIMEOUT);
  peer_->Signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Hash(local_.data(), local_.size()), guard) << "data of a timed-out READ landed after TIMEOUT";
}

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

TEST_F(TransferTest, RegistrationsMadeWhileLinkedArePushedAndWithdrawn) {
  auto a = peer_->Ok("alloc 65536");
  ASSERT_EQ(a.size(), 2u);
  const uintptr_t r2 = std::stoull(a[1]);
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), r2, 4096}}), PARAM_INVALID);
  auto h = peer_->Ok("reg 1");  // returns once we acknowledged it
  ASSERT_EQ(h.size(), 1u);
  FillPattern(local_.data(), 4096, 3);
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), r2, 4096}}), SUCCESS);
  ASSERT_EQ(peer_->Command("dereg " + h[0]), "ok");  // returns once we stopped using it
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), r2, 4096}}), PARAM_INVALID);
}

TEST_F(TransferTest, IdenticalRegistrationIsReferenceCounted) {
  auto again = peer_->Ok("reg 0");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0], remote_handle_);  // same range, same handle
  ASSERT_EQ(peer_->Command("dereg " + remote_handle_), "ok");
  EXPECT_EQ(Sync(READ, {{local_.addr(), remote_, 4096}}), SUCCESS);  // still registered once
  ASSERT_EQ(peer_->Command("dereg " + remote_handle_), "ok");
  EXPECT_EQ(Sync(READ, {{local_.addr(), remote_, 4096}}), PARAM_INVALID);
  EXPECT_EQ(peer_->Command("dereg " + remote_handle_), "ok");  // unknown now: SUCCESS, nothing happens
}

}  // namespace
