// Output: the readable table, --csv and --json.  Formatting only.
#ifndef ADXL_TOOLS_BENCH_REPORT_H_
#define ADXL_TOOLS_BENCH_REPORT_H_

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "measurement.h"

namespace bench {

// The run's settings, printed above the table and stored in the JSON.
using RunInfo = std::vector<std::pair<std::string, std::string>>;

void PrintPreamble(FILE *out, const RunInfo &info);
void PrintTable(FILE *out, const std::vector<Row> &rows);
// One table line: cell i padded to widths[i] (printf's %*s: negative is
// left-aligned, 0 unpadded), without trailing blanks.
void PrintCells(FILE *out, const std::vector<std::string> &cells, const std::vector<int> &widths);
// After the table: for each direction and engine mode, the engine's bandwidth
// over the tcp and ucp baselines' at every block size, one line per baseline
// that the run measured: the lane's standing against what the network itself
// carries, at a glance.  Prints nothing when the run has no tcp or ucp
// bandwidth row; '-' where a baseline row failed (its row in the table says
// why).
void PrintRatioSummary(FILE *out, const std::vector<Row> &rows);
bool WriteCsv(const std::string &path, const std::vector<Row> &rows, std::string *why);
bool WriteJson(const std::string &path, const RunInfo &info, const std::vector<Row> &rows, std::string *why);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_REPORT_H_
