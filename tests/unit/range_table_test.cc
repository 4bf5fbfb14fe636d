// RangeTable: exact lookup, overlap test and resolution of a range over
// adjacent entries.
#include "memory/range_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace adxl {
namespace {

using Table = RangeTable<int>;
using Piece = Table::Piece;

constexpr uintptr_t kMax = UINTPTR_MAX;

// A table with [1000,1100)=1, [1100,1300)=2, [1300,1400)=3 (three adjacent
// entries), then a gap, then [2000,2100)=4.
Table MakeTable() {
  Table t;
  t.Insert(1000, 100, 1);
  t.Insert(1100, 200, 2);
  t.Insert(1300, 100, 3);
  t.Insert(2000, 100, 4);
  return t;
}

// Checks a resolution failure leaves *out exactly as it was.
void ExpectResolveFails(const Table &t, uintptr_t addr, size_t len) {
  Piece sentinel{7, 8, nullptr};
  std::vector<Piece> out = {sentinel};
  EXPECT_FALSE(t.Resolve(addr, len, &out)) << "[" << addr << ", +" << len << ") resolved";
  ASSERT_EQ(out.size(), 1u) << "*out changed on failure for [" << addr << ", +" << len << ")";
  EXPECT_EQ(out[0].addr, 7u);
  EXPECT_EQ(out[0].len, 8u);
  EXPECT_EQ(out[0].entry, nullptr);
}

TEST(RangeTableTest, EmptyTable) {
  Table t;
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.FindExact(1000, 100), nullptr);
  EXPECT_FALSE(t.Overlaps(1000, 100));
  ExpectResolveFails(t, 1000, 1);
}

TEST(RangeTableTest, InsertAndSize) {
  Table t = MakeTable();
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(t.size(), 4u);
}

TEST(RangeTableTest, FindExactNeedsSameStartAndLength) {
  Table t = MakeTable();
  const Table::Entry *e = t.FindExact(1100, 200);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->addr, 1100u);
  EXPECT_EQ(e->len, 200u);
  EXPECT_EQ(e->value, 2);
  EXPECT_EQ(t.FindExact(1100, 199), nullptr);  // same start, shorter
  EXPECT_EQ(t.FindExact(1100, 201), nullptr);  // same start, longer
  EXPECT_EQ(t.FindExact(1101, 199), nullptr);  // inside, same end
  EXPECT_EQ(t.FindExact(1000, 300), nullptr);  // union of two entries
}

TEST(RangeTableTest, EraseRemovesByStart) {
  Table t = MakeTable();
  EXPECT_TRUE(t.Erase(1100));
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.FindExact(1100, 200), nullptr);
  EXPECT_FALSE(t.Overlaps(1100, 200));
  EXPECT_FALSE(t.Erase(1100));  // already gone
  EXPECT_FALSE(t.Erase(1150));  // not a start
  EXPECT_EQ(t.size(), 3u);
}

TEST(RangeTableTest, ClearEmptiesTable) {
  Table t = MakeTable();
  t.Clear();
  EXPECT_TRUE(t.empty());
  EXPECT_FALSE(t.Overlaps(1000, 2000));
}

// ---------------------------------------------------------------- Overlaps

TEST(RangeTableTest, TouchingRangesDoNotOverlap) {
  Table t;
  t.Insert(1000, 100, 1);
  EXPECT_FALSE(t.Overlaps(900, 100));   // ends where the entry starts
  EXPECT_FALSE(t.Overlaps(1100, 100));  // starts where the entry ends
  EXPECT_FALSE(t.Overlaps(999, 1));
  EXPECT_FALSE(t.Overlaps(1100, 1));
}

TEST(RangeTableTest, FarAwayRangesDoNotOverlap) {
  Table t;
  t.Insert(1000, 100, 1);
  EXPECT_FALSE(t.Overlaps(0, 10));
  EXPECT_FALSE(t.Overlaps(5000, 10));
}

TEST(RangeTableTest, IdenticalRangeOverlaps) {
  Table t;
  t.Insert(1000, 100, 1);
  EXPECT_TRUE(t.Overlaps(1000, 100));
}

TEST(RangeTableTest, ContainedRangeOverlaps) {
  Table t;
  t.Insert(1000, 100, 1);
  EXPECT_TRUE(t.Overlaps(1010, 10));
  EXPECT_TRUE(t.Overlaps(1000, 1));  // first byte
  EXPECT_TRUE(t.Overlaps(1099, 1));  // last byte
}

TEST(RangeTableTest, ContainingRangeOverlaps) {
  Table t;
  t.Insert(1000, 100, 1);
  EXPECT_TRUE(t.Overlaps(900, 300));
  EXPECT_TRUE(t.Overlaps(1000, 200));
  EXPECT_TRUE(t.Overlaps(900, 200));
}

TEST(RangeTableTest, PartialOverlapOnEitherSide) {
  Table t;
  t.Insert(1000, 100, 1);
  EXPECT_TRUE(t.Overlaps(950, 51));    // last byte is the entry's first
  EXPECT_TRUE(t.Overlaps(1099, 100));  // first byte is the entry's last
  EXPECT_TRUE(t.Overlaps(1050, 100));
}

TEST(RangeTableTest, OverlapDetectsEntryBeforeAnotherEntry) {
  // The range ends inside the second of two entries and starts in a gap
  // after the first: only the second entry overlaps.
  Table t;
  t.Insert(1000, 100, 1);
  t.Insert(2000, 100, 2);
  EXPECT_TRUE(t.Overlaps(1500, 501));
  EXPECT_FALSE(t.Overlaps(1500, 500));
  EXPECT_FALSE(t.Overlaps(1100, 900));  // exactly fills the gap
  EXPECT_TRUE(t.Overlaps(1099, 902));   // fills the gap and touches both
}

TEST(RangeTableTest, RangeSpanningSeveralEntriesOverlaps) {
  Table t = MakeTable();
  EXPECT_TRUE(t.Overlaps(0, 5000));
}

// ----------------------------------------------------------------- Resolve

TEST(RangeTableTest, ResolveWithinOneEntry) {
  Table t = MakeTable();
  std::vector<Piece> out;
  ASSERT_TRUE(t.Resolve(1120, 50, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].addr, 1120u);
  EXPECT_EQ(out[0].len, 50u);
  ASSERT_NE(out[0].entry, nullptr);
  EXPECT_EQ(out[0].entry->value, 2);
}

TEST(RangeTableTest, ResolveWholeEntry) {
  Table t = MakeTable();
  std::vector<Piece> out;
  ASSERT_TRUE(t.Resolve(2000, 100, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].addr, 2000u);
  EXPECT_EQ(out[0].len, 100u);
  EXPECT_EQ(out[0].entry->value, 4);
}

TEST(RangeTableTest, ResolveFirstAndLastByteOfEntry) {
  Table t = MakeTable();
  std::vector<Piece> out;
  ASSERT_TRUE(t.Resolve(2000, 1, &out));
  ASSERT_TRUE(t.Resolve(2099, 1, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].addr, 2099u);
  EXPECT_EQ(out[1].len, 1u);
  EXPECT_EQ(out[1].entry->value, 4);
}

TEST(RangeTableTest, ResolveSpanningTwoAdjacentEntries) {
  Table t = MakeTable();
  std::vector<Piece> out;
  ASSERT_TRUE(t.Resolve(1050, 100, &out));  // [1050,1150)
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].addr, 1050u);
  EXPECT_EQ(out[0].len, 50u);
  EXPECT_EQ(out[0].entry->value, 1);
  EXPECT_EQ(out[1].addr, 1100u);
  EXPECT_EQ(out[1].len, 50u);
  EXPECT_EQ(out[1].entry->value, 2);
}

TEST(RangeTableTest, ResolveSpanningThreeAdjacentEntries) {
  Table t = MakeTable();
  std::vector<Piece> out;
  ASSERT_TRUE(t.Resolve(1090, 300, &out));  // [1090,1390)
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].addr, 1090u);
  EXPECT_EQ(out[0].len, 10u);
  EXPECT_EQ(out[0].entry->value, 1);
  EXPECT_EQ(out[1].addr, 1100u);
  EXPECT_EQ(out[1].len, 200u);
  EXPECT_EQ(out[1].entry->value, 2);
  EXPECT_EQ(out[2].addr, 1300u);
  EXPECT_EQ(out[2].len, 90u);
  EXPECT_EQ(out[2].entry->value, 3);
}

TEST(RangeTableTest, ResolveExactlyAllAdjacentEntries) {
  Table t = MakeTable();
  std::vector<Piece> out;
  ASSERT_TRUE(t.Resolve(1000, 400, &out));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].addr, 1000u);
  EXPECT_EQ(out[0].len, 100u);
  EXPECT_EQ(out[1].addr, 1100u);
  EXPECT_EQ(out[1].len, 200u);
  EXPECT_EQ(out[2].addr, 1300u);
  EXPECT_EQ(out[2].len, 100u);
}

TEST(RangeTableTest, ResolveEndingOnEntryBoundaryDoesNotAddEmptyPiece) {
  Table t = MakeTable();
  std::vector<Piece> out;
  ASSERT_TRUE(t.Resolve(1050, 50, &out));  // ends exactly where entry 2 starts
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].len, 50u);
  EXPECT_EQ(out[0].entry->value, 1);
}

TEST(RangeTableTest, ResolveAppendsAfterExistingPieces) {
  Table t = MakeTable();
  std::vector<Piece> out = {Piece{1, 2, nullptr}};
  ASSERT_TRUE(t.Resolve(1050, 100, &out));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].addr, 1u);
  EXPECT_EQ(out[1].addr, 1050u);
  EXPECT_EQ(out[2].addr, 1100u);
}

TEST(RangeTableTest, ResolveFailsAcrossGap) {
  Table t = MakeTable();
  ExpectResolveFails(t, 1350, 100);   // [1350,1450): 1400.. is a gap
  ExpectResolveFails(t, 1000, 1001);  // all three adjacent, then the gap
  ExpectResolveFails(t, 1999, 2);     // starts in the gap just before entry 4
}

TEST(RangeTableTest, ResolveFailsWhenStartIsInGap) {
  Table t = MakeTable();
  ExpectResolveFails(t, 1400, 1);
  ExpectResolveFails(t, 1500, 10);
}

TEST(RangeTableTest, ResolveFailsPastTheEnd) {
  Table t = MakeTable();
  ExpectResolveFails(t, 2050, 51);  // last byte just past the last entry
  ExpectResolveFails(t, 2100, 1);   // entirely after
  ExpectResolveFails(t, 9000, 10);
}

TEST(RangeTableTest, ResolveFailsBeforeTheFirstEntry) {
  Table t = MakeTable();
  ExpectResolveFails(t, 0, 10);
  ExpectResolveFails(t, 999, 1);
  ExpectResolveFails(t, 999, 2);  // one byte before, one byte inside
}

TEST(RangeTableTest, ResolveRejectsZeroLength) {
  Table t = MakeTable();
  ExpectResolveFails(t, 1000, 0);
  ExpectResolveFails(t, 1050, 0);
}

TEST(RangeTableTest, ResolveRejectsOverflow) {
  Table t;
  t.Insert(kMax - 99, 50, 1);  // [max-99, max-49)
  ExpectResolveFails(t, kMax - 90, kMax);
  ExpectResolveFails(t, kMax - 90, SIZE_MAX);
  // Wraps to exactly 0.
  ExpectResolveFails(t, kMax - 90, 91);
  // Sanity: the same entry resolves for an in-range length.
  std::vector<Piece> out;
  EXPECT_TRUE(t.Resolve(kMax - 90, 10, &out));
}

TEST(RangeTableTest, ResolveFailureAfterPartialProgressRestoresSize) {
  // Two pieces would be pushed before the gap is found; both must go.
  Table t = MakeTable();
  std::vector<Piece> out = {Piece{1, 1, nullptr}, Piece{2, 2, nullptr}};
  EXPECT_FALSE(t.Resolve(1000, 450, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].addr, 1u);
  EXPECT_EQ(out[1].addr, 2u);
}

TEST(RangeTableTest, ResolveWorksWithNonIntValues) {
  RangeTable<std::string> t;
  t.Insert(10, 10, "a");
  t.Insert(20, 10, "b");
  std::vector<RangeTable<std::string>::Piece> out;
  ASSERT_TRUE(t.Resolve(15, 10, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].entry->value, "a");
  EXPECT_EQ(out[1].entry->value, "b");
}

}  // namespace
}  // namespace adxl
