// Striping of a batch over a link's network paths (plugin/ucx/stripe.h):
// every byte in exactly one piece, in the batch's order across slices, the
// slices' sizes following the weights, small batches whole on one path,
// cuts aligned, and the rate estimate.
#include "paths/stripe.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using stripe::Piece;
using stripe::StripeOps;
using Slices = std::vector<std::vector<Piece>>;

Slices Stripe(const std::vector<size_t> &lens, const std::vector<double> &weights, size_t whole_on = 0) {
  return StripeOps(lens.data(), lens.size(), weights, whole_on);
}

size_t Bytes(const std::vector<Piece> &slice) {
  size_t n = 0;
  for (const Piece &p : slice) n += p.len;
  return n;
}

// Read in slice order, the pieces are the operations' bytes exactly once,
// in order, with no empty piece except for an empty operation.
void ExpectExactCover(const std::vector<size_t> &lens, const Slices &slices) {
  size_t op = 0, offset = 0;
  for (const auto &slice : slices) {
    for (const Piece &p : slice) {
      while (op < lens.size() && lens[op] != 0 && offset == lens[op]) {
        ++op;
        offset = 0;
      }
      ASSERT_LT(p.op, lens.size()) << "a piece past the batch";
      ASSERT_EQ(p.op, op) << "out of order";
      ASSERT_EQ(p.offset, offset) << "a gap or an overlap in op " << op;
      if (lens[op] == 0) {
        ASSERT_EQ(p.len, 0u);
        ++op;
        continue;
      }
      ASSERT_GT(p.len, 0u) << "an empty piece of op " << op;
      offset += p.len;
      ASSERT_LE(offset, lens[op]) << "a piece runs past op " << op;
    }
  }
  while (op < lens.size() && lens[op] != 0 && offset == lens[op]) {
    ++op;
    offset = 0;
  }
  EXPECT_EQ(op, lens.size()) << "bytes missing from op " << op;
}

TEST(Stripe, SmallBatchStaysWholeOnTheChosenPath) {
  const std::vector<size_t> lens = {4096, 65536, 100000};
  for (size_t on : {0u, 1u}) {
    const Slices slices = Stripe(lens, {1.0, 1.0}, on);
    ASSERT_EQ(slices.size(), 2u);
    ExpectExactCover(lens, slices);
    EXPECT_EQ(slices[on].size(), lens.size());
    EXPECT_TRUE(slices[1 - on].empty());
  }
}

TEST(Stripe, OnePathTakesEverything) {
  const Slices slices = Stripe({8 << 20}, {3.0});
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(Bytes(slices[0]), size_t{8} << 20);
}

TEST(Stripe, EqualWeightsSplitOneLargeOperationInHalves) {
  const std::vector<size_t> lens = {64 << 20};
  const Slices slices = Stripe(lens, {1.0, 1.0});
  ExpectExactCover(lens, slices);
  EXPECT_EQ(Bytes(slices[0]), size_t{32} << 20);
  EXPECT_EQ(Bytes(slices[1]), size_t{32} << 20);
}

TEST(Stripe, CutsInsideAnOperationAreAligned) {
  const std::vector<size_t> lens = {(10 << 20) + 12345};
  const Slices slices = Stripe(lens, {1.0, 2.0, 4.0});
  ExpectExactCover(lens, slices);
  for (size_t s = 1; s < slices.size(); ++s) {
    ASSERT_FALSE(slices[s].empty());
    EXPECT_EQ(slices[s][0].offset % stripe::kCutAlign, 0u) << s;
  }
}

TEST(Stripe, SharesFollowTheWeights) {
  // 256 blocks of 256 KiB, three paths at 1 : 2 : 1.
  const std::vector<size_t> lens(256, 256 * 1024);
  const Slices slices = Stripe(lens, {100.0, 200.0, 100.0});
  ExpectExactCover(lens, slices);
  const double total = 64.0 * (1 << 20);
  EXPECT_NEAR(Bytes(slices[0]) / total, 0.25, 0.01);
  EXPECT_NEAR(Bytes(slices[1]) / total, 0.50, 0.01);
  EXPECT_NEAR(Bytes(slices[2]) / total, 0.25, 0.01);
}

TEST(Stripe, AllZeroWeightsMeanEqualShares) {
  const std::vector<size_t> lens(64, 1 << 20);
  const Slices slices = Stripe(lens, {0.0, 0.0}, 1);
  ExpectExactCover(lens, slices);
  EXPECT_EQ(Bytes(slices[0]), Bytes(slices[1]));
}

TEST(Stripe, ASlowPathKeepsItsFloor) {
  const std::vector<size_t> lens(100, 1 << 20);
  const Slices slices = Stripe(lens, {1.0, 1e6});
  ExpectExactCover(lens, slices);
  EXPECT_NEAR(Bytes(slices[0]) / (100.0 * (1 << 20)), stripe::kMinShare, 0.011);
}

TEST(Stripe, OddSizesAndZeroLengthOperationsAreCoveredInOrder) {
  const std::vector<size_t> lens = {1, 3 << 20, 0, 12345, 777777, 0, 5 << 20, 4095};
  for (const std::vector<double> &w : {std::vector<double>{1, 1}, {1, 3}, {5, 1, 2}, {1, 1, 1, 1, 1, 1, 1}}) {
    const Slices slices = Stripe(lens, w);
    ASSERT_EQ(slices.size(), w.size());
    ExpectExactCover(lens, slices);
  }
}

TEST(Stripe, RatesFollowTheSamplesAndIgnoreSmallOnes) {
  stripe::PathRates rates(2);
  EXPECT_EQ(rates.Weights(), (std::vector<double>{0, 0}));
  rates.Record(0, 1 << 20, 0.001);
  // Path 1 not measured yet: it weighs what the measured ones do.
  EXPECT_EQ(rates.Weights()[1], rates.Weights()[0]);
  rates.Record(1, 1 << 20, 0.004);
  std::vector<double> w = rates.Weights();
  EXPECT_NEAR(w[0] / w[1], 4.0, 1e-9);
  // A slice too small to measure bandwidth changes nothing.
  rates.Record(1, 4096, 1.0);
  EXPECT_EQ(rates.Weights(), w);
  // The newest sample weighs half.
  rates.Record(1, 1 << 20, 0.001);
  w = rates.Weights();
  EXPECT_NEAR(w[0] / w[1], 1.0 / (0.5 * 0.25 + 0.5 * 1.0), 1e-9);
}

}  // namespace
