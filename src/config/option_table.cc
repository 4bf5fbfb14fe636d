#include "config/option_table.h"

#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "common/log.h"
#include "config/resource_config.h"

namespace adxl {
namespace {

constexpr size_t kMaxAuthToken = 1024;

bool ParseInt(const std::string &s, int64_t lo, int64_t hi, int64_t *out) {
  if (s.empty() || s.size() > 20) return false;
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (v > static_cast<uint64_t>(INT64_MAX)) return false;
  int64_t sv = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  if (sv < lo || sv > hi) return false;
  *out = sv;
  return true;
}


bool ApplyBufferPool(const OptionSpec &spec, const std::string &v, bool, EngineOptions *o, std::string *why) {
  size_t colon = v.find(':');
  int64_t nb = 0, sz = 0;
  bool ok = colon != std::string::npos && ParseInt(v.substr(0, colon), 0, 1024, &nb) &&
            ParseInt(v.substr(colon + 1), 0, 1024, &sz) && ((nb == 0 && sz == 0) || (nb > 0 && sz > 0));
  if (!ok) {
    *why = std::string(spec.key) + " '" + v +
           "': expected \"N:S\" (N buffers of S MiB, both in [1,1024]) or \"0:0\"";
    return false;
  }
  o->pool_buffers = static_cast<uint32_t>(nb);
  o->pool_buffer_mib = static_cast<uint32_t>(sz);
  return true;
}

// The JSON options live in config/resource_config.cc.
bool ApplyLocalCommRes(const OptionSpec &spec, const std::string &v, bool, EngineOptions *, std::string *why) {
  return ApplyLocalCommResJson(spec.key, v, why);
}

bool ApplyGlobalResourceConfig(const OptionSpec &spec, const std::string &text, bool, EngineOptions *o,
                               std::string *why) {
  return ApplyGlobalResourceConfigJson(spec.key, text, o, why);
}

std::string ShowGlobalResourceConfig(const EngineOptions &o) { return ShowGlobalResourceConfigJson(o); }

bool ApplyPlugin(const OptionSpec &spec, const std::string &v, bool, EngineOptions *o, std::string *why) {
  if (v.empty() || v.find('/') != std::string::npos) {
    *why = std::string(spec.key) + " '" + v + "': expected a plugin name such as \"ucx\"";
    return false;
  }
  o->plugin = v;
  return true;
}

bool ApplyAuthToken(const OptionSpec &spec, const std::string &v, bool from_env, EngineOptions *o,
                    std::string *why) {
  if (from_env) {
    if (v.size() > kMaxAuthToken) {
      *why = std::string(spec.env) + ": expected at most " + std::to_string(kMaxAuthToken) + " bytes";
      return false;
    }
  } else if (v.empty() || v.size() > kMaxAuthToken) {
    *why = std::string(spec.key) + ": expected 1.." + std::to_string(kMaxAuthToken) + " bytes, got " +
           std::to_string(v.size());
    return false;
  }
  o->auth_token = v;
  return true;
}

OptionSpec Int(const char *key, OptionKind kind, const char *env, bool empty_env_is_unset, bool bytes, int64_t lo,
               int64_t hi, int64_t multiple, int64_t (*get)(const EngineOptions &),
               void (*set)(EngineOptions *, int64_t), const char *description) {
  return OptionSpec{key, kind, env, empty_env_is_unset, bytes, nullptr, description, lo, hi, multiple,
                    get, set, nullptr, nullptr};
}

OptionSpec Other(const char *key, OptionKind kind, const char *env, bool empty_env_is_unset, const char *values,
                 bool (*apply)(const OptionSpec &, const std::string &, bool, EngineOptions *, std::string *),
                 std::string (*show)(const EngineOptions &), const char *description) {
  return OptionSpec{key, kind, env, empty_env_is_unset, false, values, description, 0, 0, 0,
                    nullptr, nullptr, apply, show};
}

// An integer option that is one field of EngineOptions: the table's getter
// and setter are these two, instantiated for the field.
template <auto Field>
int64_t GetField(const EngineOptions &o) {
  return static_cast<int64_t>(o.*Field);
}
template <auto Field>
void SetField(EngineOptions *o, int64_t v) {
  o->*Field = static_cast<std::remove_reference_t<decltype(o->*Field)>>(v);
}
template <auto Field>
OptionSpec IntField(const char *key, OptionKind kind, const char *env, bool empty_env_is_unset, bool bytes,
                    int64_t lo, int64_t hi, int64_t multiple, const char *description) {
  return Int(key, kind, env, empty_env_is_unset, bytes, lo, hi, multiple, GetField<Field>, SetField<Field>,
             description);
}

// A `0` / `1` option that is one field of EngineOptions, with no
// environment variable.
template <bool EngineOptions::*Field>
bool ApplyBool(const OptionSpec &spec, const std::string &v, bool, EngineOptions *o, std::string *why) {
  if (v != "0" && v != "1") {
    *why = std::string(spec.key) + " '" + v + "': expected \"0\" or \"1\"";
    return false;
  }
  o->*Field = v == "1";
  return true;
}
template <bool EngineOptions::*Field>
std::string ShowBool(const EngineOptions &o) {
  return o.*Field ? "1" : "0";
}
template <bool EngineOptions::*Field>
OptionSpec BoolField(const char *key, OptionKind kind, const char *description) {
  return Other(key, kind, nullptr, false, "`0` / `1`", ApplyBool<Field>, ShowBool<Field>, description);
}

// The default of an environment-only setting is stated in its description:
// the code that reads it (not ParseOptions) holds it.
OptionSpec EnvOnly(const char *env, const char *values, const char *description) {
  return OptionSpec{nullptr, OptionKind::kEnvOnly, env, false, false, values, description, 0, 0, 0,
                    nullptr, nullptr, nullptr, nullptr};
}

std::vector<OptionSpec> BuildTable() {
  using K = OptionKind;
  constexpr int64_t kU32 = UINT32_MAX;
  constexpr int64_t kI64 = INT64_MAX;
  std::vector<OptionSpec> t;
  t.push_back(IntField<&EngineOptions::traffic_class>(
      "RdmaTrafficClass", K::kVendor, "HCCL_RDMA_TC", true, false, 0, 255, 4,
      "traffic class of the RDMA lane; reaches `UCX_IB_TRAFFIC_CLASS` where an InfiniBand device "
      "exists (a `UCX_*` variable the user set wins)"));
  t.push_back(IntField<&EngineOptions::service_level>(
      "RdmaServiceLevel", K::kVendor, "HCCL_RDMA_SL", true, false, 0, 7, 0,
      "service level of the RDMA lane; reaches `UCX_IB_SL` as the traffic class does"));
  t.push_back(BoolField<&EngineOptions::auto_connect>(
      "AutoConnect", K::kVendor,
      "`1`: a transfer or notify to a peer not connected connects first, and a failed link is "
      "dropped so that the next call reconnects"));
  t.push_back(BoolField<&EngineOptions::fabric_mem>(
      "EnableUseFabricMem", K::kVendor,
      "`1`: same-node peers copy `MallocMem` memory through a direct mapping of it (HCCS lane)"));
  t.push_back(Other(
      "BufferPool", K::kVendor, nullptr, false, "`N:S` (N buffers of S MiB, both in [1,1024]) or `0:0` (off)",
      ApplyBufferPool,
      [](const EngineOptions &o) -> std::string {
        return std::to_string(o.pool_buffers) + ":" + std::to_string(o.pool_buffer_mib);
      },
      "staging buffers through which transfers of unregistered local memory move"));
  t.push_back(Other("LocalCommRes", K::kVendor, nullptr, false,
                    "JSON object: `version` `1.0`, `1.2` or `1.3`; `endpoint_list` entries of UB protocols "
                    "(`ub_ctp`, `ub_tp`, `ub_rtp`, `uboe`, `ubg`) are refused",
                    ApplyLocalCommRes, [](const EngineOptions &) -> std::string { return ""; },
                    "the vendor's device list (ranktable or endpoints); accepted for compatibility, each field "
                    "logged once as not applicable: the engine finds its own interfaces"));
  t.push_back(Other("GlobalResourceConfig", K::kVendor, nullptr, false,
                    "JSON object, keys dotted (`a.b`) or nested, with the vendor's ranges: "
                    "`comm_resource_config.protocol_desc` (`hccs:host`, `hccs:device`, `roce:host`, "
                    "`roce:device`, a string or a list; UB protocols are refused), "
                    "`connect_pool.thread_num` [1, 64], `connect_pool.task_queue_capacity` [1, 65535], "
                    "`channel_pool.max_channel` [1, 512] (default 512), `channel_pool.high_waterline` / "
                    "`low_waterline` fractions in (0, 1), plain decimals, given together, low below high; "
                    "`fabric_memory.*`, `comm_resource_config.listen_port` / `max_active_channels` / `qos` "
                    "checked and logged once as not applicable; other keys ignored",
                    ApplyGlobalResourceConfig, ShowGlobalResourceConfig,
                    "`protocol_desc` restricts the lanes links may use (default: all); `connect_pool` sizes "
                    "the HIXL facade's asynchronous connect queue and its threads; any `channel_pool` key turns "
                    "the channel pool on: at most `max_channel` outgoing links, a `Connect` above the high mark "
                    "first evicts links idle for 1 s (never used first, then least recently used) down to the "
                    "low mark, at `max_channel` it waits up to its timeout for one to become idle and then "
                    "returns `RESOURCE_EXHAUSTED`; a transfer or notify to an evicted peer reconnects by itself "
                    "(contract §5.10)"));
  t.push_back(IntField<&EngineOptions::max_registrations>(
      "adxl.MaxRegistrations", K::kProject, "ADXL_MAX_REGISTRATIONS", false, false, 1, kMaxRegistrationsLimit, 0,
      "most memory registrations this engine holds at once; no more than a handshake answer carries (4096 "
      "regions), or inbound Connects would fail"));
  t.push_back(IntField<&EngineOptions::max_device_bytes>(
      "adxl.MaxDeviceMemory", K::kProject, "ADXL_MAX_DEVICE_MEMORY", false, true, 0, kI64, 0,
      "most bytes of device memory registered at once"));
  t.push_back(IntField<&EngineOptions::max_host_bytes>(
      "adxl.MaxHostMemory", K::kProject, "ADXL_MAX_HOST_MEMORY", false, true, 0, kI64, 0,
      "most bytes of host memory registered at once"));
  t.push_back(Int("adxl.HeartbeatMs", K::kProject, "ADXL_HEARTBEAT_MS", false, false, 10, kU32, 0,
                  [](const EngineOptions &o) -> int64_t { return o.heartbeat_ms; },
                  [](EngineOptions *o, int64_t v) {
                    o->heartbeat_ms = static_cast<uint32_t>(v);
                    o->heartbeat_ms_given = true;
                  },
                  "ping period of the control channel in ms (the vendor's 10 s); each client end pings its "
                  "peer this often and tells it the period at the handshake"));
  t.push_back(IntField<&EngineOptions::heartbeat_timeout_ms>(
      "adxl.HeartbeatTimeoutMs", K::kProject, "ADXL_HEARTBEAT_TIMEOUT_MS", false, false, 0, kU32, 0,
      "silence in ms after which a linked peer is dead (at least 2 periods); `0`: 120000 (the "
      "vendor's 120 s), or 3 periods when only `adxl.HeartbeatMs` is given.  A server end judges "
      "each client by the client's own period and timeout, and only once its link is set up; a "
      "tick at which this engine's own control thread ran late judges nobody"));
  t.push_back(IntField<&EngineOptions::max_inbound_peers>(
      "adxl.MaxInboundPeers", K::kProject, "ADXL_MAX_INBOUND_PEERS", false, false, 1, 65535, 0,
      "distinct peers linked to this engine at once (inbound links); one more is refused at the "
      "handshake: its `Connect` returns `RESOURCE_EXHAUSTED`, and both sides log why.  A peer that "
      "connects again under its name replaces its own earlier link and is not refused"));
  t.push_back(IntField<&EngineOptions::hccs_copy_threads>(
      "adxl.HccsCopyThreads", K::kProject, "ADXL_HCCS_COPY_THREADS", false, false, 0, 64, 0,
      "threads an HCCS-lane cma batch of 768 KiB or more is shared among; `0`: the CPUs of the "
      "transport's NUMA node, at most 4"));
  t.push_back(Other(
      "adxl.PluginPath", K::kProject, "ADXL_PLUGIN_PATH", false, "`:`-separated directories",
      [](const OptionSpec &, const std::string &v, bool, EngineOptions *o, std::string *) {
        o->plugin_path = v;
        return true;
      },
      [](const EngineOptions &o) { return o.plugin_path; },
      "where the transport plugin is searched before the `adxl/` directory beside `libadxl.so`"));
  t.push_back(Other("adxl.Plugin", K::kProject, "ADXL_PLUGIN", false, "a name without `/`", ApplyPlugin,
                    [](const EngineOptions &o) { return o.plugin; },
                    "the transport plugin: the file `libadxl_plugin_NAME.so`"));
  t.push_back(Other("adxl.AuthToken", K::kProject, "ADXL_AUTH_TOKEN", true, "1 to 1024 bytes", ApplyAuthToken,
                    [](const EngineOptions &o) { return o.auth_token; },
                    "shared secret: when set, only peers with the same token are linked, after a mutual "
                    "HMAC-SHA256 challenge-response at the handshake in which the token never crosses the "
                    "wire; a refused `Connect` is `FAILED`, logged on both sides, and the refused peer gets no "
                    "region table; an empty environment value counts as unset"));
  // ---- Per-link statistics (core/link_stats.h, core/stats_log.h).
  t.push_back(IntField<&EngineOptions::stats_interval_ms>(
      "adxl.StatsIntervalMs", K::kProject, "ADXL_STATS_INTERVAL_MS", false, false, 0, kU32, 0,
      "period in ms of the one-line statistics summary logged at `info` level (totals per "
      "direction, the busiest links; checked on each heartbeat); `0`: none. The default is "
      "the vendor's fixed statistics period, 30 minutes"));
  t.push_back(EnvOnly("ADXL_STATS_DISABLE", "`1`",
                      "turns the counting of transfers off; only for measuring what counting costs "
                      "(docs/link_stats.md)"));
  // ---- End of per-link statistics.
  // The environment-only settings from here on: rows of data, one EnvOnly
  // each, in the table's order.
  struct EnvRow {
    const char *env, *values, *description;
  };
  static const EnvRow kEnvRows[] = {
      {"ADXL_LOG_LEVEL", "`off`, `error`, `warn`, `info`, `debug`",
       "log level of the one logger the engine, the cache layer and the plugin share (default "
       "`warn`; another value also means `warn`)"},
      {"ADXL_NODE_ID", "a string",
       "node identity override (default: from the boot id, machine id and network namespace); "
       "a different one makes a same-host peer look remote"},
      {"ADXL_NIC", "a network interface, e.g. `eth0`",
       "the RDMA lane's NIC, whose NUMA node `MallocMem` places host memory on (default: the "
       "default route's)"},
      {"ADXL_NUMA_NODE", "a NUMA node number",
       "the NUMA node `MallocMem` places host memory on, overriding the NIC's"},
      // The UCX plugin's settings: read here, passed to the plugin as open()
      // parameters (src/core/engine.cc, kUcxPluginSettings) and checked by it
      // (plugin/ucx/core/ucx_params.h); a value it does not accept fails
      // Initialize.
      {"ADXL_UCX_CMA_SPLIT_BYTES", "an integer number of bytes >= 1 (decimal or `0x` hex)",
       "HCCS lane (cma): a batch of at least this many bytes is shared among the copy threads "
       "(plugin parameter `hccs_copy_threads`), smaller ones stay on the posting thread (default "
       "786432, 768 KiB)"},
      {"ADXL_UCX_CMA_SPIN_US", "an integer number of microseconds in [0, 1000000]",
       "HCCS lane (cma): how long a thread waiting for a copy thread spins before it sleeps "
       "(default 20)"},
      {"ADXL_UCX_RDMA_PROTOCOL", "`am`, `rma`",
       "RDMA lane protocol: `am` (active messages into validated addresses) or `rma` (UCP put/get; "
       "over TCP for measurement and tests only: a `TIMEOUT` does not fence it, docs/contract.md); "
       "default `rma` where an InfiniBand device exists, else `am`"},
      {"ADXL_UCX_RDMA_CONNECTIONS", "an integer in [1, 16]",
       "RDMA lane over active messages: UCP endpoints (each its own connection) per link; the "
       "messages of a batch take them in turn, so that one large batch keeps several connections "
       "busy (default 1)"},
      {"ADXL_UCX_RDMA_PATHS", "up to 16 network interface names, comma-separated, or none",
       "RDMA lane over active messages: each named interface of this host is a network path with "
       "its own UCP context and connection per link; a link pairs its paths with the peer's by "
       "IPv4 subnet and stripes batches of 1 MiB and more over them in proportion to each path's "
       "measured rate (smaller ones go whole on one path); a path that fails (its connection, its "
       "interface's carrier, or it goes silent: no answer for 1 s while another path of the same "
       "peer answers) leaves its links, its operations re-posted on the others, and "
       "rejoins when it returns; a named interface that does not exist or has no IPv4 address "
       "makes the engine's initialization fail; none: one path, the interface UCX picks (default: "
       "unset, every interface up with an IPv4 address when there are two or more, else one path)"},
  };
  for (const EnvRow &r : kEnvRows) t.push_back(EnvOnly(r.env, r.values, r.description));
  return t;
}

std::string HumanBytes(uint64_t n) {
  static const char *const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (u < 6 && n != 0 && n % 1024 == 0) {
    n /= 1024;
    ++u;
  }
  return std::to_string(n) + " " + kUnits[u];
}

// Markdown to plain text: code spans lose their backticks.
std::string Plain(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c != '`') out += c;
  }
  return out;
}

std::string Code(const std::string &s) { return s.empty() ? s : "`" + s + "`"; }

}  // namespace

bool OptionSpec::Apply(const std::string &value, bool from_env, EngineOptions *o, std::string *why) const {
  if (!is_int()) return apply != nullptr && apply(*this, value, from_env, o, why);
  int64_t n = 0;
  if (ParseInt(value, lo, hi, &n) && (multiple == 0 || n % multiple == 0)) {
    set(o, n);
    return true;
  }
  if (kind == OptionKind::kVendor) {
    *why = std::string(key) + " '" + value + "': expected an integer in [" + std::to_string(lo) + "," +
           std::to_string(hi) + "]" + (multiple != 0 ? " that is a multiple of " + std::to_string(multiple) : "") +
           (from_env ? std::string(" (from ") + env + ")" : "");
  } else {
    const bool open = hi == INT64_MAX || hi == static_cast<int64_t>(UINT32_MAX);
    *why = std::string(key) + " '" + value + "': expected an integer " +
           (open ? ">= " + std::to_string(lo) : "in [" + std::to_string(lo) + "," + std::to_string(hi) + "]") +
           " (option or " + env + ")";
  }
  return false;
}

std::string OptionSpec::Show(const EngineOptions &o) const {
  if (is_int()) return std::to_string(get(o));
  return show != nullptr ? show(o) : "";
}

std::string OptionSpec::Values() const {
  if (!is_int()) return values != nullptr ? values : "";
  const bool open = hi == INT64_MAX || hi == static_cast<int64_t>(UINT32_MAX);
  std::string s = open ? "integer >= " + std::to_string(lo)
                       : "integer in [" + std::to_string(lo) + "," + std::to_string(hi) + "]";
  if (multiple != 0) s += ", multiple of " + std::to_string(multiple);
  if (bytes) s += " (bytes)";
  return s;
}

std::string OptionSpec::DefaultText() const {
  if (kind == OptionKind::kEnvOnly) return "";
  std::string v = Show(EngineOptions{});
  if (v.empty()) return "none";
  if (bytes) return v + " (" + HumanBytes(std::strtoull(v.c_str(), nullptr, 10)) + ")";
  return v;
}

std::string OptionSpec::Name() const {
  if (kind == OptionKind::kEnvOnly) return env;
  return key;
}

const std::vector<OptionSpec> &OptionTable() {
  static const std::vector<OptionSpec> kTable = BuildTable();
  return kTable;
}

const char *EnvOnlySetting(const char *name) {
  for (const OptionSpec &s : OptionTable()) {
    if (s.kind == OptionKind::kEnvOnly && strcmp(s.env, name) == 0) return getenv(name);
  }
  ADXL_ERROR("internal: environment variable %s read but not in the option table (src/config/option_table.cc); "
             "ignored", name);
  return nullptr;
}

std::string OptionTableMarkdown() {
  std::string out = "| key | environment | values | default | description |\n|---|---|---|---|---|\n";
  for (const OptionSpec &s : OptionTable()) {
    std::string key = s.kind == OptionKind::kEnvOnly ? "" : Code(s.key);
    std::string def = s.DefaultText();
    if (def != "none" && !def.empty() && !s.bytes) def = Code(def);
    out += "| " + key + " | " + (s.env != nullptr ? Code(s.env) : "") + " | " + s.Values() + " | " + def + " | " +
           s.description + " |\n";
  }
  return out;
}

std::string OptionTableText() {
  std::string out;
  for (const OptionSpec &s : OptionTable()) {
    out += s.Name() + "\n";
    if (s.kind == OptionKind::kVendor) out += "    also:        adxl." + std::string(s.key) + " (the un-prefixed one wins)\n";
    if (s.kind != OptionKind::kEnvOnly && s.env != nullptr) out += "    environment: " + std::string(s.env) + "\n";
    if (s.kind == OptionKind::kEnvOnly) out += "    environment only\n";
    out += "    values:      " + Plain(s.Values()) + "\n";
    if (s.kind != OptionKind::kEnvOnly) out += "    default:     " + s.DefaultText() + "\n";
    out += "    " + Plain(s.description) + "\n\n";
  }
  return out;
}

}  // namespace adxl
