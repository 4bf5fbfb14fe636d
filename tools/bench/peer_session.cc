// The session's peer rows (peer_baseline.h) and the CPU time of the bench's
// own processes, for the CPU-per-GB column of every row.
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "session.h"

namespace bench {

void Session::StartPeers() {
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  target_same_host_ = target_pid_ != 0 && target_host_ == host;
  if (!o_.nixl_baseline && !o_.mooncake_baseline) return;
  if (o_.peers > 1) {
    peers_note_ = "off (--peers N > 1: the peer rows cover one target)";
    return;
  }
  std::vector<std::string> names;
  if (o_.nixl_baseline) names = {"nixl", "nixl_poll"};
  if (o_.mooncake_baseline) names.push_back("mooncake");
  std::string why;
  const std::string python = PeersPython(o_.peers_venv, &why);
  if (python.empty()) {
    // Not an error: a machine without the venv measures everything else.
    peers_note_ = Join(names, ", ") + ": " + why;
    return;
  }
  std::vector<std::string> notes;
  for (const std::string &name : names) {
    if (name == "mooncake" && o_.lane == Lane::kHccs) {
      notes.push_back("mooncake: no same-node transport in its non-CUDA wheel (TCP only), not on --lane hccs");
      continue;
    }
    // The engine buffer's size (the kv pool under --workload kv); Mooncake's
    // queue as deep as the largest batch (a bandwidth step of the smallest block).
    const size_t batch = std::max<size_t>(4096, buffer_.size() / o_.block_sizes.front());
    std::unique_ptr<PeerDriver> d = PeerDriver::Create(python, name, o_.lane, buffer_.size(), batch, o_.timeout_ms,
                                                       PagesOptionName(o_.pages), &why);
    if (d == nullptr) {
      notes.push_back(why);
      continue;
    }
    notes.push_back(name + " (" + d->description() + ")");
    peers_.push_back({name, std::move(d)});
  }
  peers_note_ = Join(notes, "; ") + "; driver " + python;
}

void Session::AddPeerTurns(const BlockBatch &b, const Direction &d, std::vector<Turn> *turns) {
  for (Peer &p : peers_) {
    PeerDriver *driver = p.driver.get();
    const bool verify = o_.verify;
    turns->push_back({NewRow(p.name, "seq", d, b.block, b.count, 1), Destination{}, 0,
                      [driver, b, verify] { return driver->RunStep(b, verify); },
                      [driver] { return driver->LastCheck(); }});
    Row &row = turns->back().row;
    // The peer's own transports, not the engine's link.
    row.transport = std::string(LaneName(o_.lane)) + ":" + (p.name == "mooncake" ? "mooncake-tcp" : "nixl-ucx");
  }
}

PeerDriver *Session::KvPeer(KvKind k) const {
  const char *name = k == KvKind::kNixl ? "nixl" : k == KvKind::kNixlPoll ? "nixl_poll" : k == KvKind::kMooncake ? "mooncake" : nullptr;
  if (name == nullptr) return nullptr;
  for (const Peer &p : peers_) {
    if (p.name == name) return p.driver.get();
  }
  return nullptr;
}

double Session::BenchCpuSeconds() const {
  auto seconds = [](clockid_t clock) {
    timespec ts{};
    if (clock_gettime(clock, &ts) != 0) return 0.0;
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  double total = seconds(CLOCK_PROCESS_CPUTIME_ID);
  clockid_t target{};
  if (target_same_host_ && clock_getcpuclockid(static_cast<pid_t>(target_pid_), &target) == 0) {
    total += seconds(target);
  }
  return total;
}

}  // namespace bench

namespace bench {

void Session::AddTcpLimitTurns(const BlockBatch &b, const Direction &d, const Destination &dest, uint64_t expected,
                               std::vector<Turn> *turns) {
  if (!tcp_limit_) return;
  for (const TcpVariant &v : TcpLimitVariants()) {
    TcpLimit *limit = tcp_limit_.get();
    turns->push_back({NewRow(v.name, "seq", d, b.block, b.count, v.streams), dest, expected,
                      [limit, b, &v] { return limit->RunStep(b, v); }});
  }
}

void Session::AddTcpLimitRow(std::vector<Row> *group) {
  const Row *best = nullptr;
  for (const Row &r : *group) {
    if (r.benchmark.rfind("tcp_", 0) != 0 || r.error_count != 0 || r.consistency == "fail") continue;
    if (best == nullptr || r.bandwidth_gbps > best->bandwidth_gbps) best = &r;
  }
  if (best == nullptr) return;
  Row limit = *best;
  limit.benchmark = "tcp";
  limit.note = "limit: best of tcp_*, here " + best->benchmark;
  group->push_back(limit);
}

}  // namespace bench
