// The ADXL status table (include/adxl/adxl_types.h): names and values are
// unique, every constant is its row, and StatusName round-trips.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "adxl/adxl_types.h"

namespace adxl {
namespace {

static_assert(StatusName(SUCCESS)[0] == 'S', "StatusName is usable in constant expressions");

TEST(StatusTable, NamesAndValuesAreUnique) {
  std::set<std::string> names;
  std::set<Status> values;
  for (const StatusInfo &s : kStatusTable) {
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate name " << s.name;
    EXPECT_TRUE(values.insert(s.value).second) << "duplicate value " << s.value << " (" << s.name << ")";
    EXPECT_NE(std::string(s.description), "") << s.name;
  }
  EXPECT_EQ(names.size(), 9u);
}

TEST(StatusTable, NamesRoundTrip) {
  for (const StatusInfo &s : kStatusTable) {
    EXPECT_STREQ(StatusName(s.value), s.name);
  }
  EXPECT_STREQ(StatusName(1u), "UNKNOWN");
}

// The constants are the vendor's values (docs/contract.md §1.2) and each is
// the row of its name.
TEST(StatusTable, ConstantsAreTheirRows) {
  const std::pair<Status, const char *> expected[] = {
      {SUCCESS, "SUCCESS"},
      {PARAM_INVALID, "PARAM_INVALID"},
      {TIMEOUT, "TIMEOUT"},
      {NOT_CONNECTED, "NOT_CONNECTED"},
      {ALREADY_CONNECTED, "ALREADY_CONNECTED"},
      {NOTIFY_FAILED, "NOTIFY_FAILED"},
      {UNSUPPORTED, "UNSUPPORTED"},
      {FAILED, "FAILED"},
      {RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"},
  };
  for (const auto &e : expected) EXPECT_STREQ(StatusName(e.first), e.second);
  EXPECT_EQ(SUCCESS, 0u);
  EXPECT_EQ(PARAM_INVALID, 103900u);
  EXPECT_EQ(TIMEOUT, 103901u);
  EXPECT_EQ(NOT_CONNECTED, 103902u);
  EXPECT_EQ(ALREADY_CONNECTED, 103903u);
  EXPECT_EQ(NOTIFY_FAILED, 103904u);
  EXPECT_EQ(UNSUPPORTED, 103905u);
  EXPECT_EQ(FAILED, 503900u);
  EXPECT_EQ(RESOURCE_EXHAUSTED, 203900u);
}

}  // namespace
}  // namespace adxl
