// --role target: owns the remote buffer, registers it with its engine and
// (for the ucp baseline) with a raw UCP worker, serves the tcp baseline's
// stream into and out of it (on the IP of its engine name), then answers the
// initiator's side-channel commands until BYE.  It measures nothing and prints only
// errors; every setting comes from the initiator's HELLO.
#ifndef ADXL_TOOLS_BENCH_TARGET_H_
#define ADXL_TOOLS_BENCH_TARGET_H_

#include "options.h"

namespace bench {

// Returns the process exit status.
int RunTarget(const Options &options);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_TARGET_H_
