// The cache layer's status table (src/llm_datadist/cache_types.h): the
// vendor's names and values, unique, aliases pointing at rows, StatusName
// round-tripping, and engine statuses mapped (not passed through).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "cache_types.h"
#include "llm_datadist/llm_datadist.h"
#include "llm_datadist/llm_error_codes.h"

namespace llm_datadist::internal {
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
  EXPECT_STREQ(StatusName(12345u), "LLM_UNKNOWN_ERROR");
}

// Every value, as the vendor's llm_datadist.h / llm_error_codes.h (ge::LLM_*,
// 0x5010B000 + n) and its Python package (two ACL runtime codes) define it.
TEST(LlmStatusTable, VendorValues) {
  const std::map<std::string, Status> vendor = {
      {"LLM_SUCCESS", 0x0U},
      {"LLM_FAILED", 0xFFFFFFFFU},
      {"LLM_WAIT_PROC_TIMEOUT", 0x5010B001U},
      {"LLM_KV_CACHE_NOT_EXIST", 0x5010B002U},
      {"LLM_REPEAT_REQUEST", 0x5010B003U},
      {"LLM_REQUEST_ALREADY_COMPLETED", 0x5010B004U},
      {"LLM_PARAM_INVALID", 0x5010B005U},
      {"LLM_ENGINE_FINALIZED", 0x5010B006U},
      {"LLM_NOT_YET_LINK", 0x5010B007U},
      {"LLM_ALREADY_LINK", 0x5010B008U},
      {"LLM_LINK_FAILED", 0x5010B009U},
      {"LLM_UNLINK_FAILED", 0x5010B00AU},
      {"LLM_NOTIFY_PROMPT_UNLINK_FAILED", 0x5010B00BU},
      {"LLM_CLUSTER_NUM_EXCEED_LIMIT", 0x5010B00CU},
      {"LLM_PROCESSING_LINK", 0x5010B00DU},
      {"LLM_DEVICE_OUT_OF_MEMORY", 0x5010B00EU},
      {"LLM_PREFIX_ALREADY_EXIST", 0x5010B00FU},
      {"LLM_PREFIX_NOT_EXIST", 0x5010B010U},
      {"LLM_SEQ_LEN_OVER_LIMIT", 0x5010B011U},
      {"LLM_NO_FREE_BLOCK", 0x5010B012U},
      {"LLM_BLOCKS_OUT_OF_MEMORY", 0x5010B013U},
      {"LLM_CACHE_INCOMPATIBLE", 0x5010B014U},
      {"LLM_CACHE_KEY_ALREADY_EXIST", 0x5010B015U},
      {"LLM_COPY_CACHE_FAILED", 0x5010B016U},
      {"LLM_CACHE_ID_ALREADY_EXIST", 0x5010B017U},
      {"LLM_EXIST_LINK", 0x5010B018U},
      {"LLM_FEATURE_NOT_ENABLED", 0x5010B019U},
      {"LLM_TIMEOUT", 0x5010B01AU},
      {"LLM_LINK_BUSY", 0x5010B01BU},
      {"LLM_OUT_OF_MEMORY", 0x5010B01CU},
      {"LLM_DEVICE_MEM_ERROR", 507053U},
      {"LLM_SUSPECT_REMOTE_ERROR", 507057U},
  };
  std::map<std::string, Status> ours;
  for (const StatusInfo &s : kStatusTable) ours[s.name] = s.value;
  EXPECT_EQ(ours, vendor);
}

// The public headers declare the same values as the table (the vendor's
// llm_datadist.h subset in namespace llm_datadist, llm_error_codes.h in ge).
#define PIN_PUBLIC_(name) static_assert(name == ::llm_datadist::name, #name);
#define PIN_GE_(name) static_assert(name == ::ge::name, #name);
PIN_PUBLIC_(LLM_SUCCESS) PIN_PUBLIC_(LLM_FAILED) PIN_PUBLIC_(LLM_WAIT_PROC_TIMEOUT) PIN_PUBLIC_(LLM_KV_CACHE_NOT_EXIST)
PIN_PUBLIC_(LLM_PARAM_INVALID) PIN_PUBLIC_(LLM_NOT_YET_LINK) PIN_PUBLIC_(LLM_ALREADY_LINK) PIN_PUBLIC_(LLM_LINK_FAILED)
PIN_PUBLIC_(LLM_UNLINK_FAILED) PIN_PUBLIC_(LLM_NOTIFY_PROMPT_UNLINK_FAILED) PIN_PUBLIC_(LLM_CLUSTER_NUM_EXCEED_LIMIT)
PIN_PUBLIC_(LLM_PROCESSING_LINK) PIN_PUBLIC_(LLM_DEVICE_OUT_OF_MEMORY) PIN_PUBLIC_(LLM_EXIST_LINK)
PIN_PUBLIC_(LLM_FEATURE_NOT_ENABLED) PIN_PUBLIC_(LLM_TIMEOUT) PIN_PUBLIC_(LLM_LINK_BUSY) PIN_PUBLIC_(LLM_OUT_OF_MEMORY)
PIN_GE_(LLM_WAIT_PROC_TIMEOUT) PIN_GE_(LLM_KV_CACHE_NOT_EXIST) PIN_GE_(LLM_REPEAT_REQUEST)
PIN_GE_(LLM_REQUEST_ALREADY_COMPLETED) PIN_GE_(LLM_PARAM_INVALID) PIN_GE_(LLM_ENGINE_FINALIZED) PIN_GE_(LLM_NOT_YET_LINK)
PIN_GE_(LLM_ALREADY_LINK) PIN_GE_(LLM_LINK_FAILED) PIN_GE_(LLM_UNLINK_FAILED) PIN_GE_(LLM_NOTIFY_PROMPT_UNLINK_FAILED)
PIN_GE_(LLM_CLUSTER_NUM_EXCEED_LIMIT) PIN_GE_(LLM_PROCESSING_LINK) PIN_GE_(LLM_DEVICE_OUT_OF_MEMORY)
PIN_GE_(LLM_PREFIX_ALREADY_EXIST) PIN_GE_(LLM_PREFIX_NOT_EXIST) PIN_GE_(LLM_SEQ_LEN_OVER_LIMIT) PIN_GE_(LLM_NO_FREE_BLOCK)
PIN_GE_(LLM_BLOCKS_OUT_OF_MEMORY) PIN_GE_(LLM_CACHE_INCOMPATIBLE) PIN_GE_(LLM_CACHE_KEY_ALREADY_EXIST)
PIN_GE_(LLM_COPY_CACHE_FAILED) PIN_GE_(LLM_CACHE_ID_ALREADY_EXIST) PIN_GE_(LLM_EXIST_LINK) PIN_GE_(LLM_FEATURE_NOT_ENABLED)
PIN_GE_(LLM_TIMEOUT) PIN_GE_(LLM_LINK_BUSY) PIN_GE_(LLM_OUT_OF_MEMORY)
static_assert(::ge::SUCCESS == LLM_SUCCESS && ::ge::FAILED == LLM_FAILED, "ge::SUCCESS / ge::FAILED");
#undef PIN_PUBLIC_
#undef PIN_GE_

TEST(LlmStatusTable, EarlierNamesAreAliases) {
  static_assert(LLM_OUT_OF_MEMORY == LLM_RESOURCE_EXHAUSTED, "alias");
  static_assert(LLM_FEATURE_NOT_ENABLED == LLM_UNSUPPORTED, "alias");
  EXPECT_STREQ(StatusName(LLM_RESOURCE_EXHAUSTED), "LLM_OUT_OF_MEMORY");
  EXPECT_STREQ(StatusName(LLM_UNSUPPORTED), "LLM_FEATURE_NOT_ENABLED");
}

// Engine statuses are other numbers: each maps to the LLM status of the same meaning.
TEST(LlmStatusTable, EngineStatusesAreMapped) {
  EXPECT_EQ(FromEngine(adxl::SUCCESS), LLM_SUCCESS);
  EXPECT_EQ(FromEngine(adxl::PARAM_INVALID), LLM_PARAM_INVALID);
  EXPECT_EQ(FromEngine(adxl::TIMEOUT), LLM_TIMEOUT);
  EXPECT_EQ(FromEngine(adxl::NOT_CONNECTED), LLM_NOT_YET_LINK);
  EXPECT_EQ(FromEngine(adxl::ALREADY_CONNECTED), LLM_ALREADY_LINK);
  EXPECT_EQ(FromEngine(adxl::UNSUPPORTED), LLM_FEATURE_NOT_ENABLED);
  EXPECT_EQ(FromEngine(adxl::FAILED), LLM_FAILED);
  EXPECT_EQ(FromEngine(adxl::RESOURCE_EXHAUSTED), LLM_OUT_OF_MEMORY);
  EXPECT_EQ(FromEngine(adxl::NOTIFY_FAILED), LLM_FAILED);
}

}  // namespace
}  // namespace llm_datadist::internal
