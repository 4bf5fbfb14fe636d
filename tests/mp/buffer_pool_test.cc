// docs/contract.md §3.5/§6.2 buffer pool staging, on both facades, against a real peer:
// sync transfers whose local side is unregistered host memory go through the
// pool's registered buffers, pipelined under one deadline; kinds are not
// mixed in one call; async is never staged; "0:0" turns staging off.
#include <atomic>
#include <csignal>
#include <cstring>
#include <random>
#include <thread>

#include "error_lines.h"
#include "facade_fixture.h"

using namespace adxl_test;
using adxl::Status;
using adxl::TransferOpDesc;

namespace {

template <typename Api>
class BufferPoolTest : public FacadeTest<Api> {};
TYPED_TEST_SUITE(BufferPoolTest, Facades, FacadeNames);

TYPED_TEST(BufferPoolTest, StagedWriteAndReadMoveEveryByteThroughASmallPool) {
  this->Init({{TypeParam::BufferPoolKey(), "2:1"}});  // 2 buffers of 1 MiB: many chunks, pipelined
  ASSERT_EQ(this->engine_.Connect(this->peer_name_.c_str(), 5000), adxl::SUCCESS);
  std::vector<uint8_t> plain(this->kRemoteSize);  // never registered
  const uintptr_t base = reinterpret_cast<uintptr_t>(plain.data());
  std::mt19937_64 rng(7);
  for (int round = 0; round < 4; ++round) {
    FillPattern(plain.data(), plain.size(), 300 + round);
    // Random descriptors: small ones share a chunk, big ones span several.
    std::vector<TransferOpDesc> descs;
    size_t off = rng() % 4096;
    while (true) {
      const size_t len = 1 + rng() % (round % 2 == 0 ? 8192 : (1536u << 10));
      if (off + len > this->kRemoteSize) break;
      descs.push_back({base + off, this->remote_ + off, len});
      off += len + rng() % 256;
    }
    ASSERT_EQ(this->Sync(adxl::WRITE, descs, 10000), adxl::SUCCESS) << "round " << round;
    for (const auto &d : descs) {
      ASSERT_EQ(this->RemoteHash(d.remote_addr - this->remote_, d.len),
                Hash(reinterpret_cast<const void *>(d.local_addr), d.len));
    }
    std::vector<uint8_t> want(plain);
    memset(plain.data(), 0, plain.size());
    ASSERT_EQ(this->Sync(adxl::READ, descs, 10000), adxl::SUCCESS) << "round " << round;
    for (const auto &d : descs) {
      ASSERT_EQ(memcmp(reinterpret_cast<const void *>(d.local_addr), want.data() + (d.local_addr - base), d.len), 0);
    }
  }
}

TYPED_TEST(BufferPoolTest, DefaultPoolIsOnAndAutoConnectWorksThroughIt) {
  this->Init({{TypeParam::AutoConnectKey(), "1"}});  // BufferPool not given: "4:8"
  std::vector<uint8_t> plain(65536);
  FillPattern(plain.data(), plain.size(), 41);
  ASSERT_EQ(this->Sync(adxl::WRITE, {{reinterpret_cast<uintptr_t>(plain.data()), this->remote_, plain.size()}}),
            adxl::SUCCESS);
  EXPECT_EQ(this->RemoteHash(0, plain.size()), Hash(plain.data(), plain.size()));
}

TYPED_TEST(BufferPoolTest, PoolOffRejectsUnregisteredLocalMemory) {
  this->Init({{TypeParam::BufferPoolKey(), "0:0"}});
  ASSERT_EQ(this->engine_.Connect(this->peer_name_.c_str(), 5000), adxl::SUCCESS);
  std::vector<uint8_t> plain(4096);
  EXPECT_EQ(this->Sync(adxl::WRITE, {{reinterpret_cast<uintptr_t>(plain.data()), this->remote_, 4096}}),
            adxl::PARAM_INVALID);
  EXPECT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 4096}}), adxl::SUCCESS);
}

TYPED_TEST(BufferPoolTest, RefusedCallsMoveNothing) {
  this->Init({});
  const char *peer = this->peer_name_.c_str();
  ASSERT_EQ(this->engine_.Connect(peer, 5000), adxl::SUCCESS);
  std::vector<uint8_t> plain(1 << 20);
  FillPattern(plain.data(), plain.size(), 51);
  FillPattern(this->local_.data(), 1 << 20, 52);
  const uintptr_t p = reinterpret_cast<uintptr_t>(plain.data());
  const uint64_t before = this->RemoteHash(0, this->kRemoteSize);
  // Registered and unregistered local ranges in one call.
  EXPECT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 4096}, {p, this->remote_ + 8192, 4096}}),
            adxl::PARAM_INVALID);
  EXPECT_EQ(this->Sync(adxl::READ, {{p, this->remote_, 4096}, {this->local_.addr(), this->remote_, 4096}}),
            adxl::PARAM_INVALID);
  // A remote range outside the peer's registrations, staged or not.
  EXPECT_EQ(this->Sync(adxl::WRITE, {{p, this->remote_, 4096}, {p, this->remote_ + this->kRemoteSize - 10, 11}}),
            adxl::PARAM_INVALID);
  // Async is never staged.
  adxl::TransferReq req = nullptr;
  EXPECT_EQ(this->engine_.TransferAsync(peer, adxl::WRITE, {{p, this->remote_, 4096}},
                                        typename TypeParam::TransferArgs{}, req),
            adxl::PARAM_INVALID);
  // Zero-length descriptors are refused as ever.
  EXPECT_EQ(this->Sync(adxl::WRITE, {{p, this->remote_, 4096}, {p, this->remote_, 0}}), adxl::PARAM_INVALID);
  EXPECT_EQ(this->RemoteHash(0, this->kRemoteSize), before);
}

// A descriptor whose local address + length wraps, beside an unregistered
// one: the call would be staged, and the pool must never copy from or to the
// wrapped range.  PARAM_INVALID with one ERROR line, nothing moved, and the
// link still works.
TYPED_TEST(BufferPoolTest, AnOverflowingLocalRangeIsRefusedBeforeStaging) {
  this->Init({});  // BufferPool not given: on
  ASSERT_EQ(this->engine_.Connect(this->peer_name_.c_str(), 5000), adxl::SUCCESS);
  std::vector<uint8_t> plain(4096);
  FillPattern(plain.data(), plain.size(), 71);
  const uintptr_t p = reinterpret_cast<uintptr_t>(plain.data());
  const uint64_t before = this->RemoteHash(0, this->kRemoteSize);
  for (adxl::TransferOp op : {adxl::WRITE, adxl::READ}) {
    const std::vector<TransferOpDesc> descs = {{p, this->remote_, 4096},
                                               {UINTPTR_MAX - 0xFFF, this->remote_, 0x2000}};
    EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(this->Sync(op, descs), adxl::PARAM_INVALID); }), 1) << "op " << op;
  }
  EXPECT_EQ(this->RemoteHash(0, this->kRemoteSize), before);
  EXPECT_EQ(this->Sync(adxl::WRITE, {{p, this->remote_, 4096}}), adxl::SUCCESS);
  EXPECT_EQ(this->RemoteHash(0, 4096), Hash(plain.data(), 4096));
}

TYPED_TEST(BufferPoolTest, ConcurrentStagedCallsShareThePool) {
  this->Init({{TypeParam::BufferPoolKey(), "3:1"}});
  ASSERT_EQ(this->engine_.Connect(this->peer_name_.c_str(), 5000), adxl::SUCCESS);
  constexpr int kThreads = 4;
  constexpr size_t kSlice = (4u << 20) / kThreads;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> mine(kSlice), back(kSlice);
      for (int i = 0; i < 4; ++i) {
        FillPattern(mine.data(), kSlice, 600 + 10 * t + i);
        const TransferOpDesc w{reinterpret_cast<uintptr_t>(mine.data()), this->remote_ + t * kSlice, kSlice};
        const TransferOpDesc r{reinterpret_cast<uintptr_t>(back.data()), this->remote_ + t * kSlice, kSlice};
        if (this->Sync(adxl::WRITE, {w}, 10000) != adxl::SUCCESS) failures++;
        if (this->Sync(adxl::READ, {r}, 10000) != adxl::SUCCESS) failures++;
        if (mine != back) failures++;
      }
    });
  }
  for (auto &th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TYPED_TEST(BufferPoolTest, OneDeadlineCoversTheWholeStagedCall) {
  this->StartPeer(RemoteTcpPeerEnv());
  this->Init({{TypeParam::BufferPoolKey(), "2:1"}});
  ASSERT_EQ(this->engine_.Connect(this->peer_name_.c_str(), 5000), adxl::SUCCESS);
  std::vector<uint8_t> plain(this->kRemoteSize);
  FillPattern(plain.data(), plain.size(), 61);
  const uint64_t guard = this->RemoteHash(0, this->kRemoteSize);
  ASSERT_TRUE(StopProcess(this->peer_->pid()));
  // 64 MiB (the same ranges 16 times): more than any socket buffer holds.
  const std::vector<TransferOpDesc> big(16, {reinterpret_cast<uintptr_t>(plain.data()), this->remote_, plain.size()});
  // One deadline for the whole staged call: TIMEOUT within 300 ms + 50 ms
  // (Sync checks the time).
  ASSERT_EQ(this->Sync(adxl::WRITE, big, 300), adxl::TIMEOUT);
  LateBytesProbe probe(adxl::WRITE, this->peer_->pid(), reinterpret_cast<uintptr_t>(plain.data()), this->remote_,
                       plain.size());
  // The link is failed (no AutoConnect): further calls are FAILED.
  EXPECT_EQ(this->Sync(adxl::WRITE, {{reinterpret_cast<uintptr_t>(plain.data()), this->remote_, 64}}), adxl::FAILED);
  this->peer_->Signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(kStragglerWaitMs));  // nothing may land meanwhile
  EXPECT_TRUE(probe.NothingLanded());
  EXPECT_EQ(this->RemoteHash(0, this->kRemoteSize), guard) << "bytes of a timed-out staged WRITE landed afterwards";
  FillPattern(plain.data(), plain.size(), 62);  // the probe poisoned it
  // The pool's buffers came back: a new link stages again.
  EXPECT_EQ(this->engine_.Disconnect(this->peer_name_.c_str(), 1000), adxl::SUCCESS);
  ASSERT_EQ(this->engine_.Connect(this->peer_name_.c_str(), 5000), adxl::SUCCESS);
  EXPECT_EQ(this->Sync(adxl::WRITE, {{reinterpret_cast<uintptr_t>(plain.data()), this->remote_, plain.size()}}, 10000),
            adxl::SUCCESS);
  EXPECT_EQ(this->RemoteHash(0, plain.size()), Hash(plain.data(), plain.size()));
}

// §6.4 "The link is then failed", also after a staged call that timed out
// waiting for a buffer with nothing of its own in flight: another call holds
// the pool's only buffer on a chunk the stopped target never takes.
TYPED_TEST(BufferPoolTest, ATimeoutWaitingForABufferFailsTheLink) {
  this->StartPeer(RemoteTcpPeerEnv());
  // The stopped target is not judged dead meanwhile: only a TIMEOUT may
  // fail the link here.
  this->Init({{TypeParam::BufferPoolKey(), "1:1"}, {"adxl.HeartbeatTimeoutMs", "20000"}});
  ASSERT_EQ(this->engine_.Connect(this->peer_name_.c_str(), 5000), adxl::SUCCESS);
  std::vector<uint8_t> holder(this->kRemoteSize), waiter(4096);
  ASSERT_TRUE(StopProcess(this->peer_->pid()));
  Status held = adxl::SUCCESS;
  std::thread first([&] {
    held = this->Sync(adxl::WRITE, {{reinterpret_cast<uintptr_t>(holder.data()), this->remote_, holder.size()}}, 3000);
  });
  // Long enough for `first` to take the buffer and post into it.
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(ScaledMs(500))));
  EXPECT_EQ(this->Sync(adxl::WRITE, {{reinterpret_cast<uintptr_t>(waiter.data()), this->remote_, waiter.size()}}, 200),
            adxl::TIMEOUT);
  // Failed at once, not posted to the stopped target and timed out.
  EXPECT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 64}}, 500), adxl::FAILED);
  this->peer_->Signal(SIGCONT);
  first.join();
  EXPECT_NE(held, adxl::SUCCESS);
  EXPECT_EQ(this->engine_.Disconnect(this->peer_name_.c_str(), 1000), adxl::SUCCESS);
  ASSERT_EQ(this->engine_.Connect(this->peer_name_.c_str(), 5000), adxl::SUCCESS);
  EXPECT_EQ(this->Sync(adxl::WRITE, {{reinterpret_cast<uintptr_t>(waiter.data()), this->remote_, waiter.size()}}),
            adxl::SUCCESS);
}

}  // namespace
