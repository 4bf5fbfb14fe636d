// Lane selection (docs/contract.md §9): which lanes a link may use, from the peers'
// locality and the GlobalResourceConfig restriction
// (comm_resource_config.protocol_desc).
//
//   same node:  HCCS, then RDMA        (each only if allowed)
//   other node: RDMA                   (HCCS cannot cross nodes)
// "hccs:host" allows the HCCS lane for host memory, "roce:host" the RDMA
// lane; the ":device" forms do the same for device memory.  No restriction
// means everything is allowed.
#ifndef ADXL_SRC_TRANSPORT_LANE_SELECT_H_
#define ADXL_SRC_TRANSPORT_LANE_SELECT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace adxl {

// A mask of ADXL_PLUGIN_LANE_* bits; 0 when no allowed lane reaches the peer.
uint32_t AllowedLanes(bool same_node, const std::vector<std::string> &protocols);

const char *LaneName(uint32_t lane);

}  // namespace adxl

#endif  // ADXL_SRC_TRANSPORT_LANE_SELECT_H_
