#include "kv_rows.h"

#include "progress.h"
#include "session.h"

namespace bench {
namespace {

// One row: a warm-up step and o.loops timed steps, each on every peer at once.
Row MeasureRow(const Options &o, const std::vector<Session *> &peers, const Direction &d, KvKind kind, Mode mode,
               const std::string &benchmark) {
  Row row = peers[0]->KvRow(benchmark, d, kind);
  row.threads = static_cast<int>(peers.size());  // one per peer
  size_t bytes = 0, keys = 0;
  for (Session *p : peers) {
    bytes += p->KvPlanOf(kind).bytes;
    keys += p->KvPlanOf(kind).keys.size();
  }
  const int n = static_cast<int>(peers.size());
  RowAccumulator acc;
  for (int i = 0; i <= o.loops; ++i) {
    for (Session *p : peers) p->KvPoison(d, kind);
    StepResult r = RunParallel(n, [&](int peer, StepResult *out) {
      *out = peers[static_cast<size_t>(peer)]->KvStep(d, kind, mode);
    });
    if (i == 0) {
      if (r.errors > 0) acc.AddError(r.first_error);
    } else {
      acc.AddStep(r, bytes, keys);
    }
    if (r.errors > 0) break;  // the links need resetting (EndGroup)
    bool matched = true;
    for (Session *p : peers) matched = p->KvCheck(d, kind) && matched;
    if (o.verify) acc.AddCheck(matched);
  }
  acc.FillRow(&row);
  return row;
}

}  // namespace

void RunKvRows(const Options &o, const std::vector<Session *> &peers, std::vector<Row> *rows) {
  Session &first = *peers[0];
  const bool ucp = first.KvHas(KvKind::kUcp), tcp = first.KvHas(KvKind::kTcp);
  const int per_direction = 2 * static_cast<int>(o.modes.size()) + (ucp ? 1 : 0) + (tcp ? 1 : 0);
  Progress progress(per_direction * static_cast<int>(o.directions.size()));
  for (const std::string &name : o.directions) {
    const Direction &d = *FindDirection(name.c_str());
    for (Session *p : peers) p->KvPrepare(d);
    const std::string label = std::string(d.name) + " kv ";
    std::vector<Row> group;
    for (Mode m : o.modes) {
      const std::string mode = ModeName(m);
      progress.Row(label + "engine_" + mode);
      group.push_back(MeasureRow(o, peers, d, KvKind::kEngine, m, "engine_" + mode));
      progress.Row(label + "uniform_" + mode);
      group.push_back(MeasureRow(o, peers, d, KvKind::kUniform, m, "uniform_" + mode));
    }
    if (ucp) {
      progress.Row(label + "ucp");
      group.push_back(MeasureRow(o, peers, d, KvKind::kUcp, Mode::kSync, "ucp"));
    }
    if (tcp) {
      progress.Row(label + "tcp");
      group.push_back(MeasureRow(o, peers, d, KvKind::kTcp, Mode::kSync, "tcp"));
    }
    FillRatios(&group);
    rows->insert(rows->end(), group.begin(), group.end());
    for (Session *p : peers) p->ResetLinkAfterFailure(group);
  }
}

}  // namespace bench
