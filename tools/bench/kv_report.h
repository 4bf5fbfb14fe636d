// The --workload kv table: per direction, the engine on the model's plan and
// on its uniform reference, and the ucp and tcp baselines on the same plan;
// GB/s, keys/s, per-key p50/p99 and the ratios.  Formatting only.
#ifndef ADXL_TOOLS_BENCH_KV_REPORT_H_
#define ADXL_TOOLS_BENCH_KV_REPORT_H_

#include <cstdio>
#include <vector>

#include "measurement.h"

namespace bench {

// Rows of pattern "kv" (Session::RunKv); ops_per_sec of these rows counts
// keys, their latencies are per key.
void PrintKvTable(FILE *out, const std::vector<Row> &rows);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_KV_REPORT_H_
