#include "report.h"

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "options.h"

namespace bench {
namespace {

// The CSV columns, in this order, are part of the tool's interface.
const char kCsvHeader[] =
    "benchmark,pattern,block_size,batch_size,threads,transport,direction,initiator_memory,target_memory,"
    "bandwidth_gbps,ops_per_sec,avg_latency_us,p99_us,error_count,consistency,p50_us,cpu_s_per_gb,"
    "engine_vs_tcp,engine_vs_nixl,engine_vs_mooncake";

std::string Fixed(double v, int digits) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// 1234567 -> "1.23M": ops/s spans six orders of magnitude.
std::string Short(double v) {
  const char *units[] = {"", "k", "M", "G"};
  int u = 0;
  while (u < 3 && v >= 1000) {
    v /= 1000;
    ++u;
  }
  return Fixed(v, v < 10 ? 2 : v < 100 ? 1 : 0) + units[u];
}

std::string Ratio(double r) { return std::isnan(r) ? "-" : Fixed(r, 2); }

std::string CsvField(const std::string &s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string JsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// An empty field for "not measured".
std::string CsvNumber(double v) { return std::isnan(v) || std::isinf(v) ? "" : Fixed(v, 4); }

std::string JsonNumber(double v) {
  if (std::isnan(v) || std::isinf(v)) return "null";
  char buf[64];
  snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// "initiator UCX_TLS" -> "initiator_ucx_tls": JSON keys a script can use.
std::string JsonKey(const std::string &label) {
  std::string k;
  for (char c : label) k += c == ' ' ? '_' : static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return k;
}

bool Save(const std::string &path, const std::string &text, std::string *why) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (f) f << text;
  if (!f) {
    *why = "cannot write '" + path + "': " + strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

void PrintPreamble(FILE *out, const RunInfo &info) {
  for (const auto &kv : info) fprintf(out, "%-18s %s\n", (kv.first + ":").c_str(), kv.second.c_str());
  fprintf(out, "\n");
}

void PrintCells(FILE *out, const std::vector<std::string> &cells, const std::vector<int> &widths) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    char buf[512];
    snprintf(buf, sizeof(buf), "%*s ", i < widths.size() ? widths[i] : 0, cells[i].c_str());
    line += buf;
  }
  line.erase(line.find_last_not_of(' ') + 1);
  fprintf(out, "%s\n", line.c_str());
}

namespace {

// One line of the uniform benchmark's table.
void PrintLine(FILE *out, const std::vector<std::string> &cells) {
  static const std::vector<int> kWidths = {-5, -8, -13, 6, 6, 3, 9, 8, 10, 10, 7, 10, 8, 8, 8, 8, 9, 4, -9, 0};
  PrintCells(out, cells, kWidths);
}

}  // namespace

void PrintTable(FILE *out, const std::vector<Row> &rows) {
  PrintLine(out, {"dir", "pattern", "benchmark", "block", "batch", "thr", "GB/s", "ops/s", "avg_us", "p99_us",
                  "cpu/GB", "eng/memcpy", "eng/ucp", "eng/tcp", "eng/cma", "eng/nixl", "eng/mooncake", "err", "check",
                  ""});
  std::string group;
  for (const Row &r : rows) {
    // A blank line between (direction, block) groups: engine and its baselines.
    std::string key = r.direction + "/" + r.pattern + "/" + std::to_string(r.block_size);
    if (!group.empty() && key != group) fprintf(out, "\n");
    group = key;
    PrintLine(out, {r.direction, r.pattern, r.benchmark, FormatSize(r.block_size), std::to_string(r.batch_size),
                    std::to_string(r.threads), Fixed(r.bandwidth_gbps, 3), Short(r.ops_per_sec),
                    Fixed(r.avg_latency_us, 1), Fixed(r.p99_us, 1), Ratio(r.cpu_s_per_gb), Ratio(r.vs_memcpy),
                    Ratio(r.vs_ucp), Ratio(r.vs_tcp), Ratio(r.vs_cma), Ratio(r.vs_nixl), Ratio(r.vs_mooncake),
                    std::to_string(r.error_count), r.consistency, r.note.empty() ? "" : "(" + r.note + ")"});
  }
  fprintf(out, "\nGB/s = 1e9 bytes/s; ops = descriptors; latency = one transfer call (the whole batch in "
               "bandwidth rows);\ncpu/GB = CPU seconds of both sides' processes per GB moved (the bench's two "
               "processes, or the peer's two);\neng/x = engine GB/s / baseline GB/s in the same run (eng/nixl: over "
               "the best nixl row).\n");
}

void PrintRatioSummary(FILE *out, const std::vector<Row> &rows) {
  struct Baseline {
    const char *name;
    double Row::*ratio;
    const char *row;  // the row that must exist (prefix)
  };
  static const Baseline kBaselines[] = {{"tcp", &Row::vs_tcp, "tcp"},   {"ucp", &Row::vs_ucp, "ucp"},
                                        {"cma", &Row::vs_cma, "cma"},   {"nixl", &Row::vs_nixl, "nixl"},
                                        {"mooncake", &Row::vs_mooncake, "mooncake"}};
  struct Line {
    std::string label;
    std::vector<std::string> cells;  // per baseline
  };
  std::vector<const Baseline *> have;
  for (const Baseline &b : kBaselines) {
    if (std::any_of(rows.begin(), rows.end(),
                    [&b](const Row &r) { return r.pattern == "seq" && r.benchmark.rfind(b.row, 0) == 0; })) {
      have.push_back(&b);
    }
  }
  if (have.empty()) return;
  std::vector<Line> lines;
  for (const Row &r : rows) {
    if (r.pattern != "seq" || r.benchmark.rfind("engine", 0) != 0) continue;
    const std::string label = r.direction + " " + r.benchmark;
    auto it = std::find_if(lines.begin(), lines.end(), [&](const Line &l) { return l.label == label; });
    if (it == lines.end()) it = lines.insert(lines.end(), Line{label, std::vector<std::string>(have.size())});
    const std::string block = FormatSize(r.block_size);
    for (size_t i = 0; i < have.size(); ++i) it->cells[i] += "  " + block + " " + Ratio(r.*(have[i]->ratio));
  }
  if (lines.empty()) return;
  fprintf(out, "\nengine GB/s / baseline GB/s by block size ('-': no baseline row or a failed one):\n");
  for (const Line &l : lines) {
    for (size_t i = 0; i < have.size(); ++i) {
      const std::string name = std::string("eng/") + have[i]->name + ":";
      fprintf(out, "%-18s %-14s%s\n", i == 0 ? l.label.c_str() : "", name.c_str(), l.cells[i].c_str());
    }
  }
}

bool WriteCsv(const std::string &path, const std::vector<Row> &rows, std::string *why) {
  std::ostringstream s;
  s << kCsvHeader << "\n";
  for (const Row &r : rows) {
    s << CsvField(r.benchmark) << ',' << CsvField(r.pattern) << ',' << r.block_size << ',' << r.batch_size << ','
      << r.threads << ',' << CsvField(r.transport) << ',' << CsvField(r.direction) << ','
      << CsvField(r.initiator_memory) << ',' << CsvField(r.target_memory) << ',' << Fixed(r.bandwidth_gbps, 4)
      << ',' << Fixed(r.ops_per_sec, 1) << ',' << Fixed(r.avg_latency_us, 3) << ',' << Fixed(r.p99_us, 3) << ','
      << r.error_count << ',' << CsvField(r.consistency) << ',' << Fixed(r.p50_us, 3) << ',' << CsvNumber(r.cpu_s_per_gb)
      << ',' << CsvNumber(r.vs_tcp) << ',' << CsvNumber(r.vs_nixl) << ',' << CsvNumber(r.vs_mooncake) << "\n";
  }
  return Save(path, s.str(), why);
}

bool WriteJson(const std::string &path, const RunInfo &info, const std::vector<Row> &rows, std::string *why) {
  std::ostringstream s;
  s << "{\n  \"settings\": {";
  for (size_t i = 0; i < info.size(); ++i) {
    s << (i ? ",\n    " : "\n    ") << JsonString(JsonKey(info[i].first)) << ": " << JsonString(info[i].second);
  }
  s << "\n  },\n  \"results\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row &r = rows[i];
    s << (i ? ",\n    {" : "\n    {") << "\"benchmark\": " << JsonString(r.benchmark)
      << ", \"pattern\": " << JsonString(r.pattern) << ", \"block_size\": " << r.block_size
      << ", \"batch_size\": " << r.batch_size << ", \"threads\": " << r.threads
      << ", \"transport\": " << JsonString(r.transport) << ", \"direction\": " << JsonString(r.direction)
      << ", \"initiator_memory\": " << JsonString(r.initiator_memory)
      << ", \"target_memory\": " << JsonString(r.target_memory)
      << ", \"bandwidth_gbps\": " << JsonNumber(r.bandwidth_gbps) << ", \"ops_per_sec\": " << JsonNumber(r.ops_per_sec)
      << ", \"avg_latency_us\": " << JsonNumber(r.avg_latency_us) << ", \"p99_us\": " << JsonNumber(r.p99_us)
      << ", \"p50_us\": " << JsonNumber(r.p50_us)
      << ", \"error_count\": " << r.error_count << ", \"consistency\": " << JsonString(r.consistency)
      << ", \"engine_vs_memcpy\": " << JsonNumber(r.vs_memcpy) << ", \"engine_vs_ucp\": " << JsonNumber(r.vs_ucp)
      << ", \"engine_vs_tcp\": " << JsonNumber(r.vs_tcp) << ", \"engine_vs_cma\": " << JsonNumber(r.vs_cma)
      << ", \"engine_vs_nixl\": " << JsonNumber(r.vs_nixl) << ", \"engine_vs_mooncake\": " << JsonNumber(r.vs_mooncake)
      << ", \"cpu_s_per_gb\": " << JsonNumber(r.cpu_s_per_gb)
      << ", \"note\": " << JsonString(r.note) << "}";
  }
  s << "\n  ]\n}\n";
  return Save(path, s.str(), why);
}

}  // namespace bench
