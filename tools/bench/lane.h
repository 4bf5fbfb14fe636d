// --lane until the engine selects lanes itself: the lane is approximated by
// restricting UCX's transports for the whole process through UCX_TLS, set
// before any UCP context exists.  A UCX_TLS the user set always wins.
#ifndef ADXL_TOOLS_BENCH_LANE_H_
#define ADXL_TOOLS_BENCH_LANE_H_

#include <string>

#include "options.h"

namespace bench {

struct TlsChoice {
  std::string value;   // UCX_TLS in effect, "" = UCX default (all)
  std::string source;  // "user", "lane" or "default"
  std::string Describe() const;
};

// The UCX_TLS a lane asks for ("" for auto).
std::string LaneTls(Lane lane);

// Sets UCX_TLS to `wanted` unless the environment already has one.
TlsChoice ApplyTls(const std::string &wanted);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_LANE_H_
