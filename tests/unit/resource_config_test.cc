// The vendor's JSON options, LocalCommRes and GlobalResourceConfig
// (src/config/resource_config.h, docs/contract.md §3.5, §9.3): every key the
// vendor documents is accepted in the vendor's range (and does its job or is
// logged once as not applicable), values out of range are PARAM_INVALID, and
// protocols of hardware no host here has (UB) are refused naming the lanes
// that exist.
#include "config/resource_config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "config/options.h"

namespace adxl {
namespace {

using Map = std::map<std::string, std::string>;

class ResourceConfigTest : public ::testing::Test {
 protected:
  EngineOptions Accept(const Map &m) {
    EngineOptions o;
    std::string why;
    EXPECT_TRUE(ParseOptions(m, &o, &why)) << m.begin()->second << " rejected: " << why;
    return o;
  }
  void Reject(const Map &m) {
    EngineOptions o;
    std::string why;
    EXPECT_FALSE(ParseOptions(m, &o, &why)) << m.begin()->second << " accepted";
    EXPECT_FALSE(why.empty());
  }
};


TEST_F(ResourceConfigTest, ProtocolDescForUbHardwareIsRefusedNamingTheLanesThatExist) {
  for (const char *p : {"ub_ctp", "ub_ctp:device", "ub_ctp:host", "uboe:device", "ub_rtp:device", "ub_tp:host",
                        "ubg:device"}) {
    std::string why;
    EngineOptions o;
    ASSERT_FALSE(ApplyGlobalResourceConfigJson(
        "GlobalResourceConfig", std::string(R"({"comm_resource_config.protocol_desc": [")") + p + "\"]}", &o, &why))
        << p;
    EXPECT_NE(why.find("needs UB links"), std::string::npos) << why;
    EXPECT_NE(why.find("roce:device"), std::string::npos) << why;
    EXPECT_NE(why.find("hccs:device"), std::string::npos) << why;
    Reject({{"GlobalResourceConfig", std::string(R"({"comm_resource_config.protocol_desc": ")") + p + "\"}"}});
  }
}

TEST_F(ResourceConfigTest, EveryDocumentedGlobalResourceConfigKeyIsAcceptedInTheVendorsRange) {
  // The vendor's samples, quoted numbers included.
  EngineOptions o = Accept({{"GlobalResourceConfig", R"({
      "fabric_memory.max_capacity": "128", "fabric_memory.start_address": "40",
      "fabric_memory.task_stream_num": "1",
      "connect_pool.thread_num": "2", "connect_pool.task_queue_capacity": "256",
      "comm_resource_config.listen_port": "26666", "comm_resource_config.max_active_channels": "128",
      "comm_resource_config.qos": 3,
      "channel_pool.max_channel": "10", "channel_pool.high_waterline": "0.3", "channel_pool.low_waterline": "0.1",
      "comm_resource_config.protocol_desc": ["roce:device", "hccs:device"]})"}});
  EXPECT_EQ(o.connect_threads, 2u);
  EXPECT_EQ(o.connect_queue_capacity, 256u);
  EXPECT_EQ(o.protocols, std::vector<std::string>({"roce:device", "hccs:device"}));
}

TEST_F(ResourceConfigTest, DocumentedGlobalResourceConfigKeysOutOfTheVendorsRangeAreRejected) {
  for (const char *bad : {
           R"({"fabric_memory.max_capacity": 0})", R"({"fabric_memory.max_capacity": 1025})",
           R"({"fabric_memory.start_address": -1})", R"({"fabric_memory.task_stream_num": 9})",
           R"({"connect_pool.thread_num": 65})", R"({"connect_pool.task_queue_capacity": 65536})",
           R"({"comm_resource_config.listen_port": 0})", R"({"comm_resource_config.listen_port": "70000"})",
           R"({"comm_resource_config.max_active_channels": 0})", R"({"comm_resource_config.qos": 8})",
           R"({"channel_pool.max_channel": 513})", R"({"channel_pool.high_waterline": "0.3"})",
           R"({"channel_pool.high_waterline": 0.1, "channel_pool.low_waterline": 0.3})",
           R"({"channel_pool.high_waterline": 1, "channel_pool.low_waterline": 0.5})",
           R"({"comm_resource_config.qos": "x"})"}) {
    Reject({{"GlobalResourceConfig", bad}});
  }
}

// §5.10: channel_pool.* turn the channel pool on, with the vendor's ranges:
// max_channel (0, 512] (default 512), waterlines fractions in (0, 1) given
// together, low below high, plain decimals only.
TEST_F(ResourceConfigTest, ChannelPoolKeysAreStrictlyValidatedAndTurnThePoolOn) {
  EngineOptions off = Accept({{"GlobalResourceConfig", R"({"connect_pool.thread_num": 2})"}});
  EXPECT_FALSE(off.pool_on);
  EngineOptions o = Accept({{"GlobalResourceConfig", R"({"channel_pool.max_channel": "32",
      "channel_pool.high_waterline": "0.8", "channel_pool.low_waterline": ".5"})"}});
  EXPECT_TRUE(o.pool_on);
  EXPECT_EQ(o.pool_max_channel, 32u);
  EXPECT_DOUBLE_EQ(o.pool_high_waterline, 0.8);
  EXPECT_DOUBLE_EQ(o.pool_low_waterline, 0.5);
  o = Accept({{"GlobalResourceConfig", R"({"channel_pool": {"high_waterline": 0.9, "low_waterline": 0.2}})"}});
  EXPECT_TRUE(o.pool_on);
  EXPECT_EQ(o.pool_max_channel, 512u);
  o = Accept({{"GlobalResourceConfig", R"({"channel_pool.max_channel": 512})"}});
  EXPECT_TRUE(o.pool_on);
  EXPECT_EQ(o.pool_high_waterline, 0.0);
  for (const char *bad : {
           R"({"channel_pool.max_channel": 0})", R"({"channel_pool.max_channel": -1})",
           R"({"channel_pool.max_channel": "1.5"})", R"({"channel_pool.max_channel": "x"})",
           R"({"channel_pool.low_waterline": "0.3"})",
           R"({"channel_pool.high_waterline": 0.5, "channel_pool.low_waterline": 0.5})",
           R"({"channel_pool.high_waterline": 0, "channel_pool.low_waterline": 0})",
           R"({"channel_pool.high_waterline": 0.8, "channel_pool.low_waterline": -0.1})",
           R"({"channel_pool.high_waterline": "0.8 ", "channel_pool.low_waterline": "0.1"})",
           R"({"channel_pool.high_waterline": " 0.8", "channel_pool.low_waterline": "0.1"})",
           R"({"channel_pool.high_waterline": "8e-1", "channel_pool.low_waterline": "0.1"})",
           R"({"channel_pool.high_waterline": "0x0.8", "channel_pool.low_waterline": "0.1"})",
           R"({"channel_pool.high_waterline": "nan", "channel_pool.low_waterline": "0.1"})",
           R"({"channel_pool.high_waterline": "0.8.1", "channel_pool.low_waterline": "0.1"})",
           R"({"channel_pool.high_waterline": "", "channel_pool.low_waterline": "0.1"})",
           R"({"channel_pool.high_waterline": true, "channel_pool.low_waterline": "0.1"})"}) {
    Reject({{"GlobalResourceConfig", bad}});
  }
}

TEST_F(ResourceConfigTest, LocalCommResVersionsAndEndpointsAsTheVendorDocumentsThem) {
  Accept({{"LocalCommRes", R"({"version": "1.2"})"}});
  Accept({{"LocalCommRes", R"({"version": "1.0", "server_list": []})"}});
  Accept({{"LocalCommRes", R"({"version": "1.3", "net_instance_id": "superpod1_1",
           "endpoint_list": [{"protocol": "roce", "comm_id": "10.10.10.1", "placement": "device"}]})"}});
  Reject({{"LocalCommRes", R"({"version": "2.0"})"}});
  Reject({{"LocalCommRes", R"({"version": 1.3})"}});
  Reject({{"LocalCommRes", R"({"version": "1.3", "endpoint_list": {}})"}});
  for (const char *p : {"ub_ctp", "ub_tp", "uboe", "ubg"}) {
    std::string why;
    EXPECT_FALSE(ApplyLocalCommResJson("LocalCommRes",
                                       std::string(R"({"version": "1.3", "endpoint_list": [{"protocol": ")") + p +
                                           R"(", "comm_id": "x", "placement": "host"}]})",
                                       &why));
    EXPECT_NE(why.find("needs UB links"), std::string::npos) << why;
  }
}


}  // namespace
}  // namespace adxl
