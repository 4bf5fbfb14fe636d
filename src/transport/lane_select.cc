#include "transport/lane_select.h"

#include <algorithm>

#include "adxl/plugin/adxl_plugin.h"

namespace adxl {
namespace {

bool Allowed(const std::vector<std::string> &protocols, const char *protocol) {
  if (protocols.empty()) return true;
  // Host memory is what this engine moves today; device memory follows the
  // same rule with ":device" once a device-capable transport exists.
  return std::find(protocols.begin(), protocols.end(), std::string(protocol) + ":host") != protocols.end() ||
         std::find(protocols.begin(), protocols.end(), std::string(protocol) + ":device") != protocols.end();
}

}  // namespace

uint32_t AllowedLanes(bool same_node, const std::vector<std::string> &protocols) {
  uint32_t lanes = 0;
  if (same_node && Allowed(protocols, "hccs")) lanes |= ADXL_PLUGIN_LANE_HCCS;
  if (Allowed(protocols, "roce")) lanes |= ADXL_PLUGIN_LANE_RDMA;
  return lanes;
}

const char *LaneName(uint32_t lane) {
  switch (lane) {
    case ADXL_PLUGIN_LANE_HCCS: return "hccs";
    case ADXL_PLUGIN_LANE_RDMA: return "rdma";
    default: return "none";
  }
}

}  // namespace adxl
