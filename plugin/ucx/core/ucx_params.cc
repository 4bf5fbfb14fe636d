// The UCX plugin's parameters and environment settings (ucx_params.h).
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
    ParseFaultParam(key, value, &p.faults);
  }
  return p;
}

namespace {

// An unsigned integer environment setting (decimal, or 0x hex): true when
// unset or in [lo, hi] (*out set), false with *why otherwise.
bool EnvUnsigned(const char *name, uint64_t lo, uint64_t hi, uint64_t *out, std::string *why) {
  const char *v = getenv(name);
  if (v == nullptr) return true;
  errno = 0;
  char *end = nullptr;
  const unsigned long long n = strtoull(v, &end, 0);
  if (v[0] == '\0' || v[0] == '-' || *end != '\0' || errno != 0 || n < lo || n > hi) {
    *why = std::string(name) + "='" + v + "': expected an integer in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "]";
    return false;
  }
  *out = n;
  return true;
}

}  // namespace

bool UcxParams::ReadEnvironment(std::string *why) {
  // Bounds: a split threshold of 0 would mean nothing; 1 TiB and more means
  // "never split" (docs/performance.md's measurements use 2^40).  A spin beyond a second
  // is a busy loop, not a wait.
  constexpr uint64_t kMaxSplitBytes = uint64_t{1} << 62;
  constexpr uint64_t kMaxSpinUs = 1000 * 1000;
  uint64_t split = cma_split_bytes, spin = cma_spin_us, conns = rdma_connections;
  if (!EnvUnsigned("ADXL_UCX_CMA_SPLIT_BYTES", 1, kMaxSplitBytes, &split, why) ||
      !EnvUnsigned("ADXL_UCX_CMA_SPIN_US", 0, kMaxSpinUs, &spin, why) ||
      !EnvUnsigned("ADXL_UCX_RDMA_CONNECTIONS", 1, kMaxRdmaConnections, &conns, why)) {
    return false;
  }
  rdma_connections = static_cast<unsigned>(conns);
  cma_split_bytes = static_cast<size_t>(split);
  cma_spin_us = static_cast<unsigned>(spin);
  const char *list = getenv("ADXL_UCX_RDMA_PATHS");
  rdma_paths_none = list != nullptr && strcmp(list, "none") == 0;
  if (list != nullptr && list[0] != '\0' && !rdma_paths_none) {
    // "if0,if1,...": distinct interface names (IFNAMSIZ - 1 characters at
    // most); whether they exist is for NetPath::Open to find out.  Set
    // empty: as unset.
    rdma_paths.clear();
    std::string s(list);
    for (size_t at = 0; at <= s.size();) {
      size_t comma = s.find(',', at);
      if (comma == std::string::npos) comma = s.size();
      std::string name = s.substr(at, comma - at);
      if (name.empty() || name.size() >= IFNAMSIZ ||
          std::find(rdma_paths.begin(), rdma_paths.end(), name) != rdma_paths.end() ||
          rdma_paths.size() == kMaxRdmaPaths) {
        *why = std::string("ADXL_UCX_RDMA_PATHS='") + list + "': expected up to " + std::to_string(kMaxRdmaPaths) +
               " distinct network interface names, comma-separated";
        return false;
      }
      rdma_paths.push_back(std::move(name));
      at = comma + 1;
    }
  }
  if (const char *proto = getenv("ADXL_UCX_RDMA_PROTOCOL")) {
    if (strcmp(proto, "am") == 0) {
      rdma_protocol = RdmaProtocol::kAm;
    } else if (strcmp(proto, "rma") == 0) {
      rdma_protocol = RdmaProtocol::kRma;
    } else {
      *why = std::string("ADXL_UCX_RDMA_PROTOCOL='") + proto + "': expected am or rma";
      return false;
    }
  }
  return true;
}
