#include "initiator.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

#include "device_copy.h"
#include "kv_report.h"
#include "kv_rows.h"
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

std::vector<std::string> SplitList(const std::string &text) {
  std::vector<std::string> items;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) items.push_back(item);
  return items;
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

namespace {

// --peers N (kv): a Session per target, the first one's engine shared by all
// (one engine, N links); rows by RunKvRows over all of them.
int RunPeers(const Options &o, const std::function<bool()> &keep_trying) {
  std::vector<Options> per_peer;  // each Session keeps a reference to its own
  for (const std::string &side_channel : SplitList(o.side_channel)) {
    per_peer.push_back(o);
    per_peer.back().side_channel = side_channel;
  }
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<Row> rows;
  int rc = 0;
  try {
    for (const Options &po : per_peer) {
      sessions.push_back(std::make_unique<Session>(po, sessions.empty() ? nullptr : sessions[0]->engine()));
      sessions.back()->SetUp(keep_trying);
    }
    std::vector<Session *> peers;
    for (auto &s : sessions) peers.push_back(s.get());
    RunKvRows(o, peers, &rows);
    for (size_t i = sessions.size(); i-- > 0;) sessions[i]->Finish();
  } catch (const Fatal &e) {
    fprintf(stderr, "adxl-bench: %s\n", e.what());
    rc = 2;
  }
  if (!sessions.empty() && (rc == 0 || !rows.empty())) {
    RunInfo info = sessions[0]->Info();
    std::vector<std::string> links;
    for (auto &s : sessions) {
      for (const auto &kv : s->Info()) {
        if (kv.first == "engines") links.push_back(kv.second);
      }
    }
    info.emplace_back("kv peers", std::to_string(sessions.size()) + " target processes, one engine: " +
                                      Join(links, "; ") +
                                      "; the ucp and tcp baselines: an endpoint / a stream and a thread per "
                                      "target (engine counters: the first link)");
    const int report_rc = Report(o, info, rows, sessions[0]->EngineCounters());
    rc = rc != 0 ? rc : report_rc;
  }
  // The shared engine is the first Session's: it goes last.
  while (!sessions.empty()) sessions.pop_back();
  return rc;
}

}  // namespace

int RunInitiator(const Options &o, const std::function<bool()> &keep_trying) {
  if (o.peers > 1) return RunPeers(o, keep_trying);
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
