// The identity of the machine (node) this process runs on, exchanged at the
// handshake so that lanes can tell same-node peers from remote ones.
// ADXL_NODE_ID overrides it (tests use this to fake several hosts).
#ifndef ADXL_SRC_COMMON_NODE_ID_H_
#define ADXL_SRC_COMMON_NODE_ID_H_

#include <string>

namespace adxl {

std::string LocalNodeId();

}  // namespace adxl

#endif  // ADXL_SRC_COMMON_NODE_ID_H_
