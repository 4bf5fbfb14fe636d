// RemoteRegion: one region a peer advertised, as this engine holds it (its
// key unpacked on the link's endpoint), and the table of a peer's regions.
//
// Its own header so that the plan (transfer_plan.h) and the link (link.h)
// can both name it without either including the other.
#ifndef ADXL_SRC_CORE_REMOTE_REGION_H_
#define ADXL_SRC_CORE_REMOTE_REGION_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "memory/range_table.h"
#include "transport/transport.h"

namespace adxl {

// When the peer withdraws the region, `on_retired` (set then) runs once the
// last transfer using it lets go, which acknowledges the withdrawal.
struct RemoteRegion {
  uint64_t id = 0;
  uint32_t mem_type = 0;
  std::unique_ptr<RemoteKey> key;
  std::function<void()> on_retired;
  ~RemoteRegion() {
    key.reset();
    if (on_retired) on_retired();
  }
};

// A peer's regions by address (Link owns one per link, under its lock).
using RemoteRegionTable = RangeTable<std::shared_ptr<RemoteRegion>>;

}  // namespace adxl

#endif  // ADXL_SRC_CORE_REMOTE_REGION_H_
