// Registry: this engine's registrations and their rules (docs/contract.md §4).
#include "memory/registry.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"  // completes TransportMem, which ~LocalRegion needs

namespace adxl {
namespace {

using Piece = Registry::Table::Piece;

std::shared_ptr<LocalRegion> MakeRegion(uintptr_t addr, size_t len, MemType type) {
  auto r = std::make_shared<LocalRegion>();
  r->addr = addr;
  r->len = len;
  r->type = type;
  return r;
}

// Checks and inserts a new region as the engine does; returns it (null when
// Check refused or found an existing one).
std::shared_ptr<LocalRegion> Add(Registry *reg, uintptr_t addr, size_t len, MemType type) {
  std::shared_ptr<LocalRegion> existing;
  std::string why;
  Status s = reg->Check(addr, len, type, &existing, &why);
  EXPECT_EQ(s, SUCCESS) << "[" << addr << ", +" << len << ") refused: " << why;
  EXPECT_EQ(existing, nullptr);
  if (s != SUCCESS || existing != nullptr) return nullptr;
  auto r = MakeRegion(addr, len, type);
  reg->Insert(r);
  return r;
}

// Runs Check on a range that must be refused with `want`; returns *why.
std::string ExpectRefused(const Registry &reg, uintptr_t addr, size_t len, MemType type, Status want) {
  std::shared_ptr<LocalRegion> existing = MakeRegion(1, 1, MEM_HOST);  // must be reset
  std::string why;
  EXPECT_EQ(reg.Check(addr, len, type, &existing, &why), want) << "[" << addr << ", +" << len << ")";
  EXPECT_EQ(existing, nullptr);
  EXPECT_FALSE(why.empty());
  return why;
}

Registry::Limits SmallLimits() {
  Registry::Limits l;
  l.max_registrations = 3;
  l.max_device_bytes = 1000;
  l.max_host_bytes = 2000;
  return l;
}

TEST(RegistryTest, DefaultLimitsMatchSpec) {
  Registry::Limits l;
  EXPECT_EQ(l.max_registrations, 256u);
  EXPECT_EQ(l.max_device_bytes, 50ull << 30);
  EXPECT_EQ(l.max_host_bytes, 1ull << 40);
}

TEST(RegistryTest, EmptyRegistry) {
  Registry reg{Registry::Limits{}};
  EXPECT_EQ(reg.count(), 0u);
  EXPECT_EQ(reg.bytes(MEM_HOST), 0u);
  EXPECT_EQ(reg.bytes(MEM_DEVICE), 0u);
  EXPECT_EQ(reg.Find(1), nullptr);
  EXPECT_TRUE(reg.All().empty());
  std::vector<Piece> out;
  EXPECT_FALSE(reg.Resolve(0x1000, 1, &out));
}

TEST(RegistryTest, CheckAcceptsNewRange) {
  Registry reg{Registry::Limits{}};
  std::shared_ptr<LocalRegion> existing = MakeRegion(1, 1, MEM_HOST);
  std::string why;
  EXPECT_EQ(reg.Check(0x1000, 0x100, MEM_HOST, &existing, &why), SUCCESS);
  EXPECT_EQ(existing, nullptr);
  // Check alone changes nothing.
  EXPECT_EQ(reg.count(), 0u);
  EXPECT_EQ(reg.bytes(MEM_HOST), 0u);
}

TEST(RegistryTest, InsertAssignsIdAndFindReturnsIt) {
  Registry reg{Registry::Limits{}};
  auto r = Add(&reg, 0x1000, 0x100, MEM_HOST);
  ASSERT_NE(r, nullptr);
  EXPECT_NE(r->id, 0u);
  EXPECT_EQ(reg.Find(r->id), r);
  EXPECT_EQ(reg.count(), 1u);
  EXPECT_EQ(reg.Find(r->id + 1), nullptr);
  EXPECT_EQ(reg.Find(0), nullptr);
}

TEST(RegistryTest, AllListsEveryRegion) {
  Registry reg{Registry::Limits{}};
  auto a = Add(&reg, 0x1000, 0x100, MEM_HOST);
  auto b = Add(&reg, 0x1000, 0x100, MEM_DEVICE);
  auto c = Add(&reg, 0x5000, 0x10, MEM_HOST);
  std::vector<std::shared_ptr<LocalRegion>> all = reg.All();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0], a);  // in id order
  EXPECT_EQ(all[1], b);
  EXPECT_EQ(all[2], c);
}

TEST(RegistryTest, IdenticalRangeReturnsExisting) {
  Registry reg{Registry::Limits{}};
  auto r = Add(&reg, 0x1000, 0x100, MEM_HOST);
  ASSERT_NE(r, nullptr);
  std::shared_ptr<LocalRegion> existing;
  std::string why;
  EXPECT_EQ(reg.Check(0x1000, 0x100, MEM_HOST, &existing, &why), SUCCESS);
  EXPECT_EQ(existing, r);
  EXPECT_EQ(reg.count(), 1u);
}

TEST(RegistryTest, IdenticalRangeReturnsExistingEvenAtTheLimits) {
  // Re-registering adds nothing, so it is not refused by a full registry.
  Registry::Limits l;
  l.max_registrations = 1;
  l.max_host_bytes = 0x100;
  Registry reg(l);
  auto r = Add(&reg, 0x1000, 0x100, MEM_HOST);
  ASSERT_NE(r, nullptr);
  std::shared_ptr<LocalRegion> existing;
  std::string why;
  EXPECT_EQ(reg.Check(0x1000, 0x100, MEM_HOST, &existing, &why), SUCCESS) << why;
  EXPECT_EQ(existing, r);
}

TEST(RegistryTest, OverlappingSameTypeIsParamInvalid) {
  Registry reg{Registry::Limits{}};
  ASSERT_NE(Add(&reg, 0x1000, 0x100, MEM_HOST), nullptr);
  ExpectRefused(reg, 0x1000, 0x80, MEM_HOST, PARAM_INVALID);   // same start, shorter
  ExpectRefused(reg, 0x1000, 0x200, MEM_HOST, PARAM_INVALID);  // same start, longer
  ExpectRefused(reg, 0x1010, 0x10, MEM_HOST, PARAM_INVALID);   // contained
  ExpectRefused(reg, 0x0f00, 0x400, MEM_HOST, PARAM_INVALID);  // containing
  ExpectRefused(reg, 0x0f80, 0x100, MEM_HOST, PARAM_INVALID);  // partial, left
  ExpectRefused(reg, 0x10ff, 0x100, MEM_HOST, PARAM_INVALID);  // partial, right
  EXPECT_EQ(reg.count(), 1u);
  EXPECT_EQ(reg.bytes(MEM_HOST), 0x100u);
}

TEST(RegistryTest, SameRangeDifferentTypeIsAllowed) {
  Registry reg{Registry::Limits{}};
  auto host = Add(&reg, 0x1000, 0x100, MEM_HOST);
  auto dev = Add(&reg, 0x1000, 0x100, MEM_DEVICE);
  ASSERT_NE(host, nullptr);
  ASSERT_NE(dev, nullptr);
  EXPECT_NE(host->id, dev->id);
  EXPECT_EQ(reg.count(), 2u);
  EXPECT_EQ(reg.bytes(MEM_HOST), 0x100u);
  EXPECT_EQ(reg.bytes(MEM_DEVICE), 0x100u);
}

TEST(RegistryTest, OverlapWithOtherTypeIsAllowed) {
  Registry reg{Registry::Limits{}};
  ASSERT_NE(Add(&reg, 0x1000, 0x100, MEM_HOST), nullptr);
  EXPECT_NE(Add(&reg, 0x1080, 0x100, MEM_DEVICE), nullptr);
}

TEST(RegistryTest, IdenticalRangeOfOtherTypeIsNotReturnedAsExisting) {
  Registry reg{Registry::Limits{}};
  ASSERT_NE(Add(&reg, 0x1000, 0x100, MEM_HOST), nullptr);
  std::shared_ptr<LocalRegion> existing;
  std::string why;
  EXPECT_EQ(reg.Check(0x1000, 0x100, MEM_DEVICE, &existing, &why), SUCCESS);
  EXPECT_EQ(existing, nullptr);
}

TEST(RegistryTest, AdjacentRangesAreFine) {
  Registry reg{Registry::Limits{}};
  ASSERT_NE(Add(&reg, 0x1000, 0x100, MEM_HOST), nullptr);
  EXPECT_NE(Add(&reg, 0x1100, 0x100, MEM_HOST), nullptr);  // after
  EXPECT_NE(Add(&reg, 0x0f00, 0x100, MEM_HOST), nullptr);  // before
  EXPECT_EQ(reg.count(), 3u);
  EXPECT_EQ(reg.bytes(MEM_HOST), 0x300u);
}

TEST(RegistryTest, CountLimitIsResourceExhaustedAndChangesNothing) {
  Registry reg(SmallLimits());
  ASSERT_NE(Add(&reg, 0x1000, 1, MEM_HOST), nullptr);
  ASSERT_NE(Add(&reg, 0x2000, 1, MEM_DEVICE), nullptr);
  ASSERT_NE(Add(&reg, 0x3000, 1, MEM_HOST), nullptr);
  ExpectRefused(reg, 0x4000, 1, MEM_HOST, RESOURCE_EXHAUSTED);
  ExpectRefused(reg, 0x4000, 1, MEM_DEVICE, RESOURCE_EXHAUSTED);  // the count is over both types
  EXPECT_EQ(reg.count(), 3u);
  EXPECT_EQ(reg.bytes(MEM_HOST), 2u);
  EXPECT_EQ(reg.bytes(MEM_DEVICE), 1u);
  std::vector<Piece> out;
  EXPECT_FALSE(reg.Resolve(0x4000, 1, &out));
}

TEST(RegistryTest, CountLimitFreesUpAfterErase) {
  Registry reg(SmallLimits());
  auto a = Add(&reg, 0x1000, 1, MEM_HOST);
  ASSERT_NE(Add(&reg, 0x2000, 1, MEM_HOST), nullptr);
  ASSERT_NE(Add(&reg, 0x3000, 1, MEM_HOST), nullptr);
  ExpectRefused(reg, 0x4000, 1, MEM_HOST, RESOURCE_EXHAUSTED);
  ASSERT_NE(reg.Erase(a->id), nullptr);
  EXPECT_NE(Add(&reg, 0x4000, 1, MEM_HOST), nullptr);
}

TEST(RegistryTest, HostBytesLimitIsResourceExhaustedAndChangesNothing) {
  Registry reg(SmallLimits());  // host 2000 bytes
  ASSERT_NE(Add(&reg, 0x10000, 1500, MEM_HOST), nullptr);
  ExpectRefused(reg, 0x20000, 501, MEM_HOST, RESOURCE_EXHAUSTED);
  EXPECT_EQ(reg.count(), 1u);
  EXPECT_EQ(reg.bytes(MEM_HOST), 1500u);
  // Exactly up to the limit is fine.
  EXPECT_NE(Add(&reg, 0x20000, 500, MEM_HOST), nullptr);
  EXPECT_EQ(reg.bytes(MEM_HOST), 2000u);
  ExpectRefused(reg, 0x30000, 1, MEM_HOST, RESOURCE_EXHAUSTED);
  // The device budget is separate.
  EXPECT_NE(Add(&reg, 0x30000, 1, MEM_DEVICE), nullptr);
}

TEST(RegistryTest, DeviceBytesLimitIsResourceExhaustedAndChangesNothing) {
  Registry reg(SmallLimits());  // device 1000 bytes
  ASSERT_NE(Add(&reg, 0x10000, 600, MEM_DEVICE), nullptr);
  ExpectRefused(reg, 0x20000, 401, MEM_DEVICE, RESOURCE_EXHAUSTED);
  EXPECT_EQ(reg.count(), 1u);
  EXPECT_EQ(reg.bytes(MEM_DEVICE), 600u);
  EXPECT_EQ(reg.bytes(MEM_HOST), 0u);
  EXPECT_NE(Add(&reg, 0x20000, 400, MEM_DEVICE), nullptr);
  EXPECT_EQ(reg.bytes(MEM_DEVICE), 1000u);
  // The host budget is separate: 1500 host bytes fit although the device is full.
  EXPECT_NE(Add(&reg, 0x30000, 1500, MEM_HOST), nullptr);
}

TEST(RegistryTest, SingleRegionLargerThanLimitIsResourceExhausted) {
  Registry reg(SmallLimits());
  ExpectRefused(reg, 0x1000, 2001, MEM_HOST, RESOURCE_EXHAUSTED);
  ExpectRefused(reg, 0x1000, 1001, MEM_DEVICE, RESOURCE_EXHAUSTED);
  ExpectRefused(reg, 0x1000, SIZE_MAX / 2, MEM_HOST, RESOURCE_EXHAUSTED);
  EXPECT_EQ(reg.count(), 0u);
}

TEST(RegistryTest, BytesLimitFreesUpAfterErase) {
  Registry reg(SmallLimits());
  auto a = Add(&reg, 0x10000, 2000, MEM_HOST);
  ASSERT_NE(a, nullptr);
  ExpectRefused(reg, 0x20000, 1, MEM_HOST, RESOURCE_EXHAUSTED);
  ASSERT_NE(reg.Erase(a->id), nullptr);
  EXPECT_EQ(reg.bytes(MEM_HOST), 0u);
  EXPECT_NE(Add(&reg, 0x20000, 2000, MEM_HOST), nullptr);
}

TEST(RegistryTest, OverlapIsReportedBeforeLimits) {
  // A full registry still says PARAM_INVALID for an overlapping range.
  Registry::Limits l;
  l.max_registrations = 1;
  Registry reg(l);
  ASSERT_NE(Add(&reg, 0x1000, 0x100, MEM_HOST), nullptr);
  ExpectRefused(reg, 0x1080, 0x100, MEM_HOST, PARAM_INVALID);
}

TEST(RegistryTest, IdsIncreaseAndAreNeverReused) {
  Registry reg{Registry::Limits{}};
  auto a = Add(&reg, 0x1000, 0x100, MEM_HOST);
  auto b = Add(&reg, 0x2000, 0x100, MEM_DEVICE);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_GT(b->id, a->id);
  const uint64_t b_id = b->id;
  ASSERT_EQ(reg.Erase(b_id), b);
  auto c = Add(&reg, 0x2000, 0x100, MEM_DEVICE);  // the very same range again
  ASSERT_NE(c, nullptr);
  EXPECT_GT(c->id, b_id);
  EXPECT_EQ(reg.Find(b_id), nullptr);  // the old handle stays dead
  ASSERT_EQ(reg.Erase(a->id), a);
  ASSERT_EQ(reg.Erase(c->id), c);
  auto d = Add(&reg, 0x1000, 0x100, MEM_HOST);
  ASSERT_NE(d, nullptr);
  EXPECT_GT(d->id, c->id);
}

TEST(RegistryTest, EraseRemovesRegionAndAccounting) {
  Registry reg{Registry::Limits{}};
  auto a = Add(&reg, 0x1000, 0x100, MEM_HOST);
  auto b = Add(&reg, 0x2000, 0x300, MEM_HOST);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reg.bytes(MEM_HOST), 0x400u);
  EXPECT_EQ(reg.Erase(a->id), a);
  EXPECT_EQ(reg.count(), 1u);
  EXPECT_EQ(reg.bytes(MEM_HOST), 0x300u);
  EXPECT_EQ(reg.Find(a->id), nullptr);
  std::vector<Piece> out;
  EXPECT_FALSE(reg.Resolve(0x1000, 1, &out));
  // The range is free again: a different, overlapping one may be added.
  EXPECT_NE(Add(&reg, 0x1080, 0x100, MEM_HOST), nullptr);
}

TEST(RegistryTest, EraseUnknownOrTwiceReturnsNull) {
  Registry reg{Registry::Limits{}};
  auto a = Add(&reg, 0x1000, 0x100, MEM_HOST);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reg.Erase(a->id + 100), nullptr);
  EXPECT_EQ(reg.count(), 1u);
  EXPECT_EQ(reg.Erase(a->id), a);
  EXPECT_EQ(reg.Erase(a->id), nullptr);
  EXPECT_EQ(reg.count(), 0u);
  EXPECT_EQ(reg.bytes(MEM_HOST), 0u);
}

TEST(RegistryTest, EraseIgnoresRefs) {
  Registry reg{Registry::Limits{}};
  auto a = Add(&reg, 0x1000, 0x100, MEM_HOST);
  ASSERT_NE(a, nullptr);
  a->refs = 3;
  EXPECT_EQ(reg.Erase(a->id), a);
  EXPECT_EQ(reg.count(), 0u);
}

TEST(RegistryTest, ErasedRegionStaysAliveWhileHeld) {
  Registry reg{Registry::Limits{}};
  std::shared_ptr<LocalRegion> held = Add(&reg, 0x1000, 0x100, MEM_HOST);
  ASSERT_NE(held, nullptr);
  const uint64_t id = held->id;
  reg.Erase(id);
  EXPECT_EQ(held->addr, 0x1000u);
  EXPECT_EQ(held->id, id);
}

TEST(RegistryTest, BytesAccountingPerType) {
  Registry reg{Registry::Limits{}};
  ASSERT_NE(Add(&reg, 0x1000, 10, MEM_HOST), nullptr);
  ASSERT_NE(Add(&reg, 0x2000, 20, MEM_HOST), nullptr);
  ASSERT_NE(Add(&reg, 0x1000, 300, MEM_DEVICE), nullptr);
  EXPECT_EQ(reg.bytes(MEM_HOST), 30u);
  EXPECT_EQ(reg.bytes(MEM_DEVICE), 300u);
}

TEST(RegistryTest, ResolveWithinOneRegion) {
  Registry reg{Registry::Limits{}};
  auto a = Add(&reg, 0x1000, 0x100, MEM_HOST);
  std::vector<Piece> out;
  ASSERT_TRUE(reg.Resolve(0x1010, 0x20, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].addr, 0x1010u);
  EXPECT_EQ(out[0].len, 0x20u);
  EXPECT_EQ(out[0].entry->value, a);
}

TEST(RegistryTest, ResolveSpanningAdjacentRegions) {
  Registry reg{Registry::Limits{}};
  auto a = Add(&reg, 0x1000, 0x100, MEM_HOST);
  auto b = Add(&reg, 0x1100, 0x100, MEM_HOST);
  auto c = Add(&reg, 0x1200, 0x100, MEM_HOST);
  std::vector<Piece> out;
  ASSERT_TRUE(reg.Resolve(0x10f0, 0x120, &out));  // [0x10f0, 0x1210)
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].addr, 0x10f0u);
  EXPECT_EQ(out[0].len, 0x10u);
  EXPECT_EQ(out[0].entry->value, a);
  EXPECT_EQ(out[1].addr, 0x1100u);
  EXPECT_EQ(out[1].len, 0x100u);
  EXPECT_EQ(out[1].entry->value, b);
  EXPECT_EQ(out[2].addr, 0x1200u);
  EXPECT_EQ(out[2].len, 0x10u);
  EXPECT_EQ(out[2].entry->value, c);
}

TEST(RegistryTest, ResolveFindsDeviceRegion) {
  Registry reg{Registry::Limits{}};
  ASSERT_NE(Add(&reg, 0x1000, 0x100, MEM_HOST), nullptr);
  auto dev = Add(&reg, 0x9000, 0x100, MEM_DEVICE);
  std::vector<Piece> out;
  ASSERT_TRUE(reg.Resolve(0x9010, 0x10, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].entry->value, dev);
  EXPECT_EQ(out[0].entry->value->type, MEM_DEVICE);
}

TEST(RegistryTest, ResolveFallsBackFromHostToDeviceTable) {
  // The range starts in a host region but runs past it; the device table
  // holds it whole, so it resolves there, with *out holding only device pieces.
  Registry reg{Registry::Limits{}};
  ASSERT_NE(Add(&reg, 0x1000, 0x80, MEM_HOST), nullptr);
  auto dev = Add(&reg, 0x1000, 0x100, MEM_DEVICE);
  std::vector<Piece> out;
  ASSERT_TRUE(reg.Resolve(0x1040, 0x80, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].addr, 0x1040u);
  EXPECT_EQ(out[0].len, 0x80u);
  EXPECT_EQ(out[0].entry->value, dev);
}

TEST(RegistryTest, ResolveDoesNotMixTypes) {
  // A host region adjacent to a device region does not make one range.
  Registry reg{Registry::Limits{}};
  ASSERT_NE(Add(&reg, 0x1000, 0x100, MEM_HOST), nullptr);
  ASSERT_NE(Add(&reg, 0x1100, 0x100, MEM_DEVICE), nullptr);
  std::vector<Piece> out = {Piece{1, 1, nullptr}};
  EXPECT_FALSE(reg.Resolve(0x10f0, 0x20, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].addr, 1u);
}

TEST(RegistryTest, ResolveFailsOnUnregisteredBytes) {
  Registry reg{Registry::Limits{}};
  ASSERT_NE(Add(&reg, 0x1000, 0x100, MEM_HOST), nullptr);
  ASSERT_NE(Add(&reg, 0x1200, 0x100, MEM_HOST), nullptr);
  std::vector<Piece> out;
  EXPECT_FALSE(reg.Resolve(0x10f0, 0x200, &out));  // gap at 0x1100
  EXPECT_FALSE(reg.Resolve(0x0fff, 2, &out));      // one byte before
  EXPECT_FALSE(reg.Resolve(0x12ff, 2, &out));      // one byte past the end
  EXPECT_FALSE(reg.Resolve(0x1000, 0, &out));      // zero length
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace adxl
