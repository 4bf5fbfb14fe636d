#include "core/link_stats.h"

#include <algorithm>
#include <cmath>

namespace adxl {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

uint64_t Ns(std::chrono::steady_clock::duration d) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  return ns < 0 ? 0 : static_cast<uint64_t>(ns);
}

// A relaxed maximum: a lost race only retries, and the value never drops.
void RaiseTo(std::atomic<uint64_t> *a, uint64_t v) {
  uint64_t cur = a->load(kRelaxed);
  while (v > cur && !a->compare_exchange_weak(cur, v, kRelaxed)) {
  }
}

}  // namespace

// ---------------------------------------------------------------- histogram

uint64_t LatencySnapshot::UpperNs(int i) {
  if (i >= kBuckets - 1) return UINT64_MAX;
  return (uint64_t{1} << i) * 1000;
}

int LatencySnapshot::BucketOf(uint64_t ns) {
  const uint64_t us = ns / 1000 + (ns % 1000 != 0 ? 1 : 0);  // rounded up: buckets are "<= le"
  if (us <= 1) return 0;
  const int i = 64 - __builtin_clzll(us - 1);
  return std::min(i, kBuckets - 1);
}

uint64_t LatencySnapshot::Percentile(double q) const {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0) return 0;
  q = std::min(1.0, std::max(q, 0.0));
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(total))));
  uint64_t before = 0;
  for (int i = 0; i < kBuckets; ++i) {
    if (counts[i] == 0 || before + counts[i] < rank) {
      before += counts[i];
      continue;
    }
    const uint64_t lo = i == 0 ? 0 : UpperNs(i - 1);
    const uint64_t hi = std::max(lo, i == kBuckets - 1 ? max_ns : std::min(UpperNs(i), max_ns));
    const double frac = static_cast<double>(rank - before) / static_cast<double>(counts[i]);
    const uint64_t v = lo + static_cast<uint64_t>(static_cast<double>(hi - lo) * frac);
    return std::min(v, max_ns);
  }
  return max_ns;
}

void LatencyHistogram::Record(uint64_t ns) {
  counts_[LatencySnapshot::BucketOf(ns)].fetch_add(1, kRelaxed);
  sum_ns_.fetch_add(ns, kRelaxed);
  RaiseTo(&max_ns_, ns);
}

LatencySnapshot LatencyHistogram::Read() const {
  LatencySnapshot s;
  for (int i = 0; i < LatencySnapshot::kBuckets; ++i) {
    s.counts[i] = counts_[i].load(kRelaxed);
    s.count += s.counts[i];
  }
  s.sum_ns = sum_ns_.load(kRelaxed);
  s.max_ns = max_ns_.load(kRelaxed);
  return s;
}

// ---------------------------------------------------------------- snapshots

const char *ConnectPhaseName(int phase) {
  static const char *const kNames[kConnectPhases] = {"tcp", "handshake", "wireup"};
  return phase >= 0 && phase < kConnectPhases ? kNames[phase] : "unknown";
}

void DirectionSnapshot::Add(const DirectionSnapshot &o) {
  transfers += o.transfers;
  descriptors += o.descriptors;
  bytes += o.bytes;
  errors += o.errors;
  timeouts += o.timeouts;
  for (int i = 0; i < LatencySnapshot::kBuckets; ++i) latency.counts[i] += o.latency.counts[i];
  latency.count += o.latency.count;
  latency.sum_ns += o.latency.sum_ns;
  latency.max_ns = std::max(latency.max_ns, o.latency.max_ns);
}

void CountersSnapshot::Add(const CountersSnapshot &o) {
  connects += o.connects;
  connect_failures += o.connect_failures;
  for (int p = 0; p < kConnectPhases; ++p) {
    phases[p].count += o.phases[p].count;
    phases[p].total_ns += o.phases[p].total_ns;
    phases[p].max_ns = std::max(phases[p].max_ns, o.phases[p].max_ns);
    if (o.phases[p].count != 0) phases[p].last_ns = o.phases[p].last_ns;
  }
  for (int d = 0; d < 2; ++d) dir[d].Add(o.dir[d]);
}

// ---------------------------------------------------------------- counters

void LinkCounters::RecordTransfer(TransferOp op, Status st, uint64_t descriptors, uint64_t bytes,
                                  std::chrono::steady_clock::duration took) {
  Direction &d = dir_[op == WRITE ? 1 : 0];
  if (st == SUCCESS) {
    d.descriptors.fetch_add(descriptors, kRelaxed);
    d.bytes.fetch_add(bytes, kRelaxed);
    d.latency.Record(Ns(took));
  } else if (st == TIMEOUT) {
    d.timeouts.fetch_add(1, kRelaxed);
  } else {
    d.errors.fetch_add(1, kRelaxed);
  }
}

void LinkCounters::RecordConnect(bool ok) { (ok ? connects_ : connect_failures_).fetch_add(1, kRelaxed); }

void LinkCounters::RecordPhase(ConnectPhase phase, std::chrono::steady_clock::duration took) {
  Phase &p = phases_[static_cast<int>(phase)];
  const uint64_t ns = Ns(took);
  p.last_ns.store(ns, kRelaxed);
  p.total_ns.fetch_add(ns, kRelaxed);
  RaiseTo(&p.max_ns, ns);
  p.count.fetch_add(1, kRelaxed);
}

CountersSnapshot LinkCounters::Read() const {
  CountersSnapshot s;
  s.connects = connects_.load(kRelaxed);
  s.connect_failures = connect_failures_.load(kRelaxed);
  for (int p = 0; p < kConnectPhases; ++p) {
    s.phases[p].count = phases_[p].count.load(kRelaxed);
    s.phases[p].last_ns = phases_[p].last_ns.load(kRelaxed);
    s.phases[p].total_ns = phases_[p].total_ns.load(kRelaxed);
    s.phases[p].max_ns = phases_[p].max_ns.load(kRelaxed);
  }
  for (int d = 0; d < 2; ++d) {
    DirectionSnapshot &o = s.dir[d];
    o.descriptors = dir_[d].descriptors.load(kRelaxed);
    o.bytes = dir_[d].bytes.load(kRelaxed);
    o.errors = dir_[d].errors.load(kRelaxed);
    o.timeouts = dir_[d].timeouts.load(kRelaxed);
    o.latency = dir_[d].latency.Read();
    o.transfers = o.latency.count;
  }
  return s;
}

// ---------------------------------------------------------------- book

std::shared_ptr<LinkCounters> LinkStatsBook::For(const std::string &remote) {
  MutexLock l(&mu_);
  std::shared_ptr<LinkCounters> &c = peers_[remote];
  if (c) return c;
  c = std::make_shared<LinkCounters>();
  std::shared_ptr<LinkCounters> out = c;
  order_.push_back(remote);
  // Bounded even when nobody reads: a long run of short-lived peers would
  // otherwise grow the book without end.
  if (peers_.size() > 2 * kMaxIdlePeers) TrimLocked();
  return out;
}

void LinkStatsBook::TrimLocked() {
  // Drop the oldest idle names beyond the cap, folding their counts into the
  // retired totals so that engine totals stay monotonic.
  size_t idle = 0;
  for (const auto &kv : peers_) idle += kv.second.use_count() == 1 ? 1 : 0;
  for (auto it = order_.begin(); idle > kMaxIdlePeers && it != order_.end();) {
    auto p = peers_.find(*it);
    if (p->second.use_count() != 1) {
      ++it;
      continue;
    }
    retired_.Add(p->second->Read());
    peers_.erase(p);
    it = order_.erase(it);
    --idle;
  }
}

void LinkStatsBook::Read(std::map<std::string, CountersSnapshot> *peers, CountersSnapshot *retired) {
  peers->clear();
  MutexLock l(&mu_);
  TrimLocked();
  for (const auto &kv : peers_) (*peers)[kv.first] = kv.second->Read();
  *retired = retired_;
}

}  // namespace adxl
