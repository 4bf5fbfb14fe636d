// Placement of received fragments (plugin/ucx/am_placement.h): every byte of
// a message lands at its place in the iov list whatever the fragment
// boundaries, and nothing lands once the gate said no.
#include "am/am_placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

// Three destination ranges of 5, 1 and 7 bytes inside one buffer, with gaps
// that must stay untouched.
struct Dest {
  std::string buf = std::string(20, '.');
  std::vector<ucp_dt_iov_t> Iov() {
    return {{&buf[1], 5}, {&buf[8], 1}, {&buf[11], 7}};
  }
};
const std::string kMessage = "ABCDEFGHIJKLM";  // 13 bytes: 5 + 1 + 7
const std::string kPlaced = ".ABCDE..F..GHIJKLM..";

void Feed(Placement *p, const std::vector<size_t> &cuts) {
  size_t at = 0;
  for (size_t cut : cuts) {
    p->Unpack(at, kMessage.data() + at, cut - at);
    at = cut;
  }
}

TEST(AmPlacementTest, FragmentsLandInPlaceWhateverTheirBoundaries) {
  // One fragment; one per byte; cuts inside and at the ends of entries.
  for (const std::vector<size_t> &cuts : std::vector<std::vector<size_t>>{
           {13}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, {3, 9, 13}, {5, 6, 13}, {4, 7, 13}}) {
    Dest d;
    Placement p;
    p.Start(d.Iov(), nullptr, nullptr);
    EXPECT_EQ(p.total(), 13u);
    Feed(&p, cuts);
    EXPECT_EQ(d.buf, kPlaced) << "cuts ending at " << cuts.front();
    EXPECT_FALSE(p.refused());
  }
}

TEST(AmPlacementTest, AFragmentBeforeTheCursorStillLandsInPlace) {
  Dest d;
  Placement p;
  p.Start(d.Iov(), nullptr, nullptr);
  p.Unpack(9, kMessage.data() + 9, 4);  // the end first
  p.Unpack(0, kMessage.data(), 9);
  EXPECT_EQ(d.buf, kPlaced);
}

TEST(AmPlacementTest, OnceTheGateSaysNoNothingMoreLands) {
  int allowed = 2;  // the first two fragments, then no
  int asked = 0;
  struct Arg {
    int *allowed, *asked;
  } arg{&allowed, &asked};
  auto gate = [](void *a) {
    auto *g = static_cast<Arg *>(a);
    ++*g->asked;
    return (*g->allowed)-- > 0;
  };
  Dest d;
  Placement p;
  p.Start(d.Iov(), gate, &arg);
  Feed(&p, {3, 6, 9, 13});
  EXPECT_TRUE(p.refused());
  EXPECT_EQ(d.buf, ".ABCDE..F...........");
  // Asked until it said no, then not again: a refusal is final.
  EXPECT_EQ(asked, 3);
}

}  // namespace
