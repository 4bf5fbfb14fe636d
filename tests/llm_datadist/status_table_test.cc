// The cache layer's status table (include/llm_datadist/cache_types.h): names
// are unique over rows and aliases, row values are unique, every alias is a
// row's value, and StatusName round-trips.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "llm_datadist/cache_types.h"

namespace llm_datadist {
namespace {

TEST(LlmStatusTable, NamesAndValuesAreUnique) {
  std::set<std::string> names;
  std::set<Status> values;
  for (const StatusInfo &s : kStatusTable) {
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate name " << s.name;
    EXPECT_TRUE(values.insert(s.value).second) << "duplicate value " << s.value << " (" << s.name << ")";
    EXPECT_EQ(std::string(s.name).rfind("LLM_", 0), 0u) << s.name;
  }
  for (const StatusInfo &a : kStatusAliases) {
    EXPECT_TRUE(names.insert(a.name).second) << "alias " << a.name << " repeats a name";
    EXPECT_EQ(values.count(a.value), 1u) << "alias " << a.name << " is no row's value";
  }
}

TEST(LlmStatusTable, NamesRoundTrip) {
  for (const StatusInfo &s : kStatusTable) EXPECT_STREQ(StatusName(s.value), s.name);
  EXPECT_STREQ(StatusName(0xFFFFFFFFu), "LLM_UNKNOWN");
}

TEST(LlmStatusTable, VendorNamesAndEarlierNamesAreOneValue) {
  static_assert(LLM_OUT_OF_MEMORY == LLM_RESOURCE_EXHAUSTED, "alias");
  static_assert(LLM_FEATURE_NOT_ENABLED == LLM_UNSUPPORTED, "alias");
  EXPECT_STREQ(StatusName(LLM_RESOURCE_EXHAUSTED), "LLM_OUT_OF_MEMORY");
  EXPECT_STREQ(StatusName(LLM_UNSUPPORTED), "LLM_FEATURE_NOT_ENABLED");
}

// Statuses that mean what an engine status means have its value: an
// AdxlEngine status passes through the cache layer unchanged.
TEST(LlmStatusTable, SharedMeaningsHaveTheEngineValue) {
  EXPECT_EQ(LLM_SUCCESS, adxl::SUCCESS);
  EXPECT_EQ(LLM_PARAM_INVALID, adxl::PARAM_INVALID);
  EXPECT_EQ(LLM_TIMEOUT, adxl::TIMEOUT);
  EXPECT_EQ(LLM_NOT_YET_LINK, adxl::NOT_CONNECTED);
  EXPECT_EQ(LLM_ALREADY_LINK, adxl::ALREADY_CONNECTED);
  EXPECT_EQ(LLM_FEATURE_NOT_ENABLED, adxl::UNSUPPORTED);
  EXPECT_EQ(LLM_FAILED, adxl::FAILED);
  EXPECT_EQ(LLM_OUT_OF_MEMORY, adxl::RESOURCE_EXHAUSTED);
}

}  // namespace
}  // namespace llm_datadist
