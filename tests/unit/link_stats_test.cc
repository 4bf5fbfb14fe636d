// LinkCounters and the latency histogram (core/link_stats.h): bucket edges,
// percentiles against a known distribution, counting per direction and
// outcome, the book keeping counts across reconnects and folding dropped
// names into its retired totals, and concurrent counting (TSan: the name
// has "Concurrent" so that scripts/sanitize.sh runs it).
#include "core/link_stats.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

using namespace adxl;
using std::chrono::microseconds;
using std::chrono::nanoseconds;

TEST(LatencyHistogram, BucketEdgesAreInclusiveUpperBounds) {
  EXPECT_EQ(LatencySnapshot::BucketOf(0), 0);
  EXPECT_EQ(LatencySnapshot::BucketOf(1000), 0);     // le 1 us
  EXPECT_EQ(LatencySnapshot::BucketOf(1001), 1);     // le 2 us
  EXPECT_EQ(LatencySnapshot::BucketOf(2000), 1);
  EXPECT_EQ(LatencySnapshot::BucketOf(2001), 2);     // le 4 us
  EXPECT_EQ(LatencySnapshot::BucketOf(1000000), 10); // 1 ms: le 1024 us
  EXPECT_EQ(LatencySnapshot::BucketOf(UINT64_MAX), LatencySnapshot::kBuckets - 1);
  for (int i = 0; i + 1 < LatencySnapshot::kBuckets; ++i) {
    EXPECT_EQ(LatencySnapshot::BucketOf(LatencySnapshot::UpperNs(i)), i);
    EXPECT_EQ(LatencySnapshot::BucketOf(LatencySnapshot::UpperNs(i) + 1), i + 1);
  }
}

TEST(LatencyHistogram, PercentilesOfAKnownDistribution) {
  LatencyHistogram h;
  EXPECT_EQ(h.Read().Percentile(0.5), 0u);
  // 99 transfers of 10 us and one of 5 ms.
  for (int i = 0; i < 99; ++i) h.Record(10000);
  h.Record(5000000);
  const LatencySnapshot s = h.Read();
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.max_ns, 5000000u);
  EXPECT_EQ(s.sum_ns, 99u * 10000 + 5000000);
  // 10 us lies in (8, 16] us: the median is reported inside that bucket.
  EXPECT_GT(s.Percentile(0.5), 8000u);
  EXPECT_LE(s.Percentile(0.5), 16000u);
  EXPECT_LE(s.Percentile(0.99), 16000u);   // the 99th of 100 is still a 10 us one
  EXPECT_EQ(s.Percentile(1.0), 5000000u);  // the largest is the max, exactly
  // Never above the max, even inside a wide bucket.
  LatencyHistogram one;
  one.Record(3000);
  EXPECT_LE(one.Read().Percentile(0.99), 3000u);
  EXPECT_GT(one.Read().Percentile(0.99), 2000u);
}

TEST(LatencyHistogram, PercentilesAreMonotonicInQ) {
  LatencyHistogram h;
  for (uint64_t ns = 500; ns < 50000000; ns = ns * 3 / 2) h.Record(ns);
  const LatencySnapshot s = h.Read();
  uint64_t prev = 0;
  for (double q = 0.01; q <= 1.0; q += 0.01) {
    const uint64_t v = s.Percentile(q);
    EXPECT_GE(v, prev) << q;
    prev = v;
  }
  EXPECT_EQ(prev, s.max_ns);
}

TEST(LinkCounters, CountsPerDirectionAndOutcome) {
  LinkCounters c;
  c.RecordTransfer(READ, SUCCESS, 3, 3000, microseconds(5));
  c.RecordTransfer(READ, SUCCESS, 1, 100, microseconds(7));
  c.RecordTransfer(WRITE, SUCCESS, 2, 64, microseconds(9));
  c.RecordTransfer(WRITE, TIMEOUT, 2, 64, microseconds(900));
  c.RecordTransfer(READ, PARAM_INVALID, 1, 8, microseconds(1));
  c.RecordTransfer(READ, FAILED, 1, 8, microseconds(1));
  c.RecordConnect(true);
  c.RecordConnect(false);
  c.RecordPhase(ConnectPhase::kTcp, microseconds(100));
  c.RecordPhase(ConnectPhase::kTcp, microseconds(300));
  c.RecordPhase(ConnectPhase::kWireup, microseconds(50));
  const CountersSnapshot s = c.Read();
  EXPECT_EQ(s.dir[0].transfers, 2u);
  EXPECT_EQ(s.dir[0].descriptors, 4u);
  EXPECT_EQ(s.dir[0].bytes, 3100u);
  EXPECT_EQ(s.dir[0].errors, 2u);
  EXPECT_EQ(s.dir[0].timeouts, 0u);
  EXPECT_EQ(s.dir[0].latency.count, 2u);
  EXPECT_EQ(s.dir[1].transfers, 1u);
  EXPECT_EQ(s.dir[1].bytes, 64u);
  EXPECT_EQ(s.dir[1].timeouts, 1u);
  EXPECT_EQ(s.dir[1].latency.count, 1u);  // a timeout is not a latency sample
  EXPECT_EQ(s.connects, 1u);
  EXPECT_EQ(s.connect_failures, 1u);
  const PhaseSnapshot &tcp = s.phases[static_cast<int>(ConnectPhase::kTcp)];
  EXPECT_EQ(tcp.count, 2u);
  EXPECT_EQ(tcp.last_ns, 300000u);
  EXPECT_EQ(tcp.total_ns, 400000u);
  EXPECT_EQ(tcp.max_ns, 300000u);
  EXPECT_EQ(s.phases[static_cast<int>(ConnectPhase::kHandshake)].count, 0u);
  EXPECT_STREQ(ConnectPhaseName(2), "wireup");
}

TEST(LinkStatsBook, KeepsCountsAcrossReconnectsAndRetiresOldNames) {
  LinkStatsBook book;
  {
    auto c = book.For("a:1");
    c->RecordTransfer(READ, SUCCESS, 1, 10, microseconds(1));
  }
  book.For("a:1")->RecordTransfer(READ, SUCCESS, 1, 10, microseconds(1));  // a reconnect continues
  std::map<std::string, CountersSnapshot> peers;
  CountersSnapshot retired;
  book.Read(&peers, &retired);
  ASSERT_EQ(peers.count("a:1"), 1u);
  EXPECT_EQ(peers["a:1"].dir[0].bytes, 20u);
  EXPECT_EQ(retired.dir[0].bytes, 0u);
  // Beyond the cap of idle names the oldest are folded into the retired totals.
  auto held = book.For("held:1");  // a live link: never dropped
  held->RecordTransfer(WRITE, SUCCESS, 1, 5, microseconds(1));
  for (size_t i = 0; i < LinkStatsBook::kMaxIdlePeers + 10; ++i) {
    book.For("p" + std::to_string(i) + ":1")->RecordTransfer(WRITE, SUCCESS, 1, 1, microseconds(1));
  }
  book.Read(&peers, &retired);
  EXPECT_EQ(peers.count("a:1"), 0u);
  EXPECT_EQ(peers.count("held:1"), 1u);
  CountersSnapshot total = retired;
  for (const auto &kv : peers) total.Add(kv.second);
  EXPECT_EQ(total.dir[0].bytes, 20u);
  EXPECT_EQ(total.dir[1].bytes, 5u + LinkStatsBook::kMaxIdlePeers + 10);
  EXPECT_EQ(total.dir[1].transfers, 1u + LinkStatsBook::kMaxIdlePeers + 10);
}

TEST(LinkStatsConcurrent, ReadsWhileCountingNeverGoBack) {
  LinkStatsBook book;
  auto c = book.For("x:1");
  constexpr int kThreads = 3, kEach = 20000;
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&c, t] {
      for (int i = 0; i < kEach; ++i) c->RecordTransfer(t % 2 ? WRITE : READ, SUCCESS, 2, 8, nanoseconds(100 * i));
    });
  }
  uint64_t last = 0;
  std::map<std::string, CountersSnapshot> peers;
  CountersSnapshot retired;
  for (int r = 0; r < 200; ++r) {
    book.Read(&peers, &retired);
    const uint64_t now = peers["x:1"].dir[0].bytes + peers["x:1"].dir[1].bytes;
    EXPECT_GE(now, last);
    last = now;
  }
  for (auto &w : writers) w.join();
  const CountersSnapshot s = c->Read();
  EXPECT_EQ(s.dir[0].transfers + s.dir[1].transfers, uint64_t{kThreads} * kEach);
  EXPECT_EQ(s.dir[0].bytes + s.dir[1].bytes, uint64_t{kThreads} * kEach * 8);
  EXPECT_EQ(s.dir[0].latency.count + s.dir[1].latency.count, uint64_t{kThreads} * kEach);
}
