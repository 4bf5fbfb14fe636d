#include "initiator.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "device_copy.h"
#include "kv_report.h"
#include "report.h"
#include "session.h"

namespace bench {
namespace {

// Device directions need device memory that this adxl-bench can fill and
// check (built with the CUDA toolkit) and that the engine can allocate
// (AdxlEngine::MallocMem(MEM_DEVICE): a CUDA build of libadxl and a GPU).
// Whether UCX can move it is the engine's RegisterMem answer at set-up.
bool DeviceDirectionsPossible(const Options &o, std::string *why) {
  std::vector<std::string> wanted;
  for (const std::string &name : o.directions) {
    if (UsesDevice(*FindDirection(name.c_str()))) wanted.push_back(name);
  }
  if (wanted.empty()) return true;
  std::string cause;
  if (!DeviceCopySupported(&cause)) {
    *why = "directions " + Join(wanted, ",") + " need device memory: " + cause + ".  Use H2rH and rH2H";
    return false;
  }
  void *p = nullptr;
  adxl::Status st = adxl::AdxlEngine::MallocMem(adxl::MEM_DEVICE, 4096, &p);
  if (st == adxl::SUCCESS) {
    adxl::AdxlEngine::FreeMem(p);
    return true;
  }
  *why = "directions " + Join(wanted, ",") + " need device memory, and there is none here (" +
         "AdxlEngine::MallocMem(MEM_DEVICE) returned " + StatusName(st) +
         ": no GPU, or libadxl built without the CUDA toolkit; the engine's log line above says which).  "
         "Use H2rH and rH2H";
  return false;
}

bool AllPassed(const std::vector<Row> &rows) {
  for (const Row &r : rows) {
    if (r.error_count > 0 || r.consistency == "fail") return false;
  }
  return true;
}

int Report(const Options &o, const RunInfo &info, const std::vector<Row> &rows, const std::string &counters) {
  PrintPreamble(stdout, info);
  if (o.workload == Workload::kKv) {
    PrintKvTable(stdout, rows);
  } else {
    PrintTable(stdout, rows);
    PrintRatioSummary(stdout, rows);
  }
  // Beside the measurements, what the engine itself counted on the link
  // (every transfer of the run: warm-up, verification and timed steps).
  if (!counters.empty()) printf("\nengine counters (adxl::ext::GetLinkStats):\n%s", counters.c_str());
  fflush(stdout);
  std::string why;
  bool written = (o.csv_path.empty() || WriteCsv(o.csv_path, rows, &why)) &&
                 (o.json_path.empty() || WriteJson(o.json_path, info, rows, &why));
  if (!written) {
    fprintf(stderr, "adxl-bench: %s\n", why.c_str());
    return 2;
  }
  if (!AllPassed(rows)) {
    fprintf(stderr, "adxl-bench: some steps failed or did not verify (see the err and check columns)\n");
    return 1;
  }
  return 0;
}

// Fails early, before minutes of measuring, when an output file cannot be
// written (creates it empty; the report overwrites it).
bool OutputsWritable(const Options &o, std::string *why) {
  for (const std::string &path : {o.csv_path, o.json_path}) {
    if (path.empty()) continue;
    FILE *f = fopen(path.c_str(), "a");
    if (f == nullptr) {
      *why = "cannot write '" + path + "': " + strerror(errno);
      return false;
    }
    fclose(f);
  }
  return true;
}

}  // namespace

bool Preflight(const Options &o, std::string *why) {
  return DeviceDirectionsPossible(o, why) && OutputsWritable(o, why);
}

int RunInitiator(const Options &o, const std::function<bool()> &keep_trying) {
  Session session(o);
  std::vector<Row> rows;
  try {
    session.SetUp(keep_trying);
    session.RunAll(&rows);
    session.Finish();
  } catch (const Fatal &e) {
    fprintf(stderr, "adxl-bench: %s\n", e.what());
    if (!rows.empty()) {
      fprintf(stderr, "adxl-bench: the run stopped early; rows measured so far follow\n");
      Report(o, session.Info(), rows, session.EngineCounters());
    }
    return 2;
  }
  return Report(o, session.Info(), rows, session.EngineCounters());
}

}  // namespace bench
