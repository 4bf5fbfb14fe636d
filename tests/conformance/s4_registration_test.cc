// docs/contract.md §4 (memory registration), on every lane.
#include "conformance.h"

using namespace adxl;
using namespace adxl_test;

namespace {

// §4.1 "RegisterMem: addr == 0, len == 0, or addr + len overflowing is
// PARAM_INVALID; a type outside MemType is PARAM_INVALID."
TEST_P(Conformance, S4_1_InvalidRangesAndTypesAreParamInvalid) {
  InitLocal();
  const uintptr_t base = NewLocalMemory(65536);
  MemHandle h = nullptr;
  EXPECT_EQ(engine_.RegisterMem({0, 4096}, MEM_HOST, h), PARAM_INVALID);
  EXPECT_EQ(engine_.RegisterMem({base, 0}, MEM_HOST, h), PARAM_INVALID);
  EXPECT_EQ(engine_.RegisterMem({UINTPTR_MAX - 100, 4096}, MEM_HOST, h), PARAM_INVALID);
  EXPECT_EQ(engine_.RegisterMem({base, 4096}, static_cast<MemType>(2), h), PARAM_INVALID);
  EXPECT_EQ(engine_.RegisterMem({base, 4096}, static_cast<MemType>(-1), h), PARAM_INVALID);
  EXPECT_EQ(engine_.RegisterMem({base, 4096}, MEM_HOST, h), SUCCESS);  // nothing was half-registered
}

// §4.2 "The exact same range and type registered again returns SUCCESS and
// the same handle (reference counted: it stays until deregistered as often)."
TEST_P(Conformance, S4_2_IdenticalRegistrationIsTheSameHandleAndCounted) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  auto first = peer_->Ok("reg 0");  // the fixture registered it once already
  auto again = peer_->Ok("reg 0");
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(again, first);
  ASSERT_EQ(peer_->Command("dereg " + first[0]), "ok");
  ASSERT_EQ(peer_->Command("dereg " + first[0]), "ok");
  EXPECT_EQ(Sync(READ, {{local_.addr(), remote_, 4096}}), SUCCESS);  // still registered once
  ASSERT_EQ(peer_->Command("dereg " + first[0]), "ok");
  EXPECT_EQ(Sync(READ, {{local_.addr(), remote_, 4096}}), PARAM_INVALID);
}

// §4.3 "A range overlapping an existing registration of the same type
// without being identical is PARAM_INVALID. Adjacent ranges are fine."
TEST_P(Conformance, S4_3_OverlapIsParamInvalidAdjacencyIsFine) {
  InitLocal();
  const uintptr_t base = NewLocalMemory(65536);
  MemHandle a, b;
  ASSERT_EQ(engine_.RegisterMem({base + 8192, 8192}, MEM_HOST, a), SUCCESS);
  EXPECT_EQ(engine_.RegisterMem({base + 4096, 8192}, MEM_HOST, b), PARAM_INVALID);   // overlaps the start
  EXPECT_EQ(engine_.RegisterMem({base + 12288, 8192}, MEM_HOST, b), PARAM_INVALID);  // overlaps the end
  EXPECT_EQ(engine_.RegisterMem({base, 65536}, MEM_HOST, b), PARAM_INVALID);         // contains it
  EXPECT_EQ(engine_.RegisterMem({base + 9000, 100}, MEM_HOST, b), PARAM_INVALID);    // inside it
  EXPECT_EQ(engine_.RegisterMem({base + 8192, 4096}, MEM_HOST, b), PARAM_INVALID);   // same start, shorter
  EXPECT_EQ(engine_.RegisterMem({base, 8192}, MEM_HOST, b), SUCCESS);                // adjacent below
  EXPECT_EQ(engine_.RegisterMem({base + 16384, 8192}, MEM_HOST, b), SUCCESS);        // adjacent above
}

// §4.4 "Transfers may use any sub-range of registered memory, and one
// descriptor may span several adjacent registrations."
TEST_P(Conformance, S4_4_DescriptorsUseSubRangesAndSpanAdjacentRegistrations) {
  InitLocal();
  // Remote: a second buffer registered as three adjacent 1 MiB pieces, and
  // a page after them that is not registered (a block of its own could lie
  // right before another registered one).
  auto a = peer_->Ok(AllocCommand() + std::to_string((3 << 20) + 4096));
  ASSERT_EQ(a.size(), 2u);
  const uintptr_t r2 = std::stoull(a[1]);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(peer_->Ok("reg 1 " + std::to_string(i << 20) + " 1048576").size(), 1u);
  }
  ASSERT_EQ(Connect(), SUCCESS);
  // Local: two adjacent halves.
  const uintptr_t l2 = NewLocalMemory(2 << 20);
  MemHandle h1, h2;
  ASSERT_EQ(engine_.RegisterMem({l2, 1 << 20}, MEM_HOST, h1), SUCCESS);
  ASSERT_EQ(engine_.RegisterMem({l2 + (1 << 20), 1 << 20}, MEM_HOST, h2), SUCCESS);
  auto *l2p = reinterpret_cast<uint8_t *>(l2);
  FillPattern(l2p, 2 << 20, 5);
  // Crosses the local boundary at +1 MiB and the remote ones at +1 and +2 MiB.
  const size_t len = (3 << 19) + 777;
  const TransferOpDesc d{l2 + (1 << 19) - 1000, r2 + (1 << 20) - 5000, len};
  ASSERT_EQ(Sync(WRITE, {d}), SUCCESS);
  const uint64_t want = Hash(l2p + (1 << 19) - 1000, len);
  EXPECT_EQ(RemoteHash((1 << 20) - 5000, len, 1), want);
  memset(l2p, 0, 2 << 20);
  ASSERT_EQ(Sync(READ, {d}), SUCCESS);
  EXPECT_EQ(Hash(l2p + (1 << 19) - 1000, len), want);
  // A span running past the last piece, into the unregistered page, is refused.
  EXPECT_EQ(Sync(WRITE, {{l2, r2 + (3 << 20) - 10, 20}}), PARAM_INVALID);
}

// §4.5 "Limits, per process, each overridable by an option of the project's
// own ...: at most 256 registrations, ... Past a limit: RESOURCE_EXHAUSTED,
// and nothing changes."
TEST_P(Conformance, S4_5_PastALimitIsResourceExhaustedAndNothingChanges) {
  InitLocal({{"adxl.MaxRegistrations", "3"}, {"adxl.MaxHostMemory", std::to_string(kLocalSize + 65536).c_str()}});
  ASSERT_EQ(Connect(), SUCCESS);
  const uintptr_t base = NewLocalMemory(4 * 65536);
  MemHandle h[3];
  ASSERT_EQ(engine_.RegisterMem({base, 4096}, MEM_HOST, h[0]), SUCCESS);
  // The byte limit: 64 KiB left; 64 KiB + 4 KiB more is too much.
  EXPECT_EQ(engine_.RegisterMem({base + 65536, 65536}, MEM_HOST, h[1]), RESOURCE_EXHAUSTED);
  ASSERT_EQ(engine_.RegisterMem({base + 65536, 4096}, MEM_HOST, h[1]), SUCCESS);
  // The count limit (3: local_, base, base + 64 KiB).
  EXPECT_EQ(engine_.RegisterMem({base + 2 * 65536, 4096}, MEM_HOST, h[2]), RESOURCE_EXHAUSTED);
  MemHandle same;
  EXPECT_EQ(engine_.RegisterMem({base, 4096}, MEM_HOST, same), SUCCESS);  // identical: not a new one
  EXPECT_EQ(same, h[0]);
  // Nothing changed: the registrations and the link still work.
  EXPECT_EQ(Sync(WRITE, {{base, remote_, 4096}, {local_.addr(), remote_ + 4096, 4096}}), SUCCESS);
  EXPECT_EQ(engine_.DeregisterMem(h[1]), SUCCESS);
  EXPECT_EQ(engine_.RegisterMem({base + 2 * 65536, 4096}, MEM_HOST, h[2]), SUCCESS);
}

// §4.6 "Device memory is whatever the device runtime allocated; an engine
// that cannot handle a device type says UNSUPPORTED ...".  Host memory
// offered as MEM_DEVICE is never accepted, and what is registered stays.
TEST_P(Conformance, S4_6_DeviceTypeOnHostMemoryIsRefusedAndNothingIsLost) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  const uintptr_t base = NewLocalMemory(65536);
  MemHandle h = nullptr;
  const Status st = engine_.RegisterMem({base, 65536}, MEM_DEVICE, h);
  EXPECT_TRUE(st == UNSUPPORTED || st == PARAM_INVALID) << st;
  EXPECT_EQ(Sync(READ, {{local_.addr(), remote_, 4096}}), SUCCESS);
}

// §4.7 "A peer can use a new region as soon as RegisterMem returned (pushed
// without waiting, refreshed on a miss); a peer never uses a region after
// DeregisterMem returned (pushed, acknowledged or cut off)."
TEST_P(Conformance, S4_7_RegistrationsWhileLinkedAreUsableAtOnceAndWithdrawnForGood) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  auto a = peer_->Ok(AllocCommand() + std::to_string(65536));
  ASSERT_EQ(a.size(), 2u);
  const uintptr_t r2 = std::stoull(a[1]);
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), r2, 4096}}), PARAM_INVALID);
  auto h = peer_->Ok("reg 1");  // returns without waiting for us: our next transfer refreshes on the miss
  ASSERT_EQ(h.size(), 1u);
  FillPattern(local_.data(), 4096, 3);
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), r2, 4096}}), SUCCESS);
  EXPECT_EQ(RemoteHash(0, 4096, 1), Hash(local_.data(), 4096));
  ASSERT_EQ(peer_->Command("dereg " + h[0]), "ok");  // returns once we stopped using it
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), r2, 4096}}), PARAM_INVALID);
  EXPECT_EQ(Sync(READ, {{local_.addr(), r2, 4096}}), PARAM_INVALID);
}

// §4.8 "DeregisterMem(nullptr) is PARAM_INVALID; an unknown handle or a
// second deregistration is SUCCESS and does nothing."
TEST_P(Conformance, S4_8_DeregisterNullIsParamInvalidUnknownIsANoOp) {
  InitLocal({{"adxl.BufferPool", "0:0"}});  // unregistered local memory is refused, not staged
  ASSERT_EQ(Connect(), SUCCESS);
  EXPECT_EQ(engine_.DeregisterMem(nullptr), PARAM_INVALID);
  EXPECT_EQ(engine_.DeregisterMem(reinterpret_cast<MemHandle>(uintptr_t{987654})), SUCCESS);
  const uintptr_t base = NewLocalMemory(65536);
  MemHandle h;
  ASSERT_EQ(engine_.RegisterMem({base, 65536}, MEM_HOST, h), SUCCESS);
  EXPECT_EQ(engine_.DeregisterMem(h), SUCCESS);
  EXPECT_EQ(engine_.DeregisterMem(h), SUCCESS);
  // Nothing else went with them.
  EXPECT_EQ(Sync(READ, {{local_.addr(), remote_, 4096}}), SUCCESS);
  EXPECT_EQ(Sync(READ, {{base, remote_, 4096}}), PARAM_INVALID);
}

}  // namespace

// MemDesc::local_only: the owner's own memory for the local side of its
// transfers, never advertised, so a peer cannot reach it.
TEST_P(Conformance, S4_9_LocalOnlyIsUsableLocallyAndUnreachableByPeers) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  // The peer's local_only region: not reachable from here, before or after a
  // table refresh (the miss of the first transfer refreshes it).
  auto a = peer_->Ok(AllocCommand() + std::to_string(65536));
  ASSERT_EQ(a.size(), 2u);
  const uintptr_t hidden = std::stoull(a[1]);
  ASSERT_EQ(peer_->Ok("reglocal " + a[0]).size(), 1u);
  EXPECT_EQ(Sync(READ, {{local_.addr(), hidden, 4096}}), PARAM_INVALID);
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), hidden, 4096}}), PARAM_INVALID);
  // The identical range cannot be registered both ways.
  EXPECT_NE(peer_->Command("reg " + a[0]).rfind("ok", 0), 0u);
  // Our local_only region is the local side of our transfers.
  const uintptr_t mine = NewLocalMemory(65536);
  MemDesc d{};
  d.addr = mine;
  d.len = 65536;
  d.local_only = true;
  MemHandle h = nullptr;
  ASSERT_EQ(engine_.RegisterMem(d, MEM_HOST, h), SUCCESS);
  FillPattern(reinterpret_cast<uint8_t *>(mine), 4096, 7);
  ASSERT_EQ(Sync(WRITE, {{mine, remote_, 4096}}), SUCCESS);
  EXPECT_EQ(RemoteHash(0, 4096), Hash(reinterpret_cast<uint8_t *>(mine), 4096));
  ASSERT_EQ(Sync(READ, {{mine + 4096, remote_ + 4096, 4096}}), SUCCESS);
  EXPECT_EQ(Hash(reinterpret_cast<uint8_t *>(mine) + 4096, 4096), RemoteHash(4096, 4096));
  EXPECT_EQ(engine_.DeregisterMem(h), SUCCESS);
}
