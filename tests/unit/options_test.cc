// Engine options (docs/contract.md §3.5, src/config/options.h): keys, defaults, checks and
// environment fallbacks.
#include "config/options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace adxl {
namespace {

using Map = std::map<std::string, std::string>;

// Every environment variable ParseOptions reads.  The fixture clears them
// before each test and restores the original values afterwards.
const char *const kEnvVars[] = {"HCCL_RDMA_TC",           "HCCL_RDMA_SL",         "ADXL_MAX_REGISTRATIONS",
                                "ADXL_MAX_DEVICE_MEMORY", "ADXL_MAX_HOST_MEMORY", "ADXL_HEARTBEAT_MS", "ADXL_HEARTBEAT_TIMEOUT_MS", "ADXL_HCCS_COPY_THREADS",
                                "ADXL_PLUGIN_PATH",       "ADXL_PLUGIN",          "ADXL_AUTH_TOKEN"};

class OptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char *name : kEnvVars) {
      const char *v = getenv(name);
      saved_.push_back(v != nullptr ? std::optional<std::string>(v) : std::nullopt);
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < saved_.size(); ++i) {
      if (saved_[i].has_value()) {
        setenv(kEnvVars[i], saved_[i]->c_str(), 1);
      } else {
        unsetenv(kEnvVars[i]);
      }
    }
  }

  // Parses options that must be accepted.
  EngineOptions Accept(const Map &m) {
    EngineOptions o;
    std::string why;
    EXPECT_TRUE(ParseOptions(m, &o, &why)) << Describe(m) << " rejected: " << why;
    return o;
  }

  // Checks that options are rejected, with a reason, and *out untouched.
  void Reject(const Map &m) {
    EngineOptions o;
    o.traffic_class = 77;  // a value ParseOptions never produces
    o.plugin = "sentinel";
    std::string why;
    EXPECT_FALSE(ParseOptions(m, &o, &why)) << Describe(m) << " accepted";
    EXPECT_FALSE(why.empty()) << "no reason given for " << Describe(m);
    EXPECT_EQ(o.traffic_class, 77) << "output changed on rejection of " << Describe(m);
    EXPECT_EQ(o.plugin, "sentinel");
  }

  static std::string Describe(const Map &m) {
    std::string s = "{";
    for (const auto &kv : m) s += kv.first + "='" + kv.second + "' ";
    return s + "}";
  }

 private:
  std::vector<std::optional<std::string>> saved_;
};

// ---------------------------------------------------------------- defaults

TEST_F(OptionsTest, EmptyOptionsGiveDefaults) {
  EngineOptions o = Accept({});
  EXPECT_EQ(o.traffic_class, 132);
  EXPECT_EQ(o.service_level, 4);
  EXPECT_FALSE(o.auto_connect);
  EXPECT_EQ(o.pool_buffers, 4u);
  EXPECT_EQ(o.pool_buffer_mib, 8u);
  EXPECT_FALSE(o.fabric_mem);
  EXPECT_TRUE(o.protocols.empty());
  EXPECT_EQ(o.connect_queue_capacity, 128u);
  EXPECT_EQ(o.connect_threads, 2u);
  EXPECT_EQ(o.max_registrations, 256u);
  EXPECT_EQ(o.max_device_bytes, 50ull * 1024 * 1024 * 1024);
  EXPECT_EQ(o.max_host_bytes, 1024ull * 1024 * 1024 * 1024);
  // Cluster defaults, as the vendor's engine: a ping every 10 s, dead after
  // 120 s of silence.
  EXPECT_EQ(o.heartbeat_ms, 10000u);
  EXPECT_EQ(DeadAfterMs(o), 120000u);
  EXPECT_EQ(HeartbeatTickMs(o), 1000u);
  EXPECT_EQ(o.plugin_path, "");
  EXPECT_EQ(o.plugin, "ucx");
}

TEST_F(OptionsTest, RealCallerOptionSetIsAccepted) {
  EngineOptions o = Accept({{"adxl.RdmaTrafficClass", "132"},
                            {"adxl.RdmaServiceLevel", "4"},
                            {"adxl.LocalCommRes", R"({"version":"1.3"})"},
                            {"AutoConnect", "1"},
                            {"adxl.BufferPool", "0:0"}});
  EXPECT_EQ(o.traffic_class, 132);
  EXPECT_EQ(o.service_level, 4);
  EXPECT_TRUE(o.auto_connect);
  EXPECT_EQ(o.pool_buffers, 0u);
  EXPECT_EQ(o.pool_buffer_mib, 0u);
}

TEST_F(OptionsTest, UnknownKeysAreRejected) {
  Reject({{"adxl.NoSuchOption", "1"}});
  Reject({{"NoSuchOption", "1"}});
  Reject({{"rdmatrafficclass", "132"}});       // keys are case-sensitive
  Reject({{"adxl.adxl.RdmaTrafficClass", "132"}});
  Reject({{"adxl.", "1"}});
  Reject({{"", "1"}});
  // Project keys exist only with the "adxl." prefix.
  Reject({{"MaxRegistrations", "10"}});
  Reject({{"HeartbeatMs", "100"}});
  Reject({{"Plugin", "ucx"}});
}

TEST_F(OptionsTest, OneUnknownKeyAmongValidOnesIsRejected) {
  Reject({{"adxl.RdmaTrafficClass", "132"}, {"adxl.Bogus", "x"}});
}

// --------------------------------------------------------- both spellings

TEST_F(OptionsTest, TrafficClassAcceptedInBothSpellings) {
  EXPECT_EQ(Accept({{"adxl.RdmaTrafficClass", "8"}}).traffic_class, 8);
  EXPECT_EQ(Accept({{"RdmaTrafficClass", "12"}}).traffic_class, 12);
}

TEST_F(OptionsTest, ServiceLevelAcceptedInBothSpellings) {
  EXPECT_EQ(Accept({{"adxl.RdmaServiceLevel", "1"}}).service_level, 1);
  EXPECT_EQ(Accept({{"RdmaServiceLevel", "2"}}).service_level, 2);
}

TEST_F(OptionsTest, AutoConnectAcceptedInBothSpellings) {
  EXPECT_TRUE(Accept({{"AutoConnect", "1"}}).auto_connect);
  EXPECT_TRUE(Accept({{"adxl.AutoConnect", "1"}}).auto_connect);
}

TEST_F(OptionsTest, BufferPoolAcceptedInBothSpellings) {
  EngineOptions a = Accept({{"adxl.BufferPool", "2:16"}});
  EXPECT_EQ(a.pool_buffers, 2u);
  EXPECT_EQ(a.pool_buffer_mib, 16u);
  EngineOptions b = Accept({{"BufferPool", "3:1"}});
  EXPECT_EQ(b.pool_buffers, 3u);
  EXPECT_EQ(b.pool_buffer_mib, 1u);
}

TEST_F(OptionsTest, LocalCommResAcceptedInBothSpellings) {
  Accept({{"adxl.LocalCommRes", "{}"}});
  Accept({{"LocalCommRes", "{}"}});
  Reject({{"adxl.LocalCommRes", "[]"}});
  Reject({{"LocalCommRes", "[]"}});
}

TEST_F(OptionsTest, GlobalResourceConfigAcceptedInBothSpellings) {
  EXPECT_EQ(Accept({{"adxl.GlobalResourceConfig", R"({"connect_pool.thread_num": 3})"}}).connect_threads, 3u);
  EXPECT_EQ(Accept({{"GlobalResourceConfig", R"({"connect_pool.thread_num": 5})"}}).connect_threads, 5u);
}

TEST_F(OptionsTest, EnableUseFabricMemAcceptedInBothSpellings) {
  EXPECT_TRUE(Accept({{"adxl.EnableUseFabricMem", "1"}}).fabric_mem);
  EXPECT_TRUE(Accept({{"EnableUseFabricMem", "1"}}).fabric_mem);
}

TEST_F(OptionsTest, UnprefixedSpellingWinsOverPrefixed) {
  EngineOptions o = Accept({{"adxl.RdmaTrafficClass", "8"},
                            {"RdmaTrafficClass", "16"},
                            {"adxl.RdmaServiceLevel", "1"},
                            {"RdmaServiceLevel", "6"},
                            {"adxl.AutoConnect", "0"},
                            {"AutoConnect", "1"},
                            {"adxl.BufferPool", "1:1"},
                            {"BufferPool", "2:2"},
                            {"adxl.EnableUseFabricMem", "0"},
                            {"EnableUseFabricMem", "1"},
                            {"adxl.GlobalResourceConfig", R"({"connect_pool.thread_num": 7})"},
                            {"GlobalResourceConfig", R"({"connect_pool.thread_num": 9})"}});
  EXPECT_EQ(o.traffic_class, 16);
  EXPECT_EQ(o.service_level, 6);
  EXPECT_TRUE(o.auto_connect);
  EXPECT_EQ(o.pool_buffers, 2u);
  EXPECT_EQ(o.pool_buffer_mib, 2u);
  EXPECT_TRUE(o.fabric_mem);
  EXPECT_EQ(o.connect_threads, 9u);
}

TEST_F(OptionsTest, UnprefixedSpellingWinsInTheOtherDirectionToo) {
  // Not just "last one parsed wins": swap which value is larger.
  EngineOptions o = Accept({{"adxl.RdmaTrafficClass", "200"}, {"RdmaTrafficClass", "4"}});
  EXPECT_EQ(o.traffic_class, 4);
  EXPECT_FALSE(Accept({{"adxl.AutoConnect", "1"}, {"AutoConnect", "0"}}).auto_connect);
}

TEST_F(OptionsTest, MalformedUnprefixedValueIsRejectedEvenWithValidPrefixedOne) {
  Reject({{"adxl.RdmaTrafficClass", "8"}, {"RdmaTrafficClass", "130"}});
  Reject({{"adxl.AutoConnect", "1"}, {"AutoConnect", "true"}});
}

// ---------------------------------------------------------- traffic class

TEST_F(OptionsTest, TrafficClassBoundsAccepted) {
  EXPECT_EQ(Accept({{"adxl.RdmaTrafficClass", "0"}}).traffic_class, 0);
  EXPECT_EQ(Accept({{"adxl.RdmaTrafficClass", "4"}}).traffic_class, 4);
  EXPECT_EQ(Accept({{"adxl.RdmaTrafficClass", "252"}}).traffic_class, 252);
}

TEST_F(OptionsTest, TrafficClassNotMultipleOfFourRejected) {
  Reject({{"adxl.RdmaTrafficClass", "130"}});
  Reject({{"adxl.RdmaTrafficClass", "1"}});
  Reject({{"adxl.RdmaTrafficClass", "255"}});
}

TEST_F(OptionsTest, TrafficClassOutOfRangeRejected) {
  Reject({{"adxl.RdmaTrafficClass", "256"}});
  Reject({{"adxl.RdmaTrafficClass", "260"}});
  Reject({{"adxl.RdmaTrafficClass", "-4"}});
  Reject({{"adxl.RdmaTrafficClass", "18446744073709551616"}});
}

TEST_F(OptionsTest, TrafficClassNonNumericRejected) {
  Reject({{"adxl.RdmaTrafficClass", "abc"}});
  Reject({{"adxl.RdmaTrafficClass", "12a"}});
  Reject({{"adxl.RdmaTrafficClass", " 132"}});
  Reject({{"adxl.RdmaTrafficClass", "+132"}});
  Reject({{"adxl.RdmaTrafficClass", "132.0"}});
  Reject({{"adxl.RdmaTrafficClass", "-"}});
}

TEST_F(OptionsTest, TrafficClassEmptyValueRejected) {
  // An empty value is malformed (docs/contract.md §3.5); it must not silently mean "default".
  Reject({{"adxl.RdmaTrafficClass", ""}});
}

// ---------------------------------------------------------- service level

TEST_F(OptionsTest, ServiceLevelBoundsAccepted) {
  EXPECT_EQ(Accept({{"adxl.RdmaServiceLevel", "0"}}).service_level, 0);
  EXPECT_EQ(Accept({{"adxl.RdmaServiceLevel", "7"}}).service_level, 7);
}

TEST_F(OptionsTest, ServiceLevelOutOfRangeOrMalformedRejected) {
  Reject({{"adxl.RdmaServiceLevel", "8"}});
  Reject({{"adxl.RdmaServiceLevel", "-1"}});
  Reject({{"adxl.RdmaServiceLevel", "x"}});
  Reject({{"adxl.RdmaServiceLevel", "3 "}});
}

TEST_F(OptionsTest, ServiceLevelEmptyValueRejected) { Reject({{"adxl.RdmaServiceLevel", ""}}); }

// ------------------------------------------------------------ AutoConnect

TEST_F(OptionsTest, AutoConnectZeroAndOne) {
  EXPECT_FALSE(Accept({{"AutoConnect", "0"}}).auto_connect);
  EXPECT_TRUE(Accept({{"AutoConnect", "1"}}).auto_connect);
}

TEST_F(OptionsTest, AutoConnectOtherValuesRejected) {
  Reject({{"AutoConnect", "true"}});
  Reject({{"AutoConnect", "false"}});
  Reject({{"AutoConnect", "2"}});
  Reject({{"AutoConnect", ""}});
  Reject({{"AutoConnect", "01"}});
  Reject({{"AutoConnect", " 1"}});
}

// ------------------------------------------------------------- BufferPool

TEST_F(OptionsTest, BufferPoolZeroZeroTurnsPoolOff) {
  EngineOptions o = Accept({{"adxl.BufferPool", "0:0"}});
  EXPECT_EQ(o.pool_buffers, 0u);
  EXPECT_EQ(o.pool_buffer_mib, 0u);
}

TEST_F(OptionsTest, BufferPoolPositivePairAccepted) {
  EngineOptions o = Accept({{"adxl.BufferPool", "16:32"}});
  EXPECT_EQ(o.pool_buffers, 16u);
  EXPECT_EQ(o.pool_buffer_mib, 32u);
}

TEST_F(OptionsTest, BufferPoolMalformedRejected) {
  Reject({{"adxl.BufferPool", "0:8"}});
  Reject({{"adxl.BufferPool", "4:0"}});
  Reject({{"adxl.BufferPool", "4"}});
  Reject({{"adxl.BufferPool", "a:b"}});
  Reject({{"adxl.BufferPool", "4:"}});
  Reject({{"adxl.BufferPool", ":8"}});
  Reject({{"adxl.BufferPool", ""}});
  Reject({{"adxl.BufferPool", "4:8:1"}});
  Reject({{"adxl.BufferPool", "-4:8"}});
  Reject({{"adxl.BufferPool", "4:-8"}});
  Reject({{"adxl.BufferPool", " 4:8"}});
}

// ----------------------------------------------------------- LocalCommRes

TEST_F(OptionsTest, LocalCommResObjectWithVersionAndExtraFieldsAccepted) {
  Accept({{"adxl.LocalCommRes", R"({"version":"1.3"})"}});
  Accept({{"adxl.LocalCommRes",
           R"({"version":"1.3","server_list":[{"server_id":"node0","device":[{"device_id":"0"}]}],"x":1})"}});
}

TEST_F(OptionsTest, LocalCommResNonObjectRejected) {
  Reject({{"adxl.LocalCommRes", "[]"}});
  Reject({{"adxl.LocalCommRes", R"("1.3")"}});
  Reject({{"adxl.LocalCommRes", "1.3"}});
  Reject({{"adxl.LocalCommRes", "null"}});
  Reject({{"adxl.LocalCommRes", ""}});
  Reject({{"adxl.LocalCommRes", "{"}});
  Reject({{"adxl.LocalCommRes", R"({"version":"1.3"} trailing)"}});
}

// --------------------------------------------------- GlobalResourceConfig

TEST_F(OptionsTest, GlobalResourceConfigEmptyObjectKeepsDefaults) {
  EngineOptions o = Accept({{"GlobalResourceConfig", "{}"}});
  EXPECT_TRUE(o.protocols.empty());
  EXPECT_EQ(o.connect_queue_capacity, 128u);
  EXPECT_EQ(o.connect_threads, 2u);
}

TEST_F(OptionsTest, GlobalResourceConfigNonObjectRejected) {
  Reject({{"GlobalResourceConfig", "[]"}});
  Reject({{"GlobalResourceConfig", "42"}});
  Reject({{"GlobalResourceConfig", ""}});
  Reject({{"GlobalResourceConfig", "{bad json}"}});
}

TEST_F(OptionsTest, ProtocolDescAsDottedString) {
  EngineOptions o = Accept({{"GlobalResourceConfig", R"({"comm_resource_config.protocol_desc": "roce:host"})"}});
  EXPECT_EQ(o.protocols, std::vector<std::string>({"roce:host"}));
}

TEST_F(OptionsTest, ProtocolDescAsDottedList) {
  EngineOptions o = Accept(
      {{"GlobalResourceConfig", R"({"comm_resource_config.protocol_desc": ["hccs:host", "roce:device"]})"}});
  EXPECT_EQ(o.protocols, std::vector<std::string>({"hccs:host", "roce:device"}));
}

TEST_F(OptionsTest, ProtocolDescAsNestedString) {
  EngineOptions o =
      Accept({{"GlobalResourceConfig", R"({"comm_resource_config": {"protocol_desc": "hccs:device"}})"}});
  EXPECT_EQ(o.protocols, std::vector<std::string>({"hccs:device"}));
}

TEST_F(OptionsTest, ProtocolDescAsNestedList) {
  EngineOptions o = Accept({{"GlobalResourceConfig",
                             R"({"comm_resource_config": {"protocol_desc": ["roce:host", "hccs:host"]}})"}});
  EXPECT_EQ(o.protocols, std::vector<std::string>({"roce:host", "hccs:host"}));
}

TEST_F(OptionsTest, ProtocolDescUnknownValuesRejected) {
  Reject({{"GlobalResourceConfig", R"({"comm_resource_config.protocol_desc": "tcp:host"})"}});
  Reject({{"GlobalResourceConfig", R"({"comm_resource_config.protocol_desc": "roce:gpu"})"}});
  Reject({{"GlobalResourceConfig", R"({"comm_resource_config.protocol_desc": "roce"})"}});
  Reject({{"GlobalResourceConfig", R"({"comm_resource_config.protocol_desc": ["roce:host", "bogus"]})"}});
  Reject({{"GlobalResourceConfig", R"({"comm_resource_config": {"protocol_desc": "hccs:nowhere"}})"}});
}

TEST_F(OptionsTest, ProtocolDescWrongShapeRejected) {
  Reject({{"GlobalResourceConfig", R"({"comm_resource_config.protocol_desc": []})"}});
  Reject({{"GlobalResourceConfig", R"({"comm_resource_config.protocol_desc": 3})"}});
  Reject({{"GlobalResourceConfig", R"({"comm_resource_config.protocol_desc": [1]})"}});
  Reject({{"GlobalResourceConfig", R"({"comm_resource_config.protocol_desc": null})"}});
}

TEST_F(OptionsTest, ConnectPoolPositiveIntsAccepted) {
  EngineOptions dotted = Accept(
      {{"GlobalResourceConfig", R"({"connect_pool.task_queue_capacity": 64, "connect_pool.thread_num": 4})"}});
  EXPECT_EQ(dotted.connect_queue_capacity, 64u);
  EXPECT_EQ(dotted.connect_threads, 4u);
  EngineOptions nested =
      Accept({{"GlobalResourceConfig", R"({"connect_pool": {"task_queue_capacity": 1, "thread_num": 8}})"}});
  EXPECT_EQ(nested.connect_queue_capacity, 1u);
  EXPECT_EQ(nested.connect_threads, 8u);
}

TEST_F(OptionsTest, ConnectPoolNonPositiveOrNonIntegerRejected) {
  Reject({{"GlobalResourceConfig", R"({"connect_pool.thread_num": 0})"}});
  Reject({{"GlobalResourceConfig", R"({"connect_pool.thread_num": -1})"}});
  Reject({{"GlobalResourceConfig", R"({"connect_pool.thread_num": 2.5})"}});
  Reject({{"GlobalResourceConfig", R"({"connect_pool.thread_num": true})"}});
  Reject({{"GlobalResourceConfig", R"({"connect_pool.thread_num": "x"})"}});
  Reject({{"GlobalResourceConfig", R"({"connect_pool.task_queue_capacity": 0})"}});
  Reject({{"GlobalResourceConfig", R"({"connect_pool.task_queue_capacity": 4294967296})"}});
  Reject({{"GlobalResourceConfig", R"({"connect_pool.task_queue_capacity": 18446744073709551615})"}});
  Reject({{"GlobalResourceConfig", R"({"connect_pool": {"thread_num": 0}})"}});
}

TEST_F(OptionsTest, GlobalResourceConfigUnrelatedKeysIgnored) {
  EngineOptions o = Accept({{"GlobalResourceConfig", R"({"some_vendor_key": 1, "x": {"y": "z"}})"}});
  EXPECT_TRUE(o.protocols.empty());
  EXPECT_EQ(o.connect_threads, 2u);
}

// ---------------------------------------------------- EnableUseFabricMem

TEST_F(OptionsTest, EnableUseFabricMemZeroAndOne) {
  EXPECT_FALSE(Accept({{"EnableUseFabricMem", "0"}}).fabric_mem);
  EXPECT_TRUE(Accept({{"EnableUseFabricMem", "1"}}).fabric_mem);
}

TEST_F(OptionsTest, EnableUseFabricMemOtherValuesRejected) {
  Reject({{"EnableUseFabricMem", "true"}});
  Reject({{"EnableUseFabricMem", "2"}});
  Reject({{"EnableUseFabricMem", ""}});
}

// -------------------------------------------------- environment fallbacks

TEST_F(OptionsTest, TrafficClassFromEnvironment) {
  setenv("HCCL_RDMA_TC", "100", 1);
  EXPECT_EQ(Accept({}).traffic_class, 100);
}

TEST_F(OptionsTest, TrafficClassOptionWinsOverEnvironment) {
  setenv("HCCL_RDMA_TC", "100", 1);
  EXPECT_EQ(Accept({{"adxl.RdmaTrafficClass", "8"}}).traffic_class, 8);
  EXPECT_EQ(Accept({{"RdmaTrafficClass", "12"}}).traffic_class, 12);
}

TEST_F(OptionsTest, TrafficClassOptionWinsOverInvalidEnvironment) {
  setenv("HCCL_RDMA_TC", "abc", 1);
  EXPECT_EQ(Accept({{"adxl.RdmaTrafficClass", "8"}}).traffic_class, 8);
}

TEST_F(OptionsTest, InvalidTrafficClassEnvironmentRejected) {
  setenv("HCCL_RDMA_TC", "abc", 1);
  Reject({});
  setenv("HCCL_RDMA_TC", "130", 1);
  Reject({});
  setenv("HCCL_RDMA_TC", "256", 1);
  Reject({});
}

TEST_F(OptionsTest, ServiceLevelFromEnvironment) {
  setenv("HCCL_RDMA_SL", "6", 1);
  EXPECT_EQ(Accept({}).service_level, 6);
}

TEST_F(OptionsTest, ServiceLevelOptionWinsOverEnvironment) {
  setenv("HCCL_RDMA_SL", "6", 1);
  EXPECT_EQ(Accept({{"adxl.RdmaServiceLevel", "2"}}).service_level, 2);
  setenv("HCCL_RDMA_SL", "99", 1);
  EXPECT_EQ(Accept({{"RdmaServiceLevel", "3"}}).service_level, 3);
}

TEST_F(OptionsTest, InvalidServiceLevelEnvironmentRejected) {
  setenv("HCCL_RDMA_SL", "8", 1);
  Reject({});
  setenv("HCCL_RDMA_SL", "x", 1);
  Reject({});
}

TEST_F(OptionsTest, ProjectLimitsFromOptions) {
  EngineOptions o = Accept({{"adxl.MaxRegistrations", "3"},
                            {"adxl.MaxDeviceMemory", "4096"},
                            {"adxl.MaxHostMemory", "8192"},
                            {"adxl.HeartbeatMs", "250"},
                            {"adxl.PluginPath", "/opt/a:/opt/b"},
                            {"adxl.Plugin", "tcp"}});
  EXPECT_EQ(o.max_registrations, 3u);
  EXPECT_EQ(o.max_device_bytes, 4096u);
  EXPECT_EQ(o.max_host_bytes, 8192u);
  EXPECT_EQ(o.heartbeat_ms, 250u);
  EXPECT_EQ(o.plugin_path, "/opt/a:/opt/b");
  EXPECT_EQ(o.plugin, "tcp");
}

TEST_F(OptionsTest, ProjectLimitsFromEnvironment) {
  setenv("ADXL_MAX_REGISTRATIONS", "17", 1);
  setenv("ADXL_MAX_DEVICE_MEMORY", "1000", 1);
  setenv("ADXL_MAX_HOST_MEMORY", "2000", 1);
  setenv("ADXL_HEARTBEAT_MS", "50", 1);
  setenv("ADXL_PLUGIN_PATH", "/tmp/plugins", 1);
  setenv("ADXL_PLUGIN", "other", 1);
  EngineOptions o = Accept({});
  EXPECT_EQ(o.max_registrations, 17u);
  EXPECT_EQ(o.max_device_bytes, 1000u);
  EXPECT_EQ(o.max_host_bytes, 2000u);
  EXPECT_EQ(o.heartbeat_ms, 50u);
  EXPECT_EQ(o.plugin_path, "/tmp/plugins");
  EXPECT_EQ(o.plugin, "other");
}

TEST_F(OptionsTest, ProjectOptionWinsOverEnvironment) {
  setenv("ADXL_MAX_REGISTRATIONS", "17", 1);
  setenv("ADXL_MAX_HOST_MEMORY", "not-a-number", 1);
  setenv("ADXL_PLUGIN", "other", 1);
  EngineOptions o = Accept(
      {{"adxl.MaxRegistrations", "5"}, {"adxl.MaxHostMemory", "4096"}, {"adxl.Plugin", "ucx"}});
  EXPECT_EQ(o.max_registrations, 5u);
  EXPECT_EQ(o.max_host_bytes, 4096u);
  EXPECT_EQ(o.plugin, "ucx");
}

TEST_F(OptionsTest, HccsCopyThreads) {
  EXPECT_EQ(Accept({}).hccs_copy_threads, 0u);  // automatic
  EXPECT_EQ(Accept({{"adxl.HccsCopyThreads", "3"}}).hccs_copy_threads, 3u);
  EXPECT_EQ(Accept({{"adxl.HccsCopyThreads", "64"}}).hccs_copy_threads, 64u);
  Reject({{"adxl.HccsCopyThreads", "65"}});
  Reject({{"adxl.HccsCopyThreads", "-1"}});
  Reject({{"adxl.HccsCopyThreads", "two"}});
  setenv("ADXL_HCCS_COPY_THREADS", "2", 1);
  EXPECT_EQ(Accept({}).hccs_copy_threads, 2u);
  EXPECT_EQ(Accept({{"adxl.HccsCopyThreads", "1"}}).hccs_copy_threads, 1u);  // the option wins
}

TEST_F(OptionsTest, LargeMemoryLimitsAccepted) {
  EngineOptions o = Accept({{"adxl.MaxHostMemory", "9223372036854775807"}});
  EXPECT_EQ(o.max_host_bytes, 9223372036854775807ull);
}

// A handshake answer carries at most 4096 regions (wire::kMaxRegions): more
// registrations would make every inbound Connect fail, so more is refused.
TEST_F(OptionsTest, MaxRegistrationsIsAtMostWhatAHandshakeCarries) {
  EXPECT_EQ(Accept({{"adxl.MaxRegistrations", "4096"}}).max_registrations, 4096u);
  Reject({{"adxl.MaxRegistrations", "4097"}});
  setenv("ADXL_MAX_REGISTRATIONS", "8192", 1);
  Reject({});
}

TEST_F(OptionsTest, InvalidProjectOptionsRejected) {
  Reject({{"adxl.MaxRegistrations", "0"}});
  Reject({{"adxl.MaxRegistrations", "-1"}});
  Reject({{"adxl.MaxRegistrations", "4294967296"}});
  Reject({{"adxl.MaxRegistrations", "x"}});
  Reject({{"adxl.MaxDeviceMemory", "-1"}});
  Reject({{"adxl.MaxHostMemory", "1GiB"}});
  Reject({{"adxl.HeartbeatMs", "9"}});
  Reject({{"adxl.HeartbeatMs", ""}});
  Reject({{"adxl.Plugin", ""}});
  Reject({{"adxl.Plugin", "../evil"}});
}

TEST_F(OptionsTest, InvalidProjectEnvironmentRejected) {
  setenv("ADXL_MAX_REGISTRATIONS", "lots", 1);
  Reject({});
  unsetenv("ADXL_MAX_REGISTRATIONS");
  setenv("ADXL_MAX_DEVICE_MEMORY", "-5", 1);
  Reject({});
  unsetenv("ADXL_MAX_DEVICE_MEMORY");
  setenv("ADXL_HEARTBEAT_MS", "0", 1);
  Reject({});
  unsetenv("ADXL_HEARTBEAT_MS");
  setenv("ADXL_PLUGIN", "/abs/path", 1);
  Reject({});
}

TEST_F(OptionsTest, EnvironmentIsRestoredBetweenTests) {
  // The fixture clears every variable it knows: defaults apply here even if
  // an earlier test set them.
  EngineOptions o = Accept({});
  EXPECT_EQ(o.traffic_class, 132);
  EXPECT_EQ(o.service_level, 4);
  EXPECT_EQ(o.max_registrations, 256u);
  EXPECT_EQ(o.plugin, "ucx");
  EXPECT_EQ(o.auth_token, "");
}

TEST_F(OptionsTest, AuthTokenOptionAndEnvironment) {
  EXPECT_EQ(Accept({}).auth_token, "");
  EXPECT_EQ(Accept({{"adxl.AuthToken", "s3cret"}}).auth_token, "s3cret");
  Reject({{"adxl.AuthToken", ""}});
  Reject({{"adxl.AuthToken", std::string(1025, 'x')}});
  EXPECT_EQ(Accept({{"adxl.AuthToken", std::string(1024, 'x')}}).auth_token.size(), 1024u);
  Reject({{"AuthToken", "s3cret"}});  // project keys need the adxl. prefix
  setenv("ADXL_AUTH_TOKEN", "from-env", 1);
  EXPECT_EQ(Accept({}).auth_token, "from-env");
  EXPECT_EQ(Accept({{"adxl.AuthToken", "opt"}}).auth_token, "opt");  // the option wins
  setenv("ADXL_AUTH_TOKEN", "", 1);
  EXPECT_EQ(Accept({}).auth_token, "");  // empty environment value: unset
  setenv("ADXL_AUTH_TOKEN", std::string(1025, 'y').c_str(), 1);
  Reject({});
}

// adxl.HeartbeatTimeoutMs: the death threshold.  Given alone, the period
// keeps its old meaning (dead after 3 periods); a timeout under 2 periods
// is refused, naming both keys.
TEST_F(OptionsTest, HeartbeatTimeoutDefaultsAndChecks) {
  EngineOptions o;
  std::string why;
  ASSERT_TRUE(ParseOptions({{"adxl.HeartbeatMs", "200"}}, &o, &why)) << why;
  EXPECT_EQ(DeadAfterMs(o), 600u);
  EXPECT_EQ(HeartbeatTickMs(o), 200u);
  ASSERT_TRUE(ParseOptions({{"adxl.HeartbeatMs", "200"}, {"adxl.HeartbeatTimeoutMs", "5000"}}, &o, &why)) << why;
  EXPECT_EQ(DeadAfterMs(o), 5000u);
  ASSERT_TRUE(ParseOptions({{"adxl.HeartbeatTimeoutMs", "30000"}}, &o, &why)) << why;
  EXPECT_EQ(o.heartbeat_ms, 10000u);
  EXPECT_EQ(DeadAfterMs(o), 30000u);
  EXPECT_FALSE(ParseOptions({{"adxl.HeartbeatMs", "1000"}, {"adxl.HeartbeatTimeoutMs", "1999"}}, &o, &why));
  EXPECT_NE(why.find("adxl.HeartbeatTimeoutMs"), std::string::npos) << why;
  EXPECT_NE(why.find("adxl.HeartbeatMs"), std::string::npos) << why;
  EXPECT_FALSE(ParseOptions({{"adxl.HeartbeatTimeoutMs", "-1"}}, &o, &why));
}

}  // namespace
}  // namespace adxl
