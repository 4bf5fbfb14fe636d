#include "kv_report.h"

#include <cmath>
#include <string>

#include "options.h"
#include "report.h"

namespace bench {
namespace {

std::string Fixed(double v, int digits) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Ratio(double r) { return std::isnan(r) || std::isinf(r) ? "-" : Fixed(r, 2); }

// A row's GB/s over its uniform reference's of the same direction: the
// engine's of the same mode ("engine_sync" -> "uniform_sync"), the cma
// baseline's on the reference ("cma" -> "uniform_cma"); NaN when there is none.
double VsUniform(const Row &r, const std::vector<Row> &rows) {
  std::string ref;
  if (r.benchmark.rfind("engine_", 0) == 0) ref = "uniform_" + r.benchmark.substr(7);
  if (r.benchmark == "cma") ref = "uniform_cma";
  if (ref.empty()) return NAN;
  for (const Row &u : rows) {
    if (u.direction == r.direction && u.benchmark == ref && u.bandwidth_gbps > 0) {
      return r.bandwidth_gbps / u.bandwidth_gbps;
    }
  }
  return NAN;
}

void Line(FILE *out, const std::vector<std::string> &cells) {
  static const std::vector<int> kWidths = {-5, -14, 7, 6, 8, 8, 10, 10, 7, 8, 8, 8, 8, 9, 8, 4, -6, 0};
  PrintCells(out, cells, kWidths);
}

}  // namespace

void PrintKvTable(FILE *out, const std::vector<Row> &rows) {
  Line(out, {"dir", "benchmark", "avg_blk", "d/call", "GB/s", "keys/s", "key_p50us", "key_p99us", "cpu/GB", "eng/ucp",
             "eng/tcp", "eng/cma", "eng/nixl", "eng/mooncake", "eng/unif", "err", "check", ""});
  std::string direction;
  for (const Row &r : rows) {
    if (r.pattern != "kv") continue;
    if (!direction.empty() && r.direction != direction) fprintf(out, "\n");
    direction = r.direction;
    Line(out, {r.direction, r.benchmark, std::to_string(r.block_size), std::to_string(r.batch_size),
               Fixed(r.bandwidth_gbps, 3), Fixed(r.ops_per_sec, 1), Fixed(r.p50_us, 1), Fixed(r.p99_us, 1),
               Ratio(r.cpu_s_per_gb), Ratio(r.vs_ucp), Ratio(r.vs_tcp), Ratio(r.vs_cma), Ratio(r.vs_nixl),
               Ratio(r.vs_mooncake), Ratio(VsUniform(r, rows)), std::to_string(r.error_count),
               r.consistency, r.note.empty() ? "" : "(" + r.note + ")"});
  }
  fprintf(out,
          "\nGB/s = 1e9 bytes/s; avg_blk = bytes / descriptors (B); d/call = descriptors per transfer call;\n"
          "key_p50us / key_p99us = time to move one key (all its calls); eng/x = engine GB/s / x GB/s in\n"
          "this run; eng/unif = engine on the model's layout / engine on the uniform reference (uniform_*:\n"
          "same keys, calls and descriptors per call, every block the average size, contiguous); on the\n"
          "cma row: cma / uniform_cma, the kernel's own layout/uniform ratio (--baselines ...,cma);\n"
          "cpu/GB = CPU seconds of both sides' processes per GB (a peer: its own two; one target only).\n");
}

}  // namespace bench
