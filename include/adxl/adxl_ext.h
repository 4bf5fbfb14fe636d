// Extensions of this ADXL implementation (not in the vendor's API): what a
// link runs on and what it moved.
#ifndef ADXL_ADXL_EXT_H_
#define ADXL_ADXL_EXT_H_

#include <cstdint>
#include <string>

#include "adxl/adxl_engine.h"

namespace adxl {
namespace ext {

struct LinkInfo {
  std::string lane;        // "hccs" (same node) or "rdma" (network)
  std::string transports;  // the plugin's transports for this link, e.g. "tcp/lo" or "posix/memory"
  bool same_node = false;  // the peer reported the same node identity
  bool failed = false;     // a transfer timed out or the peer died; Disconnect + Connect to reuse
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t ops = 0;  // plugin operations posted (descriptors after splitting)
};

// SUCCESS and *info for an existing link of `engine` to `remote_engine`;
// NOT_CONNECTED when there is none; FAILED when the engine is not initialized.
ASCEND_FUNC_VISIBILITY Status GetLinkInfo(AdxlEngine &engine, const AscendString &remote_engine, LinkInfo &info);

}  // namespace ext
}  // namespace adxl

#endif  // ADXL_ADXL_EXT_H_
