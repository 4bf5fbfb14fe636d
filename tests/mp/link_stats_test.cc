// Per-link statistics (adxl_ext.h GetLinkStats, GetAllLinkStats,
// RenderPrometheus) against a real peer process: the counters match what
// was moved exactly, per direction; errors and timeouts are counted; the
// connect phases are timed; the Prometheus text is well formed, monotonic
// across scrapes and keeps a disconnected peer's counts in the engine
// totals; reads of the statistics while transfers run (TSan: the name of
// that case has "Concurrent").
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include "adxl/adxl_ext.h"
#include "mp_fixture.h"

using namespace adxl;
using namespace adxl_test;

namespace {

ext::LinkStats Stats(AdxlEngine &e, const std::string &peer) {
  ext::LinkStats s;
  EXPECT_EQ(ext::GetLinkStats(e, peer.c_str(), s), SUCCESS);
  return s;
}

// Every sample line of a Prometheus text, by "name{labels}"; fails the test
// on a line that is neither a comment nor `name{labels} value`.
std::map<std::string, double> ParsePrometheus(const std::string &text) {
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})?) ([-+0-9.eE]+|\+Inf|NaN)$)");
  static const std::regex kComment(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, kComment)) continue;
    if (!std::regex_match(line, m, kSample)) {
      ADD_FAILURE() << "malformed line: '" << line << "'";
      continue;
    }
    EXPECT_EQ(out.count(m[1]), 0u) << "duplicate series " << m[1];
    out[m[1]] = std::stod(m[3]);
  }
  return out;
}

class LinkStatsTest : public PeerTest {};

TEST_F(LinkStatsTest, CountersMatchWhatWasMoved) {
  ASSERT_EQ(Connect(), SUCCESS);
  ext::LinkStats s = Stats(engine_, peer_name_);
  EXPECT_TRUE(s.linked);
  EXPECT_EQ(s.connects, 1u);
  EXPECT_EQ(s.connect_failures, 0u);
  for (const ext::ConnectPhaseStats *p : {&s.tcp_connect, &s.handshake, &s.wireup}) {
    EXPECT_EQ(p->count, 1u);
    EXPECT_GT(p->last_ns, 0u);
    EXPECT_EQ(p->total_ns, p->last_ns);
    EXPECT_LT(p->last_ns, 5000000000ull);
  }
  EXPECT_EQ(s.read.transfers + s.write.transfers, 0u);

  // 3 READs of 5 descriptors of 4 KiB, 2 WRITEs of 1 descriptor of 64 KiB,
  // 1 async WRITE of 2 descriptors of 1 KiB.
  std::vector<TransferOpDesc> reads;
  for (int i = 0; i < 5; ++i) reads.push_back({local_.addr() + i * 8192, remote_ + i * 8192, 4096});
  for (int i = 0; i < 3; ++i) ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, reads, 5000), SUCCESS);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 65536}}, 5000), SUCCESS);
  }
  TransferReq req = nullptr;
  ASSERT_EQ(engine_.TransferAsync(peer_name_.c_str(), WRITE,
                                  {{local_.addr(), remote_ + 100000, 1024}, {local_.addr() + 4096, remote_ + 200000, 1024}},
                                  TransferArgs{}, req),
            SUCCESS);
  TransferStatus ts = TransferStatus::WAITING;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ts == TransferStatus::WAITING && std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(engine_.GetTransferStatus(req, ts), SUCCESS);
  }
  ASSERT_EQ(ts, TransferStatus::COMPLETED);

  s = Stats(engine_, peer_name_);
  EXPECT_EQ(s.read.transfers, 3u);
  EXPECT_EQ(s.read.descriptors, 15u);
  EXPECT_EQ(s.read.bytes, 3u * 5 * 4096);
  EXPECT_EQ(s.write.transfers, 3u);
  EXPECT_EQ(s.write.descriptors, 4u);
  EXPECT_EQ(s.write.bytes, 2u * 65536 + 2048);
  EXPECT_EQ(s.read.errors + s.read.timeouts + s.write.errors + s.write.timeouts, 0u);
  for (const ext::DirectionStats *d : {&s.read, &s.write}) {
    EXPECT_EQ(d->latency.count, d->transfers);
    EXPECT_GT(d->latency.p50_ns, 0u);
    EXPECT_LE(d->latency.p50_ns, d->latency.p99_ns);
    EXPECT_LE(d->latency.p99_ns, d->latency.max_ns);
    EXPECT_GE(d->latency.sum_ns, d->latency.max_ns);
    uint64_t n = 0;
    for (uint64_t b : d->latency.buckets) n += b;
    EXPECT_EQ(n, d->transfers);
  }
  // GetLinkInfo's byte counts agree.
  ext::LinkInfo info;
  ASSERT_EQ(ext::GetLinkInfo(engine_, peer_name_.c_str(), info), SUCCESS);
  EXPECT_EQ(info.bytes_read, s.read.bytes);
  EXPECT_EQ(info.bytes_written, s.write.bytes);
  ext::LinkStats none;
  EXPECT_EQ(ext::GetLinkStats(engine_, "127.0.0.1:1", none), NOT_CONNECTED);
}

TEST_F(LinkStatsTest, ErrorsCountedAgainstTheirDirection) {
  ASSERT_EQ(Connect(), SUCCESS);
  // A remote range the peer never registered: refused after the refresh.
  const uintptr_t unregistered = remote_ + kRemoteSize + (1u << 20);
  EXPECT_NE(engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), unregistered, 64}}, 2000), SUCCESS);
  EXPECT_NE(engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), unregistered, 64}}, 2000), SUCCESS);
  TransferReq req = nullptr;
  EXPECT_NE(engine_.TransferAsync(peer_name_.c_str(), WRITE, {{local_.addr(), unregistered, 64}}, TransferArgs{}, req),
            SUCCESS);
  const ext::LinkStats s = Stats(engine_, peer_name_);
  EXPECT_EQ(s.read.errors, 2u);
  EXPECT_EQ(s.write.errors, 1u);
  EXPECT_EQ(s.read.transfers + s.write.transfers, 0u);
  EXPECT_EQ(s.read.bytes + s.write.bytes, 0u);
  EXPECT_EQ(s.read.latency.count, 0u);
  // A failed connect is counted too (nobody listens there).
  peer_->Signal(SIGKILL);
  (void)engine_.Disconnect(peer_name_.c_str(), 500);
  EXPECT_NE(Connect(1000), SUCCESS);
  EXPECT_EQ(Stats(engine_, peer_name_).connect_failures, 1u);
}

TEST_F(LinkStatsTest, PrometheusTextParsesIsMonotonicAndKeepsRemovedLinks) {
  ASSERT_EQ(Connect(), SUCCESS);
  ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), remote_, 4096}}, 5000), SUCCESS);
  std::string text;
  ASSERT_EQ(ext::RenderPrometheus(engine_, text), SUCCESS);
  const auto first = ParsePrometheus(text);
  const std::string peer = "peer=\"" + peer_name_ + "\"";
  EXPECT_EQ(first.at("adxl_transfers_total{" + peer + ",op=\"read\"}"), 1);
  EXPECT_EQ(first.at("adxl_bytes_total{" + peer + ",op=\"read\"}"), 4096);
  EXPECT_EQ(first.at("adxl_transfer_latency_seconds_count{" + peer + ",op=\"read\"}"), 1);
  EXPECT_EQ(first.at("adxl_transfer_latency_seconds_bucket{" + peer + ",op=\"read\",le=\"+Inf\"}"), 1);
  EXPECT_EQ(first.at("adxl_connects_total{" + peer + "}"), 1);
  EXPECT_EQ(first.at("adxl_link_up{" + peer + "}"), 1);
  EXPECT_GT(first.at("adxl_connect_phase_seconds_count{" + peer + ",phase=\"wireup\"}"), 0);
  EXPECT_EQ(first.at("adxl_engine_bytes_total{op=\"read\"}"), 4096);
  ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 512}}, 5000), SUCCESS);
  ASSERT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), SUCCESS);
  ASSERT_EQ(ext::RenderPrometheus(engine_, text), SUCCESS);
  const auto second = ParsePrometheus(text);
  for (const auto &kv : first) {
    const bool counter = kv.first.find("_total") != std::string::npos || kv.first.find("_count") != std::string::npos ||
                         kv.first.find("_bucket") != std::string::npos || kv.first.find("_sum") != std::string::npos;
    if (!counter) continue;
    ASSERT_EQ(second.count(kv.first), 1u) << kv.first << " vanished";
    EXPECT_GE(second.at(kv.first), kv.second) << kv.first << " went backwards";
  }
  EXPECT_EQ(second.at("adxl_link_up{" + peer + "}"), 0);
  EXPECT_EQ(second.at("adxl_engine_links"), 0);
  EXPECT_EQ(second.at("adxl_engine_bytes_total{op=\"read\"}"), 4096);
  EXPECT_EQ(second.at("adxl_engine_bytes_total{op=\"write\"}"), 512);
  // A reconnect continues the peer's counters.
  ASSERT_EQ(Connect(), SUCCESS);
  ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), remote_, 100}}, 5000), SUCCESS);
  std::vector<ext::LinkStats> all;
  ext::LinkStats totals;
  ASSERT_EQ(ext::GetAllLinkStats(engine_, all, &totals), SUCCESS);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].remote, peer_name_);
  EXPECT_EQ(all[0].connects, 2u);
  EXPECT_EQ(all[0].read.bytes, 4196u);
  EXPECT_EQ(totals.read.bytes, 4196u);
  EXPECT_EQ(totals.write.bytes, 512u);
}

TEST_F(LinkStatsTest, ConcurrentReadsWhileTransfersRun) {
  ASSERT_EQ(Connect(), SUCCESS);
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    uint64_t last = 0;
    std::string text;
    while (!stop.load()) {
      ext::LinkStats s;
      if (ext::GetLinkStats(engine_, peer_name_.c_str(), s) != SUCCESS) continue;
      EXPECT_GE(s.write.bytes, last);
      last = s.write.bytes;
      EXPECT_EQ(ext::RenderPrometheus(engine_, text), SUCCESS);
    }
  });
  constexpr int kEach = 200;
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_EQ(engine_.TransferSync(peer_name_.c_str(), WRITE, {{local_.addr() + t * 8192, remote_ + t * 8192, 1000}},
                                       5000),
                  SUCCESS);
      }
    });
  }
  for (auto &w : writers) w.join();
  stop = true;
  reader.join();
  const ext::LinkStats s = Stats(engine_, peer_name_);
  EXPECT_EQ(s.write.transfers, 2u * kEach);
  EXPECT_EQ(s.write.bytes, 2u * kEach * 1000);
  EXPECT_EQ(s.write.latency.count, 2u * kEach);
}

// The network lane, with the target stopped: TIMEOUT is counted as such.
class LinkStatsNetworkTest : public PeerTest {
 protected:
  void SetUp() override { StartPeer({"ADXL_NODE_ID=another-host", "UCX_TLS=tcp"}); }
};

TEST_F(LinkStatsNetworkTest, TimeoutAgainstAStoppedPeerIsCounted) {
  ASSERT_EQ(Connect(), SUCCESS);
  ext::LinkInfo info;
  ASSERT_EQ(ext::GetLinkInfo(engine_, peer_name_.c_str(), info), SUCCESS);
  ASSERT_FALSE(info.same_node);
  std::vector<TransferOpDesc> descs;
  for (size_t off = 0; off < kRemoteSize; off += 64 << 10) descs.push_back({local_.addr() + off, remote_ + off, 64 << 10});
  peer_->Stop();
  Status st = SUCCESS;
  int attempts = 0;
  for (; attempts < 20 && st == SUCCESS; ++attempts) st = engine_.TransferSync(peer_name_.c_str(), WRITE, descs, 300);
  peer_->Signal(SIGCONT);
  ASSERT_EQ(st, TIMEOUT);
  const ext::LinkStats s = Stats(engine_, peer_name_);
  EXPECT_EQ(s.write.timeouts, 1u);
  EXPECT_EQ(s.write.transfers, static_cast<uint64_t>(attempts - 1));
  EXPECT_EQ(s.write.errors, 0u);
  // The failed link refuses before a transfer starts: nothing more counted.
  EXPECT_EQ(engine_.TransferSync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 64}}, 1000), FAILED);
  EXPECT_EQ(Stats(engine_, peer_name_).write.errors, 0u);
  EXPECT_EQ(Stats(engine_, peer_name_).write.timeouts, 1u);
}

}  // namespace

namespace {

// The periodic summary: an initiator process with ADXL_STATS_INTERVAL_MS=200
// and info logging writes a "stats:" line naming its busiest peer.
TEST(LinkStatsLog, PeriodicSummaryLineNamesTheBusiestPeer) {
  char log_path[] = "/tmp/adxl_stats_log_XXXXXX";
  const int fd = mkstemp(log_path);
  ASSERT_GE(fd, 0);
  close(fd);
  PeerProcess target;
  const std::string target_name = InitOnFreePort(target, "adxl.HeartbeatMs=100");
  ASSERT_NE(target_name, "");
  auto t = target.Ok("alloc 65536");
  ASSERT_EQ(t.size(), 2u);
  ASSERT_EQ(target.Ok("reg 0").size(), 1u);
  PeerProcess initiator({"ADXL_LOG_LEVEL=info", "ADXL_STATS_INTERVAL_MS=200"},
                        {"/bin/sh", "-c", std::string("exec \"$0\" 2>>") + log_path});
  ASSERT_NE(InitOnFreePort(initiator, "adxl.HeartbeatMs=100"), "");
  ASSERT_EQ(initiator.Ok("alloc 65536").size(), 2u);
  ASSERT_EQ(initiator.Ok("reg 0").size(), 1u);
  ASSERT_EQ(initiator.Command("connect " + target_name + " 5000"), "ok");
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(initiator.Command("write " + target_name + " 5000 0 0 " + t[1] + " 4096"), "ok");
  }
  std::string text;
  for (int i = 0; i < 30 && text.find("busiest: " + target_name) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(log_path);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  unlink(log_path);
  const size_t at = text.find("stats:");
  if (at != std::string::npos) std::cout << text.substr(at, text.find('\n', at) - at) << "\n";
  EXPECT_NE(text.find("stats: 1 links; READ +0 transfers"), std::string::npos) << text;
  EXPECT_NE(text.find("WRITE +3 transfers +12.0 KiB"), std::string::npos) << text;
  EXPECT_NE(text.find("busiest: " + target_name + " +12.0 KiB"), std::string::npos) << text;
}

}  // namespace
