// BuildTransferPlan (src/core/transfer_plan.h): descriptors resolved against
// local registrations (Registry) and a peer's advertised regions
// (RemoteRegionTable) into plugin operations.  No transport: the regions carry no
// TransportMem / RemoteKey, so the operations' handles are null and the
// tests look at addresses, lengths and the region references instead.
#include "core/transfer_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"  // completes TransportMem and RemoteKey for the destructors

namespace adxl {
namespace {

class TransferPlanTest : public ::testing::Test {
 protected:
  // A local registration [addr, addr+len); returns its id.
  uint64_t AddLocal(uintptr_t addr, size_t len) {
    auto r = std::make_shared<LocalRegion>();
    r->addr = addr;
    r->len = len;
    r->type = MEM_HOST;
    std::shared_ptr<LocalRegion> existing;
    std::string why;
    EXPECT_EQ(local_.Check(addr, len, MEM_HOST, &existing, &why), SUCCESS) << why;
    local_.Insert(r);
    return r->id;
  }
  // A region the peer advertised at [addr, addr+len) with id `id`.
  void AddRemote(uintptr_t addr, size_t len, uint64_t id) {
    auto r = std::make_shared<RemoteRegion>();
    r->id = id;
    remote_.Insert(addr, len, r);
  }
  Status Build(const std::vector<TransferOpDesc> &descs) {
    plan_ = TransferPlan{};
    why_.clear();
    return BuildTransferPlan(descs, local_, remote_, &plan_, &why_);
  }
  static void ExpectOp(const adxl_plugin_iov_t &op, uint64_t local, uint64_t remote, uint64_t len) {
    EXPECT_EQ(op.local_addr, local);
    EXPECT_EQ(op.remote_addr, remote);
    EXPECT_EQ(op.length, len);
  }

  Registry local_{Registry::Limits{}};
  RemoteRegionTable remote_;
  TransferPlan plan_;
  std::string why_;
};

TEST_F(TransferPlanTest, OneDescriptorInsideOneRegionOnEachSideIsOneOperation) {
  const uint64_t lid = AddLocal(0x10000, 0x1000);
  AddRemote(0x90000, 0x1000, 7);
  ASSERT_EQ(Build({{0x10100, 0x90200, 0x80}}), SUCCESS) << why_;
  ASSERT_EQ(plan_.iov.size(), 1u);
  ExpectOp(plan_.iov[0], 0x10100, 0x90200, 0x80);
  EXPECT_EQ(plan_.bytes, 0x80u);
  ASSERT_EQ(plan_.local_refs.size(), 1u);
  EXPECT_EQ(plan_.local_refs[0]->id, lid);
  ASSERT_EQ(plan_.remote_refs.size(), 1u);
  EXPECT_EQ(plan_.remote_refs[0]->id, 7u);
  EXPECT_TRUE(why_.empty());
}

TEST_F(TransferPlanTest, WholeRegionsExactly) {
  AddLocal(0x10000, 0x1000);
  AddRemote(0x90000, 0x1000, 1);
  ASSERT_EQ(Build({{0x10000, 0x90000, 0x1000}}), SUCCESS) << why_;
  ASSERT_EQ(plan_.iov.size(), 1u);
  ExpectOp(plan_.iov[0], 0x10000, 0x90000, 0x1000);
}

// A descriptor over two adjacent local registrations is split where the
// local side crosses from one into the other; the remote side stays in step.
TEST_F(TransferPlanTest, SplitWhereTheLocalSideCrossesAdjacentRegistrations) {
  const uint64_t a = AddLocal(0x10000, 0x1000);
  const uint64_t b = AddLocal(0x11000, 0x1000);
  AddRemote(0x90000, 0x4000, 3);
  ASSERT_EQ(Build({{0x10800, 0x90000, 0x1000}}), SUCCESS) << why_;
  ASSERT_EQ(plan_.iov.size(), 2u);
  ExpectOp(plan_.iov[0], 0x10800, 0x90000, 0x800);
  ExpectOp(plan_.iov[1], 0x11000, 0x90800, 0x800);
  EXPECT_EQ(plan_.bytes, 0x1000u);
  ASSERT_EQ(plan_.local_refs.size(), 2u);
  EXPECT_EQ(plan_.local_refs[0]->id, a);
  EXPECT_EQ(plan_.local_refs[1]->id, b);
  EXPECT_EQ(plan_.remote_refs.size(), 1u);
}

TEST_F(TransferPlanTest, SplitWhereTheRemoteSideCrossesAdjacentRegions) {
  AddLocal(0x10000, 0x4000);
  AddRemote(0x90000, 0x1000, 1);
  AddRemote(0x91000, 0x1000, 2);
  ASSERT_EQ(Build({{0x10000, 0x90c00, 0x800}}), SUCCESS) << why_;
  ASSERT_EQ(plan_.iov.size(), 2u);
  ExpectOp(plan_.iov[0], 0x10000, 0x90c00, 0x400);
  ExpectOp(plan_.iov[1], 0x10400, 0x91000, 0x400);
  ASSERT_EQ(plan_.remote_refs.size(), 2u);
  EXPECT_EQ(plan_.remote_refs[0]->id, 1u);
  EXPECT_EQ(plan_.remote_refs[1]->id, 2u);
}

// Both sides cross, at different points: every split point of either side
// starts a new operation, and each operation lies in one region per side.
TEST_F(TransferPlanTest, SplitAtTheSplitPointsOfBothSides) {
  AddLocal(0x10000, 0x1000);  // local boundary at 0x11000
  AddLocal(0x11000, 0x1000);
  AddRemote(0x90000, 0x800, 1);  // remote boundaries at 0x90800, 0x91800
  AddRemote(0x90800, 0x1000, 2);
  AddRemote(0x91800, 0x1000, 3);
  // local [0x10400, 0x11c00), remote [0x90000, 0x91800)
  ASSERT_EQ(Build({{0x10400, 0x90000, 0x1800}}), SUCCESS) << why_;
  ASSERT_EQ(plan_.iov.size(), 3u);
  ExpectOp(plan_.iov[0], 0x10400, 0x90000, 0x800);   // remote boundary at +0x800
  ExpectOp(plan_.iov[1], 0x10c00, 0x90800, 0x400);   // local boundary at +0xc00
  ExpectOp(plan_.iov[2], 0x11000, 0x90c00, 0xc00);   // to the end
  EXPECT_EQ(plan_.bytes, 0x1800u);
  EXPECT_EQ(plan_.local_refs.size(), 2u);
  EXPECT_EQ(plan_.remote_refs.size(), 2u);  // region 3 is not used
}

TEST_F(TransferPlanTest, DescriptorsKeepTheirOrderAndBytesAddUp) {
  AddLocal(0x10000, 0x10000);
  AddRemote(0x90000, 0x10000, 1);
  const std::vector<TransferOpDesc> descs = {
      {0x18000, 0x90000, 0x100}, {0x10000, 0x9f000, 0x1000}, {0x10100, 0x90100, 1}, {0x10000, 0x90000, 0x10000}};
  ASSERT_EQ(Build(descs), SUCCESS) << why_;
  ASSERT_EQ(plan_.iov.size(), descs.size());
  uint64_t total = 0;
  for (size_t i = 0; i < descs.size(); ++i) {
    ExpectOp(plan_.iov[i], descs[i].local_addr, descs[i].remote_addr, descs[i].len);
    total += descs[i].len;
  }
  EXPECT_EQ(plan_.bytes, total);
  // One reference per region, however many operations use it.
  EXPECT_EQ(plan_.local_refs.size(), 1u);
  EXPECT_EQ(plan_.remote_refs.size(), 1u);
}

TEST_F(TransferPlanTest, UnregisteredLocalRangeIsRefusedWithAReason) {
  AddLocal(0x10000, 0x1000);
  AddLocal(0x12000, 0x1000);  // a gap at [0x11000, 0x12000)
  AddRemote(0x90000, 0x4000, 1);
  for (const TransferOpDesc &d : std::vector<TransferOpDesc>{{0x10f00, 0x90000, 0x200},   // runs past the end
                                                             {0x0ff00, 0x90000, 0x200},   // starts before
                                                             {0x10800, 0x90000, 0x2000},  // spans the gap
                                                             {0x20000, 0x90000, 0x10}}) {  // nowhere
    EXPECT_EQ(Build({{0x10000, 0x90000, 0x10}, d}), PARAM_INVALID) << d.local_addr;
    EXPECT_NE(why_.find("descriptor 1"), std::string::npos) << why_;
    EXPECT_NE(why_.find("local range"), std::string::npos) << why_;
  }
}

TEST_F(TransferPlanTest, UnregisteredRemoteRangeIsRefusedWithAReason) {
  AddLocal(0x10000, 0x4000);
  AddRemote(0x90000, 0x1000, 1);
  AddRemote(0x92000, 0x1000, 2);  // a gap at [0x91000, 0x92000)
  for (const TransferOpDesc &d : std::vector<TransferOpDesc>{{0x10000, 0x90f00, 0x200},
                                                             {0x10000, 0x8ff00, 0x200},
                                                             {0x10000, 0x90800, 0x2000},
                                                             {0x10000, 0xa0000, 0x10}}) {
    EXPECT_EQ(Build({d}), PARAM_INVALID) << d.remote_addr;
    EXPECT_NE(why_.find("descriptor 0"), std::string::npos) << why_;
    EXPECT_NE(why_.find("remote range"), std::string::npos) << why_;
  }
}

TEST_F(TransferPlanTest, OverflowIsRefused) {
  AddLocal(0x10000, 0x1000);
  AddRemote(0x90000, 0x1000, 1);
  for (const TransferOpDesc &d : std::vector<TransferOpDesc>{{UINTPTR_MAX - 8, 0x90000, 16},
                                                             {0x10000, UINTPTR_MAX - 8, 16},
                                                             {0x10000, 0x90000, SIZE_MAX}}) {
    EXPECT_EQ(Build({d}), PARAM_INVALID);
    EXPECT_NE(why_.find("overflows"), std::string::npos) << why_;
  }
}

}  // namespace
}  // namespace adxl
