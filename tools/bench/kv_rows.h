// The --workload kv rows over one target or several at once (--peers N: one
// initiator process, one engine with a link to each of N target processes).
// Every peer moves its own keys (its own plan, its own pools) in the same
// step, from a thread of its own, released together: WRITE (H2rH) is then
// one-to-many (one prefill pushing to N decodes), READ (rH2H) many-to-one
// (one decode pulling from N prefills).  A row's bytes and keys are the sum
// over peers, its time the slowest peer's; every peer's destination is
// verified.
#ifndef ADXL_TOOLS_BENCH_KV_ROWS_H_
#define ADXL_TOOLS_BENCH_KV_ROWS_H_

#include <vector>

#include "measurement.h"
#include "options.h"

namespace bench {

class Session;

// Appends each group of rows as it is measured.  Throws Fatal as Session does.
void RunKvRows(const Options &o, const std::vector<Session *> &peers, std::vector<Row> *rows);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_KV_ROWS_H_
