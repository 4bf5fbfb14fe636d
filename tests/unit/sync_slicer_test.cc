// SyncSlicer (src/core/sync_slicer.h): how TransferSync cuts its plan into
// slices, checking its deadline between them.
#include "core/sync_slicer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

namespace adxl {
namespace {

adxl_plugin_iov_t Op(uint64_t local, uint64_t remote, uint64_t len) {
  return adxl_plugin_iov_t{nullptr, local, nullptr, remote, len};
}

std::vector<std::vector<adxl_plugin_iov_t>> AllSlices(const std::vector<adxl_plugin_iov_t> &plan, size_t max_ops,
                                                      uint64_t max_bytes) {
  SyncSlicer slicer(plan, max_ops, max_bytes);
  std::vector<std::vector<adxl_plugin_iov_t>> out;
  std::vector<adxl_plugin_iov_t> slice;
  while (slicer.Next(&slice)) {
    out.push_back(slice);
    if (out.size() > 100000) break;  // never loops forever
  }
  EXPECT_TRUE(slicer.done());
  EXPECT_TRUE(slice.empty()) << "the last Next() must leave the slice empty";
  return out;
}

// Every slice within the limits; concatenated, the slices are the plan's
// non-empty operations in order, byte for byte, with local and remote
// addresses in step.
void ExpectExactCover(const std::vector<adxl_plugin_iov_t> &plan, const std::vector<std::vector<adxl_plugin_iov_t>> &slices,
                      size_t max_ops, uint64_t max_bytes) {
  size_t op = 0;
  uint64_t off = 0;
  auto skip_empty = [&] {
    while (op < plan.size() && plan[op].length == 0) ++op;
  };
  skip_empty();
  for (size_t s = 0; s < slices.size(); ++s) {
    const auto &slice = slices[s];
    ASSERT_FALSE(slice.empty()) << "slice " << s;
    EXPECT_LE(slice.size(), max_ops) << "slice " << s;
    uint64_t bytes = 0;
    for (const auto &piece : slice) {
      ASSERT_LT(op, plan.size()) << "slice " << s << " goes past the plan";
      EXPECT_GT(piece.length, 0u) << "slice " << s;
      EXPECT_EQ(piece.local_addr, plan[op].local_addr + off) << "slice " << s;
      EXPECT_EQ(piece.remote_addr, plan[op].remote_addr + off) << "slice " << s;
      ASSERT_LE(off + piece.length, plan[op].length) << "slice " << s;
      bytes += piece.length;
      off += piece.length;
      if (off == plan[op].length) {
        ++op;
        off = 0;
        skip_empty();
      }
    }
    EXPECT_LE(bytes, max_bytes) << "slice " << s;
  }
  EXPECT_EQ(op, plan.size()) << "the slices do not cover the plan";
  EXPECT_EQ(off, 0u);
}

TEST(SyncSlicerTest, EmptyPlanHasNoSlices) {
  const std::vector<adxl_plugin_iov_t> plan;
  SyncSlicer slicer(plan);
  EXPECT_TRUE(slicer.done());
  std::vector<adxl_plugin_iov_t> slice = {Op(1, 2, 3)};
  EXPECT_FALSE(slicer.Next(&slice));
  EXPECT_TRUE(slice.empty());
}

TEST(SyncSlicerTest, OnlyZeroLengthOperationsHaveNoSlices) {
  const std::vector<adxl_plugin_iov_t> plan = {Op(0x1000, 0x2000, 0), Op(0x3000, 0x4000, 0)};
  EXPECT_TRUE(AllSlices(plan, 4, 100).empty());
}

TEST(SyncSlicerTest, ASmallPlanIsOneSliceAsItIs) {
  const std::vector<adxl_plugin_iov_t> plan = {Op(0x1000, 0x9000, 10), Op(0x2000, 0xa000, 20)};
  const auto slices = AllSlices(plan, SyncSlicer::kDefaultMaxOps, SyncSlicer::kDefaultMaxBytes);
  ASSERT_EQ(slices.size(), 1u);
  ASSERT_EQ(slices[0].size(), 2u);
  EXPECT_EQ(slices[0][1].local_addr, 0x2000u);
  EXPECT_EQ(slices[0][1].remote_addr, 0xa000u);
  EXPECT_EQ(slices[0][1].length, 20u);
}

TEST(SyncSlicerTest, SlicesNeverExceedTheOperationLimit) {
  std::vector<adxl_plugin_iov_t> plan;
  for (uint64_t i = 0; i < 10; ++i) plan.push_back(Op(0x1000 + 16 * i, 0x9000 + 16 * i, 16));
  const auto slices = AllSlices(plan, 3, 1 << 20);
  ASSERT_EQ(slices.size(), 4u);  // 3 + 3 + 3 + 1
  EXPECT_EQ(slices[3].size(), 1u);
  ExpectExactCover(plan, slices, 3, 1 << 20);
}

TEST(SyncSlicerTest, ALargeOperationIsSplitWithItsAddressesInStep) {
  const std::vector<adxl_plugin_iov_t> plan = {Op(0x100000, 0x900000, 1000)};
  const auto slices = AllSlices(plan, 8, 300);
  ASSERT_EQ(slices.size(), 4u);  // 300 + 300 + 300 + 100
  for (size_t s = 0; s < slices.size(); ++s) {
    ASSERT_EQ(slices[s].size(), 1u);
    EXPECT_EQ(slices[s][0].local_addr, 0x100000u + 300 * s);
    EXPECT_EQ(slices[s][0].remote_addr, 0x900000u + 300 * s);
    EXPECT_EQ(slices[s][0].length, s < 3 ? 300u : 100u);
  }
  ExpectExactCover(plan, slices, 8, 300);
}

// The byte limit cuts an operation in the middle of a slice: the rest of it
// opens the next slice.
TEST(SyncSlicerTest, AnOperationCutByTheByteLimitContinuesInTheNextSlice) {
  const std::vector<adxl_plugin_iov_t> plan = {Op(0x1000, 0x9000, 60), Op(0x2000, 0xa000, 60), Op(0x3000, 0xb000, 60)};
  const auto slices = AllSlices(plan, 8, 100);
  ASSERT_EQ(slices.size(), 2u);
  ASSERT_EQ(slices[0].size(), 2u);
  EXPECT_EQ(slices[0][1].local_addr, 0x2000u);
  EXPECT_EQ(slices[0][1].length, 40u);
  EXPECT_EQ(slices[1][0].local_addr, 0x2000u + 40);
  EXPECT_EQ(slices[1][0].remote_addr, 0xa000u + 40);
  EXPECT_EQ(slices[1][0].length, 20u);
  ExpectExactCover(plan, slices, 8, 100);
}

TEST(SyncSlicerTest, ZeroLengthOperationsAreSkippedAnywhere) {
  const std::vector<adxl_plugin_iov_t> plan = {Op(0x1000, 0x9000, 0), Op(0x2000, 0xa000, 50), Op(0x3000, 0xb000, 0),
                                               Op(0x4000, 0xc000, 0), Op(0x5000, 0xd000, 50), Op(0x6000, 0xe000, 0)};
  const auto slices = AllSlices(plan, 1, 1000);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0][0].local_addr, 0x2000u);
  EXPECT_EQ(slices[1][0].local_addr, 0x5000u);
  ExpectExactCover(plan, slices, 1, 1000);
}

// Random plans against random limits: always within the limits, always an
// exact cover in order.
TEST(SyncSlicerTest, RandomPlansAreCoveredExactlyOnceInOrder) {
  uint64_t x = 88172645463325252ull;
  auto rnd = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int round = 0; round < 200; ++round) {
    std::vector<adxl_plugin_iov_t> plan;
    const size_t n = rnd() % 40;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t len = rnd() % 5 == 0 ? 0 : 1 + rnd() % 5000;
      plan.push_back(Op(0x100000 * (i + 1), 0x8000000 + 0x100000 * i, len));
    }
    const size_t max_ops = 1 + rnd() % 7;
    const uint64_t max_bytes = 1 + rnd() % 3000;
    SCOPED_TRACE("round " + std::to_string(round));
    ExpectExactCover(plan, AllSlices(plan, max_ops, max_bytes), max_ops, max_bytes);
  }
}

TEST(SyncSlicerTest, DefaultLimits) {
  EXPECT_EQ(SyncSlicer::kDefaultMaxOps, 4096u);
  EXPECT_EQ(SyncSlicer::kDefaultMaxBytes, 16u << 20);
  std::vector<adxl_plugin_iov_t> plan(10000, Op(0x1000, 0x2000, 512));
  const auto slices = AllSlices(plan, SyncSlicer::kDefaultMaxOps, SyncSlicer::kDefaultMaxBytes);
  ASSERT_EQ(slices.size(), 3u);  // 4096 + 4096 + 1808
  ExpectExactCover(plan, slices, SyncSlicer::kDefaultMaxOps, SyncSlicer::kDefaultMaxBytes);
}

// The cap for the time a call has left: what 1 GB/s moves in it, between
// 256 KiB and the slicer's 16 MiB; a deadline already passed gets the floor.
TEST(SyncSlicerTest, CapFollowsTheTimeLeft) {
  using std::chrono::microseconds;
  using std::chrono::milliseconds;
  using std::chrono::nanoseconds;
  EXPECT_EQ(SyncSlicer::CapFor(nanoseconds(-5)), SyncSlicer::kMinCapBytes);
  EXPECT_EQ(SyncSlicer::CapFor(nanoseconds(0)), SyncSlicer::kMinCapBytes);
  EXPECT_EQ(SyncSlicer::CapFor(microseconds(100)), SyncSlicer::kMinCapBytes);
  EXPECT_EQ(SyncSlicer::CapFor(milliseconds(1)), 1000u * 1000);
  EXPECT_EQ(SyncSlicer::CapFor(milliseconds(8)), 8u * 1000 * 1000);
  EXPECT_EQ(SyncSlicer::CapFor(milliseconds(17)), SyncSlicer::kDefaultMaxBytes);
  EXPECT_EQ(SyncSlicer::CapFor(std::chrono::hours(24 * 365)), SyncSlicer::kDefaultMaxBytes);
}

// A cap given to Next() bounds that slice only; the slices still cover the
// plan exactly once, in order.
TEST(SyncSlicerTest, PerSliceCapBoundsThatSliceOnly) {
  const std::vector<adxl_plugin_iov_t> plan = {Op(0x10000, 0x900000, 3u << 20), Op(0x800000, 0x200000, 100)};
  SyncSlicer slicer(plan);
  std::vector<adxl_plugin_iov_t> slice;
  std::vector<std::vector<adxl_plugin_iov_t>> slices;
  const uint64_t caps[] = {1u << 20, 1000, 64u << 20};
  for (uint64_t cap : caps) {
    ASSERT_TRUE(slicer.Next(&slice, cap));
    uint64_t bytes = 0;
    for (const auto &p : slice) bytes += p.length;
    EXPECT_LE(bytes, cap);
    slices.push_back(slice);
  }
  EXPECT_TRUE(slicer.done());
  EXPECT_FALSE(slicer.Next(&slice, 1));
  ASSERT_EQ(slices[0].size(), 1u);
  EXPECT_EQ(slices[0][0].length, 1u << 20);
  ASSERT_EQ(slices[1].size(), 1u);
  EXPECT_EQ(slices[1][0].length, 1000u);
  EXPECT_EQ(slices[1][0].local_addr, 0x10000u + (1u << 20));
  EXPECT_EQ(slices[1][0].remote_addr, 0x900000u + (1u << 20));
  ExpectExactCover(plan, slices, SyncSlicer::kDefaultMaxOps, SyncSlicer::kDefaultMaxBytes);
}

}  // namespace
}  // namespace adxl
