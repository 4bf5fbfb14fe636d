#include "core/stats_export.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

namespace adxl {
namespace {

const char *const kOps[2] = {"read", "write"};

// Field for field, in the order both structs declare them (link_stats.h,
// adxl_ext.h).
ext::ConnectPhaseStats PhaseToPublic(const PhaseSnapshot &p) { return {p.count, p.last_ns, p.total_ns, p.max_ns}; }

ext::DirectionStats DirToPublic(const DirectionSnapshot &d) {
  ext::DirectionStats o;
  o.transfers = d.transfers;
  o.descriptors = d.descriptors;
  o.bytes = d.bytes;
  o.errors = d.errors;
  o.timeouts = d.timeouts;
  o.latency.count = d.latency.count;
  o.latency.sum_ns = d.latency.sum_ns;
  o.latency.max_ns = d.latency.max_ns;
  o.latency.p50_ns = d.latency.Percentile(0.50);
  o.latency.p99_ns = d.latency.Percentile(0.99);
  o.latency.buckets.assign(d.latency.counts.begin(), d.latency.counts.end());
  return o;
}

// Label values escape backslash, double quote and newline (exposition format).
std::string Escape(const std::string &v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Seconds(uint64_t ns) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(ns) / 1e9);
  return buf;
}

class Writer {
 public:
  void Family(const char *name, const char *type, const char *help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // `labels` is the text between the braces, already escaped; may be empty.
  void Sample(const std::string &name, const std::string &labels, const std::string &value) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  void Sample(const std::string &name, const std::string &labels, uint64_t value) {
    Sample(name, labels, std::to_string(value));
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string PeerOp(const std::string &peer, int op) {
  return "peer=\"" + Escape(peer) + "\",op=\"" + kOps[op] + "\"";
}

std::string Bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) {
    snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(b) / (1ull << 30));
  } else if (b >= (1ull << 20)) {
    snprintf(buf, sizeof(buf), "%.2f MiB", static_cast<double>(b) / (1ull << 20));
  } else if (b >= 1024) {
    snprintf(buf, sizeof(buf), "%.1f KiB", static_cast<double>(b) / 1024);
  } else {
    snprintf(buf, sizeof(buf), "%" PRIu64 " B", b);
  }
  return buf;
}

}  // namespace

CountersSnapshot StatsView::Totals() const {
  CountersSnapshot t = retired;
  for (const auto &kv : peers) t.Add(kv.second);
  return t;
}

ext::LinkStats ToPublic(const std::string &remote, bool linked, const CountersSnapshot &s) {
  ext::LinkStats o;
  o.remote = remote;
  o.linked = linked;
  o.connects = s.connects;
  o.connect_failures = s.connect_failures;
  o.tcp_connect = PhaseToPublic(s.phases[static_cast<int>(ConnectPhase::kTcp)]);
  o.handshake = PhaseToPublic(s.phases[static_cast<int>(ConnectPhase::kHandshake)]);
  o.wireup = PhaseToPublic(s.phases[static_cast<int>(ConnectPhase::kWireup)]);
  o.read = DirToPublic(s.dir[0]);
  o.write = DirToPublic(s.dir[1]);
  return o;
}

std::string RenderPrometheusText(const StatsView &view) {
  Writer w;
  struct Counter {
    const char *name;
    const char *help;
    uint64_t DirectionSnapshot::*field;
  };
  static const Counter kCounters[] = {
      {"adxl_transfers_total", "Transfers that completed, by peer and direction.", &DirectionSnapshot::transfers},
      {"adxl_descriptors_total", "Descriptors of completed transfers.", &DirectionSnapshot::descriptors},
      {"adxl_bytes_total", "Bytes moved by completed transfers.", &DirectionSnapshot::bytes},
      {"adxl_transfer_errors_total", "Transfers that failed (not by timeout) once their link was known.",
       &DirectionSnapshot::errors},
      {"adxl_transfer_timeouts_total", "Transfers that ended in TIMEOUT.", &DirectionSnapshot::timeouts},
  };
  for (const Counter &c : kCounters) {
    w.Family(c.name, "counter", c.help);
    for (const auto &kv : view.peers) {
      for (int op = 0; op < 2; ++op) w.Sample(c.name, PeerOp(kv.first, op), kv.second.dir[op].*c.field);
    }
  }
  const char *lat = "adxl_transfer_latency_seconds";
  w.Family(lat, "histogram", "Latency of completed transfers, call to completion.");
  for (const auto &kv : view.peers) {
    for (int op = 0; op < 2; ++op) {
      const LatencySnapshot &h = kv.second.dir[op].latency;
      const std::string labels = PeerOp(kv.first, op);
      uint64_t cumulative = 0;
      for (int i = 0; i < LatencySnapshot::kBuckets; ++i) {
        cumulative += h.counts[i];
        const std::string le = i == LatencySnapshot::kBuckets - 1 ? "+Inf" : Seconds(LatencySnapshot::UpperNs(i));
        w.Sample(std::string(lat) + "_bucket", labels + ",le=\"" + le + "\"", cumulative);
      }
      w.Sample(std::string(lat) + "_sum", labels, Seconds(h.sum_ns));
      w.Sample(std::string(lat) + "_count", labels, cumulative);
    }
  }
  w.Family("adxl_connects_total", "counter", "Connects to the peer that succeeded.");
  for (const auto &kv : view.peers) w.Sample("adxl_connects_total", "peer=\"" + Escape(kv.first) + "\"", kv.second.connects);
  w.Family("adxl_connect_failures_total", "counter", "Connects to the peer that failed.");
  for (const auto &kv : view.peers) {
    w.Sample("adxl_connect_failures_total", "peer=\"" + Escape(kv.first) + "\"", kv.second.connect_failures);
  }
  w.Family("adxl_connect_phase_seconds", "summary", "Time of each completed connect phase (tcp, handshake, wireup).");
  for (const auto &kv : view.peers) {
    for (int p = 0; p < kConnectPhases; ++p) {
      const std::string labels = "peer=\"" + Escape(kv.first) + "\",phase=\"" + ConnectPhaseName(p) + "\"";
      w.Sample("adxl_connect_phase_seconds_sum", labels, Seconds(kv.second.phases[p].total_ns));
      w.Sample("adxl_connect_phase_seconds_count", labels, kv.second.phases[p].count);
    }
  }
  w.Family("adxl_connect_phase_last_seconds", "gauge", "Time of the last completion of each connect phase.");
  for (const auto &kv : view.peers) {
    for (int p = 0; p < kConnectPhases; ++p) {
      const std::string labels = "peer=\"" + Escape(kv.first) + "\",phase=\"" + ConnectPhaseName(p) + "\"";
      w.Sample("adxl_connect_phase_last_seconds", labels, Seconds(kv.second.phases[p].last_ns));
    }
  }
  w.Family("adxl_link_up", "gauge", "1 while a connected link to the peer exists.");
  for (const auto &kv : view.peers) {
    w.Sample("adxl_link_up", "peer=\"" + Escape(kv.first) + "\"", view.linked.count(kv.first) ? 1 : 0);
  }
  // Engine totals include peers the book dropped: they never go backwards.
  const CountersSnapshot t = view.Totals();
  static const Counter kTotals[] = {
      {"adxl_engine_transfers_total", "Transfers that completed, all peers.", &DirectionSnapshot::transfers},
      {"adxl_engine_descriptors_total", "Descriptors of completed transfers, all peers.",
       &DirectionSnapshot::descriptors},
      {"adxl_engine_bytes_total", "Bytes moved by completed transfers, all peers.", &DirectionSnapshot::bytes},
      {"adxl_engine_transfer_errors_total", "Failed transfers, all peers.", &DirectionSnapshot::errors},
      {"adxl_engine_transfer_timeouts_total", "Transfers that ended in TIMEOUT, all peers.",
       &DirectionSnapshot::timeouts},
  };
  for (const Counter &c : kTotals) {
    w.Family(c.name, "counter", c.help);
    for (int op = 0; op < 2; ++op) w.Sample(c.name, std::string("op=\"") + kOps[op] + "\"", t.dir[op].*c.field);
  }
  w.Family("adxl_engine_connects_total", "counter", "Connects that succeeded, all peers.");
  w.Sample("adxl_engine_connects_total", "", t.connects);
  w.Family("adxl_engine_connect_failures_total", "counter", "Connects that failed, all peers.");
  w.Sample("adxl_engine_connect_failures_total", "", t.connect_failures);
  w.Family("adxl_engine_links", "gauge", "Connected links now.");
  w.Sample("adxl_engine_links", "", view.linked.size());
  return w.Take();
}

std::string SummaryLine(const StatsView &view, const StatsView &previous, size_t busiest) {
  const CountersSnapshot now = view.Totals();
  const CountersSnapshot before = previous.Totals();
  std::string line = "stats: " + std::to_string(view.linked.size()) + " links";
  for (int op = 0; op < 2; ++op) {
    const DirectionSnapshot &d = now.dir[op];
    const DirectionSnapshot &b = before.dir[op];
    char buf[256];
    snprintf(buf, sizeof(buf),
             "; %s +%" PRIu64 " transfers +%s (all: %" PRIu64 ", %s), errors %" PRIu64 ", timeouts %" PRIu64
             ", p50 %.1f us, p99 %.1f us, max %.1f us",
             op == 0 ? "READ" : "WRITE", d.transfers - std::min(d.transfers, b.transfers),
             Bytes(d.bytes - std::min(d.bytes, b.bytes)).c_str(), d.transfers, Bytes(d.bytes).c_str(), d.errors,
             d.timeouts, d.latency.Percentile(0.5) / 1e3, d.latency.Percentile(0.99) / 1e3, d.latency.max_ns / 1e3);
    line += buf;
  }
  // The busiest peers of the interval, by bytes both ways.
  std::vector<std::pair<uint64_t, const std::string *>> moved;
  for (const auto &kv : view.peers) {
    uint64_t b = kv.second.dir[0].bytes + kv.second.dir[1].bytes;
    auto it = previous.peers.find(kv.first);
    if (it != previous.peers.end()) b -= std::min(b, it->second.dir[0].bytes + it->second.dir[1].bytes);
    if (b != 0) moved.emplace_back(b, &kv.first);
  }
  std::sort(moved.begin(), moved.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  if (moved.size() > busiest) moved.resize(busiest);
  line += "; busiest:";
  if (moved.empty()) line += " none";
  for (const auto &m : moved) line += " " + *m.second + " +" + Bytes(m.first);
  return line;
}

}  // namespace adxl
