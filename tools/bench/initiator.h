// --role initiator (and the parent of --spawn): checks what can be checked
// before starting, runs a Session (session.h) and writes the report.
#ifndef ADXL_TOOLS_BENCH_INITIATOR_H_
#define ADXL_TOOLS_BENCH_INITIATOR_H_

#include <functional>
#include <string>

#include "options.h"

namespace bench {

// Checks what can be known before any process starts: a requested direction
// needs device memory this machine or engine build lacks, or an output file
// cannot be written.  False with the reason.
bool Preflight(const Options &options, std::string *why);

// Returns the process exit status.  keep_trying() tells whether the target
// may still come up while the side channel is not yet reachable.
int RunInitiator(const Options &options, const std::function<bool()> &keep_trying);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_INITIATOR_H_
