// docs/contract.md §6 (transfers), on every lane.
#include <csignal>
#include <random>
#include <thread>

#include "conformance.h"

using namespace adxl;
using namespace adxl_test;

namespace {

// §6.1 "TransferSync: timeout <= 0, an empty descriptor list, or any
// descriptor with a zero address or zero length is PARAM_INVALID. No link
// (and no AutoConnect) is NOT_CONNECTED."  §6.5: "TransferAsync: the same
// argument checks".
TEST_P(Conformance, S6_1_ArgumentChecksAndNoLinkIsNotConnected) {
  InitLocal();
  const TransferOpDesc ok{local_.addr(), remote_, 64};
  EXPECT_EQ(Sync(WRITE, {ok}), NOT_CONNECTED);
  ASSERT_EQ(Connect(), SUCCESS);
  EXPECT_EQ(Sync(WRITE, {ok}, 0), PARAM_INVALID);
  EXPECT_EQ(Sync(WRITE, {ok}, -1), PARAM_INVALID);
  EXPECT_EQ(Sync(WRITE, {}), PARAM_INVALID);
  EXPECT_EQ(Sync(WRITE, {ok, {0, remote_, 64}}), PARAM_INVALID);
  EXPECT_EQ(Sync(WRITE, {ok, {local_.addr(), 0, 64}}), PARAM_INVALID);
  EXPECT_EQ(Sync(WRITE, {ok, {local_.addr(), remote_, 0}}), PARAM_INVALID);
  EXPECT_EQ(Sync(static_cast<TransferOp>(7), {ok}), PARAM_INVALID);
  TransferReq req = nullptr;
  EXPECT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {}, TransferArgs{}, req), PARAM_INVALID);
  EXPECT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {{0, remote_, 1}}, TransferArgs{}, req), PARAM_INVALID);
  EXPECT_EQ(engine_.TransferAsync(peer_name_.c_str(), READ, {{local_.addr(), remote_, 0}}, TransferArgs{}, req),
            PARAM_INVALID);
  EXPECT_EQ(engine_.TransferAsync(LoopbackName(FreePort()).c_str(), WRITE, {ok}, TransferArgs{}, req), NOT_CONNECTED);
  EXPECT_EQ(Sync(WRITE, {ok}), SUCCESS);  // the link is still fine
}

// §6.2 "Every local range must lie in local registered memory and every
// remote range in the peer's registered memory, else PARAM_INVALID, checked
// before anything moves."
TEST_P(Conformance, S6_2_RangesOutsideRegistrationsAreRefusedBeforeAnythingMoves) {
  InitLocal({{"adxl.BufferPool", "0:0"}});  // no staging of unregistered local memory (§6.2's exception)
  ASSERT_EQ(Connect(), SUCCESS);
  FillPattern(local_.data(), local_.size(), 99);
  const uint64_t before = RemoteHash(0, kRemoteSize);
  const TransferOpDesc good{local_.addr(), remote_, 1 << 20};
  // The bad descriptor comes last: nothing of the good one may have moved.
  const std::vector<TransferOpDesc> bad = {
      {local_.addr(), remote_ + kRemoteSize - 10, 11},    // remote end + 1 byte
      {local_.addr(), remote_ - 1, 16},                   // remote start - 1
      {local_.addr() + kLocalSize - 10, remote_, 11},     // local end + 1 byte
      {local_.addr() - 4096, remote_, 16},                // local before
      {local_.addr(), remote_ + kRemoteSize + 4096, 16},  // remote nowhere
      {local_.addr(), UINTPTR_MAX - 8, 16},               // remote overflow
      {UINTPTR_MAX - 8, remote_, 16},                     // local overflow
      {local_.addr(), remote_, SIZE_MAX},                 // length overflow
  };
  for (const auto &b : bad) {
    for (TransferOp op : {WRITE, READ}) {
      EXPECT_EQ(Sync(op, {good, b}), PARAM_INVALID) << b.local_addr << " " << b.remote_addr << " " << b.len;
      TransferReq req = nullptr;
      EXPECT_EQ(engine_.TransferAsync(peer_name_.c_str(), op, {good, b}, TransferArgs{}, req), PARAM_INVALID);
    }
  }
  EXPECT_EQ(RemoteHash(0, kRemoteSize), before);
  std::vector<uint8_t> want(kLocalSize);
  FillPattern(want.data(), want.size(), 99);
  EXPECT_EQ(memcmp(local_.data(), want.data(), kLocalSize), 0) << "a refused READ changed local memory";
  EXPECT_EQ(Sync(WRITE, {good}), SUCCESS);
  EXPECT_EQ(RemoteHash(0, 1 << 20), Hash(local_.data(), 1 << 20));
}

// §6.3 "READ copies remote → local, WRITE local → remote, byte for byte. When
// TransferSync returns SUCCESS every byte is in place."
TEST_P(Conformance, S6_3_ReadAndWriteMoveEveryByte) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 6; ++round) {
    FillPattern(local_.data(), local_.size(), 1000 + round);
    // Random non-overlapping remote slots of random sizes at random offsets.
    std::vector<TransferOpDesc> descs;
    size_t remote_off = rng() % 4096;
    while (true) {
      const size_t len = 1 + rng() % (round % 2 == 0 ? 4096 : 300000);
      const size_t local_off = rng() % (kLocalSize - len);
      if (remote_off + len > kRemoteSize) break;
      descs.push_back({local_.addr() + local_off, remote_ + remote_off, len});
      remote_off += len + rng() % 512;
    }
    ASSERT_EQ(Sync(WRITE, descs), SUCCESS) << "round " << round;
    for (const auto &d : descs) {
      ASSERT_EQ(RemoteHash(d.remote_addr - remote_, d.len), Hash(reinterpret_cast<void *>(d.local_addr), d.len))
          << "round " << round << " remote offset " << d.remote_addr - remote_ << " len " << d.len;
    }
    // Read everything back into a zeroed area, packed, and compare.
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

// 64 MiB of 512-byte descriptors: 16 passes over the whole remote buffer.
std::vector<TransferOpDesc> ManySmallDescriptors(uintptr_t local, uintptr_t remote, size_t size) {
  std::vector<TransferOpDesc> descs;
  for (int pass = 0; pass < 16; ++pass) {
    for (size_t off = 0; off < size; off += 512) descs.push_back({local + off, remote + off, 512});
  }
  return descs;
}

// §6.4 "When the deadline passes, TransferSync returns TIMEOUT — within the
// deadline plus 50 ms — and no byte of that call moves after it returned, in
// either memory ... The link is then failed: further transfers on it are
// FAILED until Disconnect + Connect."
//
// On every lane: Sync() checks how long each TIMEOUT took (on time, and not
// before the deadline); LateBytesProbe (timeout_checks.h), made the moment
// the call returned, poisons the call's source and snapshots its target, and
// after kStragglerWaitMs the target must still equal that snapshot.  Where
// the target is stopped (rdma_am) nothing may have landed at all: the target
// must also equal its hash from before the call.
TEST_P(Conformance, S6_4_TimeoutMovesNoByteAfterwardsAndFailsTheLink) {
  if (!lane().timeout_fences) GTEST_SKIP() << "UCP put/get over TCP does not fence a TIMEOUT (docs/contract.md)";
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  std::vector<TransferOpDesc> descs;
  Status st = SUCCESS;
  if (!lane().one_sided) {
    // The stopped target cannot complete anything: the deadline passes.
    const uint64_t guard = RemoteHash(0, kRemoteSize);
    FillPattern(local_.data(), local_.size(), 77);
    peer_->Stop();
    for (size_t off = 0; off < kRemoteSize; off += 256 << 10) descs.push_back({local_.addr() + off, remote_ + off, 256 << 10});
    ASSERT_EQ(Sync(WRITE, descs, 300), TIMEOUT);  // on time: Sync checks it
    LateBytesProbe probe(WRITE, peer_->pid(), local_.addr(), remote_, kRemoteSize);
    st = Sync(WRITE, {{local_.addr(), remote_, 64}});
    peer_->Signal(SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(kStragglerWaitMs));  // nothing may land meanwhile
    EXPECT_TRUE(probe.NothingLanded());
    EXPECT_EQ(RemoteHash(0, kRemoteSize), guard) << "bytes of a timed-out WRITE landed in a stopped target";
  } else {
    // The initiator copies by itself: a deadline shorter than the copy
    // (64 MiB in 512-byte descriptors, the whole buffer 16 times, 1 ms).
    // Whatever part was copied, nothing may change after the call returned.
    descs = ManySmallDescriptors(local_.addr(), remote_, kRemoteSize);
    Status got = SUCCESS;
    for (int attempt = 0; attempt < 5 && got == SUCCESS; ++attempt) {
      FillPattern(local_.data(), local_.size(), 200 + attempt);
      got = Sync(WRITE, descs, 1);
    }
    ASSERT_EQ(got, TIMEOUT) << "a 64 MiB WRITE never exceeded 1 ms";
    LateBytesProbe probe(WRITE, peer_->pid(), local_.addr(), remote_, kRemoteSize);
    std::this_thread::sleep_for(std::chrono::milliseconds(kStragglerWaitMs));  // nothing may land meanwhile
    EXPECT_TRUE(probe.NothingLanded());
    st = Sync(WRITE, {{local_.addr(), remote_, 64}});
  }
  EXPECT_EQ(st, FAILED) << "the link must be failed after a TIMEOUT";
  EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), SUCCESS);
  ASSERT_EQ(Connect(), SUCCESS);
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), remote_, 64}}), SUCCESS);
}

// §6.4 "The deadline holds within one large descriptor too (the engine
// splits large operations)": one 64 MiB descriptor with a 1 ms deadline is
// TIMEOUT on time, and nothing moves after it returned.
TEST_P(Conformance, S6_4_TheDeadlineHoldsWithinOneLargeDescriptor) {
  if (!lane().timeout_fences) GTEST_SKIP() << "UCP put/get over TCP does not fence a TIMEOUT (docs/contract.md)";
  constexpr size_t kBig = 64u << 20;
  InitLocal();
  auto a = peer_->Ok(AllocCommand() + std::to_string(kBig));
  ASSERT_EQ(a.size(), 2u);
  const uintptr_t remote = std::stoull(a[1]);
  ASSERT_EQ(peer_->Ok("reg 1").size(), 1u);
  const uintptr_t local = NewLocalMemory(kBig);
  MemHandle h = nullptr;
  ASSERT_EQ(engine_.RegisterMem({local, kBig}, MEM_HOST, h), SUCCESS);
  ASSERT_EQ(Connect(), SUCCESS);
  FillPattern(reinterpret_cast<void *>(local), kBig, 9);
  ASSERT_EQ(peer_->Command("fill 1 4"), "ok");
  const uint64_t before = RemoteHash(0, kBig, 1);
  if (!lane().one_sided) peer_->Stop();  // the network lane needs the target to move bytes
  // 64 MiB take several milliseconds to copy here: 1 ms must end in TIMEOUT.
  ASSERT_EQ(Sync(WRITE, {{local, remote, kBig}}, 1), TIMEOUT);  // on time: Sync checks it
  LateBytesProbe probe(WRITE, peer_->pid(), local, remote, kBig);
  if (!lane().one_sided) peer_->Signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(kStragglerWaitMs));  // nothing may land meanwhile
  EXPECT_TRUE(probe.NothingLanded());
  if (!lane().one_sided) {
    // Stopped before anything could land: nothing of it may land at all.
    EXPECT_EQ(RemoteHash(0, kBig, 1), before) << "bytes of a timed-out WRITE landed in a stopped target";
  }
  EXPECT_EQ(Sync(WRITE, {{local, remote, 64}}), FAILED);
}

// §6.4 for READ: no byte lands in local memory after TIMEOUT.
TEST_P(Conformance, S6_4_TimedOutReadWritesNothingLocallyAfterwards) {
  if (!lane().timeout_fences) GTEST_SKIP() << "UCP put/get over TCP does not fence a TIMEOUT (docs/contract.md)";
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  std::vector<TransferOpDesc> descs;
  if (!lane().one_sided) {
    memset(local_.data(), 0xAB, local_.size());
    const uint64_t guard = Hash(local_.data(), local_.size());
    peer_->Stop();
    for (size_t off = 0; off < kRemoteSize; off += 256 << 10) descs.push_back({local_.addr() + off, remote_ + off, 256 << 10});
    ASSERT_EQ(Sync(READ, descs, 300), TIMEOUT);  // on time: Sync checks it
    LateBytesProbe probe(READ, peer_->pid(), local_.addr(), remote_, kRemoteSize);
    peer_->Signal(SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(kStragglerWaitMs));  // nothing may land meanwhile
    EXPECT_TRUE(probe.NothingLanded());
    EXPECT_EQ(Hash(local_.data(), local_.size()), guard) << "data of a timed-out READ from a stopped target landed";
  } else {
    descs = ManySmallDescriptors(local_.addr(), remote_, kRemoteSize);
    Status got = SUCCESS;
    for (int attempt = 0; attempt < 5 && got == SUCCESS; ++attempt) {
      memset(local_.data(), attempt, local_.size());
      got = Sync(READ, descs, 1);
    }
    ASSERT_EQ(got, TIMEOUT) << "a 64 MiB READ never exceeded 1 ms";
    LateBytesProbe probe(READ, peer_->pid(), local_.addr(), remote_, kRemoteSize);
    std::this_thread::sleep_for(std::chrono::milliseconds(kStragglerWaitMs));  // nothing may land meanwhile
    EXPECT_TRUE(probe.NothingLanded());
  }
  EXPECT_EQ(Sync(READ, {{local_.addr(), remote_, 64}}), FAILED);
}

// §6.5 "TransferAsync ... returns a non-null request handle.
// GetTransferStatus: req == nullptr is FAILED; while running SUCCESS +
// WAITING; when done SUCCESS + COMPLETED or SUCCESS + FAILED, reported once;
// a later query of the same handle, or an unknown handle, is PARAM_INVALID +
// FAILED."
TEST_P(Conformance, S6_5_AsyncStatusIsReportedOnce) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  FillPattern(local_.data(), 1 << 20, 42);
  TransferReq req = nullptr;
  ASSERT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 1 << 20}}, TransferArgs{}, req),
            SUCCESS);
  ASSERT_NE(req, nullptr);
  Status rc = FAILED;
  EXPECT_EQ(WaitFor(req, &rc), TransferStatus::COMPLETED);
  EXPECT_EQ(rc, SUCCESS);
  EXPECT_EQ(RemoteHash(0, 1 << 20), Hash(local_.data(), 1 << 20));
  TransferStatus st = TransferStatus::COMPLETED;
  EXPECT_EQ(engine_.GetTransferStatus(req, st), PARAM_INVALID);
  EXPECT_EQ(st, TransferStatus::FAILED);
  TransferReq null_req = nullptr;
  EXPECT_EQ(engine_.GetTransferStatus(null_req, st), FAILED);
  st = TransferStatus::COMPLETED;
  EXPECT_EQ(engine_.GetTransferStatus(reinterpret_cast<TransferReq>(uintptr_t{0xdeadbeef}), st), PARAM_INVALID);
  EXPECT_EQ(st, TransferStatus::FAILED);
}

// §6.5 (continued): async requests complete while the target process calls
// nothing (its engine's own threads serve them, or nothing is needed).
TEST_P(Conformance, S6_5_AsyncRequestsCompleteWhileTheTargetCallsNothing) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  FillPattern(local_.data(), local_.size(), 8);
  std::vector<TransferReq> reqs;
  for (int i = 0; i < 64; ++i) {
    TransferReq r = nullptr;
    const size_t off = static_cast<size_t>(i) * 65536;
    ASSERT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {{local_.addr() + off, remote_ + off, 65536}},
                                    TransferArgs{}, r),
              SUCCESS);
    reqs.push_back(r);
  }
  for (TransferReq r : reqs) EXPECT_EQ(WaitFor(r), TransferStatus::COMPLETED);
  EXPECT_EQ(RemoteHash(0, 64 * 65536), Hash(local_.data(), 64 * 65536));
}

// §6.5 "A failed transfer never stays WAITING": the target dies under
// outstanding requests; every one of them ends, none as WAITING, and a
// request that really failed must be among them.
//
// On the network lanes the target is stopped first, so that every request is
// still in flight when it dies: each must end FAILED (not COMPLETED: the
// rule must be exercised).  On the one-sided lanes a transfer completes
// inside the call, so none can be in flight; there a child of the target
// keeps its sockets open past its death (peer command "holdfds"), so this
// engine cannot learn of the death from a closed connection and refuse the
// next request early: one more request, posted after the death, must be
// accepted and end FAILED (the transport finds the target gone).
TEST_P(Conformance, S6_5_AFailedTransferNeverStaysWaiting) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  if (lane().one_sided) {
    ASSERT_EQ(peer_->Command("holdfds 3000"), "ok");
  } else {
    peer_->Stop();
  }
  std::vector<TransferReq> reqs;
  for (int i = 0; i < 32; ++i) {
    TransferReq r = nullptr;
    const size_t off = static_cast<size_t>(i) * 131072;
    ASSERT_EQ(engine_.TransferAsync(peer_name_.c_str(), i % 2 ? READ : WRITE,
                                    {{local_.addr() + off, remote_ + off, 131072}}, TransferArgs{}, r),
              SUCCESS);
    reqs.push_back(r);
  }
  peer_->KillAndWait();
  size_t failed = 0;
  for (TransferReq r : reqs) {
    Status rc = FAILED;
    const TransferStatus st = WaitFor(r, &rc);
    EXPECT_EQ(rc, SUCCESS);
    EXPECT_NE(st, TransferStatus::WAITING);
    failed += st == TransferStatus::FAILED;
  }
  if (!lane().one_sided) {
    EXPECT_EQ(failed, reqs.size()) << "requests to a stopped target completed, or did not fail when it died";
    return;
  }
  // The mapped path checks that its peer lives at most every 100 us
  // (hccs/mapped_mover.h): let that pass since the last request.
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  TransferReq late = nullptr;
  ASSERT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 131072}}, TransferArgs{}, late),
            SUCCESS)
      << "refused before the transport was asked: the death was seen early, the rule is not exercised";
  Status rc = FAILED;
  EXPECT_EQ(WaitFor(late, &rc), TransferStatus::FAILED) << "a transfer to a dead target did not fail";
  EXPECT_EQ(rc, SUCCESS);
}

// §6.2 (exception) "with a buffer pool on, an unregistered local host range
// is staged through the pool's registered buffers (sync only; async never
// stages)."
TEST_P(Conformance, S6_2_UnregisteredLocalMemoryIsStagedBySyncCallsOnly) {
  InitLocal({{"adxl.BufferPool", "2:1"}});
  ASSERT_EQ(Connect(), SUCCESS);
  std::vector<uint8_t> plain(3 << 20);  // never registered, bigger than the pool
  FillPattern(plain.data(), plain.size(), 61);
  const uintptr_t p = reinterpret_cast<uintptr_t>(plain.data());
  ASSERT_EQ(Sync(WRITE, {{p, remote_ + 100, plain.size()}}), SUCCESS);
  EXPECT_EQ(RemoteHash(100, plain.size()), Hash(plain.data(), plain.size()));
  memset(plain.data(), 0, plain.size());
  ASSERT_EQ(Sync(READ, {{p, remote_ + 100, plain.size()}}), SUCCESS);
  EXPECT_EQ(Hash(plain.data(), plain.size()), RemoteHash(100, plain.size()));
  TransferReq req = nullptr;
  EXPECT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE, {{p, remote_, 4096}}, TransferArgs{}, req), PARAM_INVALID);
}

}  // namespace
