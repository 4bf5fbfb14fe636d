#include "config/options.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>

#include "config/option_table.h"

namespace adxl {
namespace {

// Where a setting's value comes from: the option (either spelling of a vendor
// key, the un-prefixed one first), else its environment variable.
// Returns false when neither gives one.
bool FindValue(const OptionSpec &spec, const std::map<std::string, std::string> &options, std::string *value,
               bool *from_env) {
  auto it = options.find(spec.key);
  if (it == options.end() && spec.kind == OptionKind::kVendor) it = options.find(std::string("adxl.") + spec.key);
  if (it != options.end()) {
    *value = it->second;
    *from_env = false;
    return true;
  }
  if (spec.env == nullptr) return false;
  const char *v = getenv(spec.env);
  if (v == nullptr || (spec.empty_env_is_unset && *v == '\0')) return false;
  *value = v;
  *from_env = true;
  return true;
}

bool IsKnownKey(const std::string &k) {
  for (const OptionSpec &s : OptionTable()) {
    if (s.kind == OptionKind::kEnvOnly) continue;
    if (k == s.key) return true;
    if (s.kind == OptionKind::kVendor && k.size() > 5 && k.compare(0, 5, "adxl.") == 0 && k.compare(5, std::string::npos, s.key) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool ParseOptions(const std::map<std::string, std::string> &options, EngineOptions *out, std::string *why) {
  for (const auto &kv : options) {
    if (!IsKnownKey(kv.first)) {
      *why = "unknown option '" + kv.first + "'";
      return false;
    }
  }
  EngineOptions o;
  for (const OptionSpec &spec : OptionTable()) {
    if (spec.kind == OptionKind::kEnvOnly) continue;
    std::string value;
    bool from_env = false;
    if (!FindValue(spec, options, &value, &from_env)) continue;
    if (!spec.Apply(value, from_env, &o, why)) return false;
  }
  if (o.heartbeat_timeout_ms != 0 && o.heartbeat_timeout_ms < 2ull * o.heartbeat_ms) {
    *why = "adxl.HeartbeatTimeoutMs (" + std::to_string(o.heartbeat_timeout_ms) +
           ") must be at least 2 heartbeat periods (adxl.HeartbeatMs " + std::to_string(o.heartbeat_ms) + ")";
    return false;
  }
  *out = o;
  return true;
}

uint32_t DeadAfterMs(const EngineOptions &o) {
  if (o.heartbeat_timeout_ms != 0) return o.heartbeat_timeout_ms;
  if (!o.heartbeat_ms_given) return std::max(kDefaultHeartbeatTimeoutMs, 3 * o.heartbeat_ms);
  return static_cast<uint32_t>(std::min<uint64_t>(3ull * o.heartbeat_ms, UINT32_MAX));
}

uint32_t HeartbeatTickMs(const EngineOptions &o) { return std::min(o.heartbeat_ms, kMaxHeartbeatTickMs); }

}  // namespace adxl
