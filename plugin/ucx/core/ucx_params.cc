// The UCX plugin's parameters (ucx_params.h).
#include "core/ucx_params.h"

#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

UcxParams UcxParams::Parse(const adxl_plugin_config_t *cfg) {
  UcxParams p;
  for (size_t i = 0; cfg != nullptr && i < cfg->num_params; ++i) {
    const char *key = cfg->params[i].key;
    const char *value = cfg->params[i].value;
    if (key == nullptr || value == nullptr) continue;
    if (strcmp(key, "hccs_copy_threads") == 0) p.hccs_copy_threads = static_cast<unsigned>(std::max(1, atoi(value)));
    if (strcmp(key, "progress_cpus") == 0) p.progress_cpus = value;
    if (strcmp(key, "rdma_traffic_class") == 0) p.rdma_traffic_class = value;
    if (strcmp(key, "rdma_service_level") == 0) p.rdma_service_level = value;
    for (const char *k : {"cma_split_bytes", "cma_spin_us", "rdma_protocol", "rdma_connections", "rdma_paths"}) {
      if (strcmp(key, k) == 0) p.checked_.emplace_back(key, value);
    }
    ParseFaultParam(key, value, &p.faults);
  }
  return p;
}

namespace {

// An unsigned integer parameter (decimal, or 0x hex): true when in [lo, hi]
// (*out set), false with *why otherwise.
bool ParseUnsigned(const std::string &key, const std::string &v, uint64_t lo, uint64_t hi, uint64_t *out,
                   std::string *why) {
  errno = 0;
  char *end = nullptr;
  const unsigned long long n = strtoull(v.c_str(), &end, 0);
  if (v.empty() || v[0] == '-' || *end != '\0' || errno != 0 || n < lo || n > hi) {
    *why = key + "='" + v + "': expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return false;
  }
  *out = n;
  return true;
}

// "if0,if1,...": distinct interface names (IFNAMSIZ - 1 characters at most);
// whether they exist is for NetPath::Open to find out.
bool ParsePaths(const std::string &list, size_t max, std::vector<std::string> *out) {
  out->clear();
  for (size_t at = 0; at <= list.size();) {
    size_t comma = list.find(',', at);
    if (comma == std::string::npos) comma = list.size();
    std::string name = list.substr(at, comma - at);
    if (name.empty() || name.size() >= IFNAMSIZ || std::find(out->begin(), out->end(), name) != out->end() ||
        out->size() == max) {
      return false;
    }
    out->push_back(std::move(name));
    at = comma + 1;
  }
  return true;
}

}  // namespace

bool UcxParams::Check(std::string *why) {
  // Bounds: a split threshold of 0 would mean nothing; 1 TiB and more means
  // "never split" (docs/performance.md's measurements use 2^40).  A spin beyond a second
  // is a busy loop, not a wait.
  constexpr uint64_t kMaxSplitBytes = uint64_t{1} << 62;
  constexpr uint64_t kMaxSpinUs = 1000 * 1000;
  for (const auto &kv : checked_) {
    const std::string &key = kv.first, &v = kv.second;
    uint64_t n = 0;
    if (key == "cma_split_bytes") {
      if (!ParseUnsigned(key, v, 1, kMaxSplitBytes, &n, why)) return false;
      cma_split_bytes = static_cast<size_t>(n);
    } else if (key == "cma_spin_us") {
      if (!ParseUnsigned(key, v, 0, kMaxSpinUs, &n, why)) return false;
      cma_spin_us = static_cast<unsigned>(n);
    } else if (key == "rdma_connections") {
      if (!ParseUnsigned(key, v, 1, kMaxRdmaConnections, &n, why)) return false;
      rdma_connections = static_cast<unsigned>(n);
    } else if (key == "rdma_paths") {
      rdma_paths_none = v == "none";
      rdma_paths.clear();
      if (!v.empty() && !rdma_paths_none && !ParsePaths(v, kMaxRdmaPaths, &rdma_paths)) {
        *why = key + "='" + v + "': expected up to " + std::to_string(kMaxRdmaPaths) +
               " distinct network interface names, comma-separated";
        return false;
      }
    } else if (key == "rdma_protocol") {
      if (v == "am") {
        rdma_protocol = RdmaProtocol::kAm;
      } else if (v == "rma") {
        rdma_protocol = RdmaProtocol::kRma;
      } else {
        *why = key + "='" + v + "': expected am or rma";
        return false;
      }
    }
  }
  return true;
}
