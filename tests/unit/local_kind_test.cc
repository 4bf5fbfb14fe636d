// ClassifyLocal (src/memory/local_kind.h): whether a transfer's local side
// is registered (ordinary path), unregistered (buffer pool) or a mix.
#include "memory/local_kind.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"  // completes TransportMem for LocalRegion's destructor

namespace adxl {
namespace {

class LocalKindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Add(0x10000, 0x1000, MEM_HOST);
    Add(0x11000, 0x1000, MEM_HOST);  // adjacent to the first
    Add(0x40000, 0x1000, MEM_DEVICE);
  }
  void Add(uintptr_t addr, size_t len, MemType type) {
    auto r = std::make_shared<LocalRegion>();
    r->addr = addr;
    r->len = len;
    r->type = type;
    std::shared_ptr<LocalRegion> existing;
    std::string why;
    ASSERT_EQ(registry_.Check(addr, len, type, &existing, &why), SUCCESS) << why;
    registry_.Insert(r);
  }
  LocalKind Classify(const std::vector<TransferOpDesc> &descs) const { return ClassifyLocal(descs, registry_); }

  Registry registry_{Registry::Limits{}};
};

TEST_F(LocalKindTest, RangesInsideRegistrationsOfEitherTypeAreRegistered) {
  EXPECT_EQ(Classify({{0x10010, 0x90000, 0x10}, {0x40000, 0x90000, 0x1000}}), LocalKind::kRegistered);
  // Across two adjacent registrations: still registered memory.
  EXPECT_EQ(Classify({{0x10f00, 0x90000, 0x200}}), LocalKind::kRegistered);
}

TEST_F(LocalKindTest, RangesOutsideEveryRegistrationAreUnregistered) {
  EXPECT_EQ(Classify({{0x80000, 0x90000, 0x10}, {0x81000, 0x90000, 0x10}}), LocalKind::kUnregistered);
  // Running past the end of a registration: not inside registered memory.
  EXPECT_EQ(Classify({{0x11f00, 0x90000, 0x200}}), LocalKind::kUnregistered);
}

TEST_F(LocalKindTest, RegisteredAndUnregisteredTogetherAreMixed) {
  EXPECT_EQ(Classify({{0x10010, 0x90000, 0x10}, {0x80000, 0x90000, 0x10}}), LocalKind::kMixed);
  EXPECT_EQ(Classify({{0x80000, 0x90000, 0x10}, {0x10010, 0x90000, 0x10}}), LocalKind::kMixed);
}

// Descriptors the ordinary checks refuse do not count either way, so that
// those checks, not the buffer pool, report them.
TEST_F(LocalKindTest, DescriptorsTheOrdinaryChecksRefuseAreIgnored) {
  const uintptr_t kTop = ~uintptr_t{0} - 0x10;
  EXPECT_EQ(Classify({{0x10010, 0x90000, 0x10}, {0, 0x90000, 0x10}, {0x80000, 0, 0x10}, {0x80000, 0x90000, 0},
                      {kTop, 0x90000, 0x100}}),
            LocalKind::kRegistered);
  EXPECT_EQ(Classify({{0x80000, 0x90000, 0x10}, {0, 0x90000, 0x10}}), LocalKind::kUnregistered);
  EXPECT_EQ(Classify({{0, 0x90000, 0x10}}), LocalKind::kRegistered);
}

}  // namespace
}  // namespace adxl
