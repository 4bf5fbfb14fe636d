// Engine options: what Initialize accepts, parsed into EngineOptions.
//
// Every setting (key, environment variable, accepted values, default,
// description) is an entry of the options table, src/config/option_table.cc;
// `adxl-info` prints it and docs/options.md's options table is generated from it.
// The rules, for all keys:
//  - Vendor keys (docs/contract.md §3.5, e.g. "RdmaTrafficClass") are also
//    accepted with the "adxl." prefix; the un-prefixed spelling wins when both
//    are given (and must then be valid itself).
//  - Project keys exist only with the "adxl." prefix ("adxl.HeartbeatMs").
//  - A key with an environment variable falls back to it when the key is not
//    given; the option wins.  For RdmaTrafficClass, RdmaServiceLevel and
//    adxl.AuthToken an empty variable counts as unset; for the others an empty
//    value is checked like any other.
//  - Keys are case-sensitive.  An unknown key, or a malformed value from an
//    option or a variable, is PARAM_INVALID at Initialize, with a message
//    naming the key or its variable.
//  - Defaults are EngineOptions' member initializers below.
#ifndef ADXL_SRC_CONFIG_OPTIONS_H_
#define ADXL_SRC_CONFIG_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace adxl {

// Defaults shared with Registry::Limits (src/memory/registry.h).
constexpr uint32_t kDefaultMaxRegistrations = 256;
// adxl.MaxRegistrations' upper bound: a handshake answer (HelloAck) carries
// at most this many regions (wire::kMaxRegions; the two are held equal in
// core/registrar.cc).  More registrations could be made, but every inbound
// Connect would then be refused.
constexpr uint32_t kMaxRegistrationsLimit = 4096;
constexpr uint64_t kDefaultMaxDeviceBytes = 50ull << 30;
constexpr uint64_t kDefaultMaxHostBytes = 1ull << 40;
constexpr uint32_t kDefaultHeartbeatMs = 10000;
constexpr uint32_t kDefaultHeartbeatTimeoutMs = 120000;
// adxl.MaxInboundPeers: above the 512 peers of the connect storm (docs/performance.md).
constexpr uint32_t kDefaultMaxInboundPeers = 1024;
// The control loop's tick: the heartbeat judges silence this often even when
// it pings less often, so that detection is not coarser than a second.
constexpr uint32_t kMaxHeartbeatTickMs = 1000;

struct EngineOptions {
  int traffic_class = 132;
  int service_level = 4;
  bool auto_connect = false;
  uint32_t pool_buffers = 4;
  uint32_t pool_buffer_mib = 8;
  bool fabric_mem = false;
  // Allowed "protocol:placement" pairs; empty means everything is allowed.
  std::vector<std::string> protocols;
  uint32_t connect_queue_capacity = 128;
  uint32_t connect_threads = 2;

  uint32_t max_registrations = kDefaultMaxRegistrations;
  uint64_t max_device_bytes = kDefaultMaxDeviceBytes;
  uint64_t max_host_bytes = kDefaultMaxHostBytes;
  // Liveness (core/heartbeat.h).  Cluster defaults as the vendor's engine:
  // a ping every 10 s, death after 120 s of silence, so that a peer starved
  // of CPU for seconds, or one of hundreds still wiring up, is never
  // declared dead.  A caller that gives only the period gets 3 periods.
  uint32_t heartbeat_ms = kDefaultHeartbeatMs;
  uint32_t heartbeat_timeout_ms = 0;  // 0: not given, see DeadAfterMs
  bool heartbeat_ms_given = false;    // adxl.HeartbeatMs (or its variable) was set
  uint32_t stats_interval_ms = 30 * 60 * 1000;  // the vendor's statistics period; 0: no summary line
  uint32_t hccs_copy_threads = 0;  // 0: automatic
  std::string plugin_path;
  std::string plugin = "ucx";
  std::string auth_token;  // empty: no access control
  // Inbound cap: distinct peers linked to this engine at once (core/engine.h).
  uint32_t max_inbound_peers = kDefaultMaxInboundPeers;
  // channel_pool.* (GlobalResourceConfig; core/channel_pool.h).  The pool is
  // on when any of the three keys is given.
  bool pool_on = false;
  uint32_t pool_max_channel = 512;
  double pool_high_waterline = 0;  // 0: not given (no eviction before max_channel)
  double pool_low_waterline = 0;
};

// How long a peer may be silent before it is dead: adxl.HeartbeatTimeoutMs
// when given, else 3 periods when adxl.HeartbeatMs was given, else 120 s.
uint32_t DeadAfterMs(const EngineOptions &o);
// The control loop's tick: the heartbeat period, at most kMaxHeartbeatTickMs.
uint32_t HeartbeatTickMs(const EngineOptions &o);

// Parses `options` (plus environment fallbacks) into *out.  On error returns
// false with a message naming the key and what was wrong.
bool ParseOptions(const std::map<std::string, std::string> &options, EngineOptions *out, std::string *why);

}  // namespace adxl

#endif  // ADXL_SRC_CONFIG_OPTIONS_H_
