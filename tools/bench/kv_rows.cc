#include "kv_rows.h"

#include "progress.h"
#include "session.h"

namespace bench {
namespace {

// Rows of several kinds measured in turn (MeasureInTurn), every step on
// every peer at once: the engine and its uniform reference see the same
// load, so their ratio holds on a busy host too.
std::vector<Row> MeasureRows(const Options &o, const std::vector<Session *> &peers, const Direction &d,
                             const std::vector<KvKind> &kinds, const std::vector<std::string> &names, Mode mode) {
  const int n = static_cast<int>(peers.size());
  std::vector<TurnRow> turns;
  for (KvKind kind : kinds) {
    TurnRow t;
    for (Session *p : peers) {
      t.bytes += p->KvPlanOf(kind).bytes;
      t.ops += p->KvPlanOf(kind).keys.size();
    }
    t.step = [&peers, d, kind, mode, n] {
      for (Session *p : peers) p->KvPoison(d, kind);
      if (n > 1) {
        return RunParallel(n, [&](int peer, StepResult *out) {
          *out = peers[static_cast<size_t>(peer)]->KvStep(d, kind, mode);
        });
      }
      // One target: CPU time per GB as in the bandwidth rows (a peer measures its own).
      const double cpu0 = peers[0]->BenchCpuSeconds();
      StepResult s = peers[0]->KvStep(d, kind, mode);
      if (s.cpu_seconds < 0) s.cpu_seconds = peers[0]->BenchCpuSeconds() - cpu0;
      return s;
    };
    if (o.verify) {
      t.check = [&peers, d, kind] {
        bool matched = true;
        for (Session *p : peers) matched = p->KvCheck(d, kind) && matched;
        return matched;
      };
    }
    turns.push_back(std::move(t));
  }
  const std::vector<RowAccumulator> acc = MeasureInTurn(o.loops, turns);
  std::vector<Row> rows;
  for (size_t k = 0; k < kinds.size(); ++k) {
    Row row = peers[0]->KvRow(names[k], d, kinds[k]);
    row.threads = n;  // one per peer
    acc[k].FillRow(&row);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

void RunKvRows(const Options &o, const std::vector<Session *> &peers, std::vector<Row> *rows) {
  Session &first = *peers[0];
  const bool ucp = first.KvHas(KvKind::kUcp), tcp = first.KvHas(KvKind::kTcp), cma = first.KvHas(KvKind::kCma);
  const int peer_rows = (first.KvHas(KvKind::kNixl) ? 1 : 0) + (first.KvHas(KvKind::kNixlPoll) ? 1 : 0) +
                        (first.KvHas(KvKind::kMooncake) ? 1 : 0);
  const int per_direction = static_cast<int>(o.modes.size()) + (ucp ? 1 : 0) + (tcp ? 1 : 0) + peer_rows;
  Progress progress(per_direction * static_cast<int>(o.directions.size()));
  for (const std::string &name : o.directions) {
    const Direction &d = *FindDirection(name.c_str());
    for (Session *p : peers) p->KvPrepare(d);
    const std::string label = std::string(d.name) + " kv ";
    std::vector<Row> group;
    auto add = [&](const std::vector<Row> &measured) { group.insert(group.end(), measured.begin(), measured.end()); };
    for (Mode m : o.modes) {
      const std::string mode = ModeName(m);
      std::vector<KvKind> kinds = {KvKind::kEngine, KvKind::kUniform};
      std::vector<std::string> names = {"engine_" + mode, "uniform_" + mode};
      // The cma rows take turns with the first mode's engine rows: the
      // kernel's own layout/uniform ratio under the same load.
      if (cma && m == o.modes.front()) {
        kinds.insert(kinds.end(), {KvKind::kCma, KvKind::kCmaUniform});
        names.insert(names.end(), {"cma", "uniform_cma"});
      }
      progress.Row(label + names[0] + " + " + names[1] + (kinds.size() > 2 ? " + cma + uniform_cma" : ""));
      add(MeasureRows(o, peers, d, kinds, names, m));
    }
    if (ucp) {
      progress.Row(label + "ucp");
      add(MeasureRows(o, peers, d, {KvKind::kUcp}, {"ucp"}, Mode::kSync));
    }
    if (tcp) {
      progress.Row(label + "tcp");
      add(MeasureRows(o, peers, d, {KvKind::kTcp}, {"tcp"}, Mode::kSync));
    }
    // The peers (one target only): each call of a key after the other, as TransferSync.
    const std::pair<KvKind, const char *> kPeerKinds[] = {
        {KvKind::kNixl, "nixl"}, {KvKind::kNixlPoll, "nixl_poll"}, {KvKind::kMooncake, "mooncake"}};
    for (const auto &peer : kPeerKinds) {
      if (!first.KvHas(peer.first)) continue;
      progress.Row(label + peer.second);
      add(MeasureRows(o, peers, d, {peer.first}, {peer.second}, Mode::kSync));
    }
    FillRatios(&group);
    rows->insert(rows->end(), group.begin(), group.end());
    for (Session *p : peers) p->ResetLinkAfterFailure(group);
  }
}

}  // namespace bench
