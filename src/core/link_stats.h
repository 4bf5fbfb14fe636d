// LinkCounters: what one peer's links moved and how their connects went
// (adxl_ext.h LinkStats), and LinkStatsBook: the counters of every peer this
// engine linked to, kept across reconnects.
//
// Counting is on the data path, so it takes no lock: every field is a
// relaxed atomic, written by whichever thread ends a transfer or a connect
// phase.  A reader sees each field at some recent value; fields may be
// mutually a few transfers apart (a snapshot is not a transaction), which a
// scraper tolerates, and no field ever goes backwards.
//
// Latency is a histogram of whole transfers (call to completion) in fixed
// log2 buckets: bucket i counts latencies in (2^(i-1), 2^i] microseconds
// (bucket 0: up to 1 us), the last one everything above 2^(kBuckets-2) us.
// Percentiles are computed when read (LatencySnapshot::Percentile).
//
// The counters of a peer live as long as the book keeps its name, so that a
// reconnect continues them: a scraper never sees a counter go backwards.
// Names whose link is gone are dropped beyond kMaxIdlePeers (least recently
// created first) and their counts folded into the book's retired totals,
// which engine totals include.
//
// Thread-safety: any thread.  LinkStatsBook::mu_ guards the name map and
// the retired totals; it is a leaf, never held across a call out, and never
// taken on the data path (a link holds its counters by shared_ptr).
#ifndef ADXL_SRC_CORE_LINK_STATS_H_
#define ADXL_SRC_CORE_LINK_STATS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adxl/adxl_types.h"
#include "common/thread_annotations.h"

namespace adxl {

// A histogram read at one moment.
struct LatencySnapshot {
  static constexpr int kBuckets = 26;  // le 1 us .. 2^24 us (16.8 s), then +Inf
  std::array<uint64_t, kBuckets> counts{};
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  uint64_t max_ns = 0;

  // Upper bound of bucket i in ns (UINT64_MAX for the last).
  static uint64_t UpperNs(int i);
  // The bucket a latency of `ns` falls in.
  static int BucketOf(uint64_t ns);
  // The q-quantile (0 < q <= 1) in ns, interpolated linearly inside its
  // bucket and never above max_ns; 0 when nothing was recorded.
  uint64_t Percentile(double q) const;
};

class LatencyHistogram {
 public:
  void Record(uint64_t ns);
  LatencySnapshot Read() const;

 private:
  std::array<std::atomic<uint64_t>, LatencySnapshot::kBuckets> counts_{};
  std::atomic<uint64_t> sum_ns_{0};
  std::atomic<uint64_t> max_ns_{0};
};

// The connect phases the connector times (connector.cc).
enum class ConnectPhase { kTcp = 0, kHandshake = 1, kWireup = 2 };
constexpr int kConnectPhases = 3;
const char *ConnectPhaseName(int phase);  // "tcp", "handshake", "wireup"

struct PhaseSnapshot {
  uint64_t count = 0, last_ns = 0, total_ns = 0, max_ns = 0;
};

struct DirectionSnapshot {
  uint64_t transfers = 0, descriptors = 0, bytes = 0, errors = 0, timeouts = 0;
  LatencySnapshot latency;
  void Add(const DirectionSnapshot &o);
};

struct CountersSnapshot {
  uint64_t connects = 0, connect_failures = 0;
  std::array<PhaseSnapshot, kConnectPhases> phases{};
  std::array<DirectionSnapshot, 2> dir{};  // [0] READ, [1] WRITE
  void Add(const CountersSnapshot &o);
};

class LinkCounters {
 public:
  // A transfer ended with `st`: SUCCESS counts the transfer, its descriptors,
  // bytes and latency; TIMEOUT a timeout; anything else an error.
  void RecordTransfer(TransferOp op, Status st, uint64_t descriptors, uint64_t bytes,
                      std::chrono::steady_clock::duration took);
  // A Connect attempt of this engine ended (ok or not).
  void RecordConnect(bool ok);
  // A connect phase completed and took `took`.
  void RecordPhase(ConnectPhase phase, std::chrono::steady_clock::duration took);
  CountersSnapshot Read() const;

 private:
  // Completed transfers are not counted apart: every one adds one latency
  // sample, so their number is the histogram's count (one atomic add less
  // per transfer).
  struct Direction {
    std::atomic<uint64_t> descriptors{0}, bytes{0}, errors{0}, timeouts{0};
    LatencyHistogram latency;
  };
  struct Phase {
    std::atomic<uint64_t> count{0}, last_ns{0}, total_ns{0}, max_ns{0};
  };
  std::atomic<uint64_t> connects_{0}, connect_failures_{0};
  std::array<Phase, kConnectPhases> phases_{};
  std::array<Direction, 2> dir_{};
};

class LinkStatsBook {
 public:
  static constexpr size_t kMaxIdlePeers = 1024;

  // The counters of `remote`, created on first use.
  std::shared_ptr<LinkCounters> For(const std::string &remote) ADXL_EXCLUDES(mu_);
  // Every peer's counters by name, and the counts of peers dropped from the
  // book.  Drops idle names beyond kMaxIdlePeers first (an idle name is one
  // only the book still holds: no link uses its counters).
  void Read(std::map<std::string, CountersSnapshot> *peers, CountersSnapshot *retired) ADXL_EXCLUDES(mu_);

 private:
  void TrimLocked() ADXL_REQUIRES(mu_);

  Mutex mu_;
  std::map<std::string, std::shared_ptr<LinkCounters>> peers_ ADXL_GUARDED_BY(mu_);
  std::vector<std::string> order_ ADXL_GUARDED_BY(mu_);  // names in creation order, for dropping the oldest
  CountersSnapshot retired_ ADXL_GUARDED_BY(mu_);
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_LINK_STATS_H_
