// The rank-table link (llm_datadist_ext.h LinkRankTable) in the windows
// between its steps, opened by the test seams (rebind_window_for_test,
// link_round_window_for_test): a first link's listen-on-first-link move
// and a rank-table link never both move the listener, and a Finalize
// between a round's check and the round gives the failed link one ERROR
// line.  Clusters of one process on loopback, real engines.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cache_manager.h"
#include "datadist_access.h"
#include "error_lines.h"
#include "free_port.h"
#include "listening_probe.h"
#include "llm_datadist/llm_datadist.h"
#include "llm_datadist/llm_datadist_ext.h"
#include "rank_table.h"

namespace llm_datadist::ext {
namespace {

using adxl_test::ErrorLinesAndText;
using adxl_test::FreePort;
using adxl_test::LoopbackName;
using Clock = std::chrono::steady_clock;

// A rank table of two devices on 127.0.0.1, ranks 0 and 1: without ports
// (each derived from the comm's name), or at the ports given.
std::string Table(uint16_t p0 = 0, uint16_t p1 = 0) {
  const auto ip = [](uint16_t p) { return "127.0.0.1" + (p == 0 ? std::string() : ":" + std::to_string(p)); };
  return R"({"server_list": [{"device": [)"
         R"({"rank_id": "0", "device_ip": ")" + ip(p0) + R"("},)"
         R"({"rank_id": "1", "device_ip": ")" + ip(p1) + R"("}]}]})";
}

bool ListensSoon(const std::string &name) {
  return internal::WaitListening(name, Clock::now() + std::chrono::milliseconds(300));
}

// Cluster 1 (no listen address) links to cluster 3: its listen-on-first-link
// move has checked that it listens nowhere and started its fresh engine
// when a rank-table link of cluster 1 starts (in the window the seam opens),
// whose own rank has no port and so moves the listener to its derived port
// and then waits for cluster 2, which never comes.  One of the two moves is
// refused: the first-link move, under way, holds the listener as a move
// does, so the rank-table link is refused (LLM_EXIST_LINK) and does not move
// it; and where the cluster is recorded to listen, it listens.  (Before, the
// rank-table link moved the listener to its port and the first-link move
// then replaced it, the link waiting at a port nobody listened on.)
TEST(RankTableLink, AFirstLinksMoveAndARankTableLinkNeverBothMoveTheListener) {
  const std::string comm = "first-link-move-" + std::to_string(FreePort());
  const std::string derived = LoopbackName(static_cast<uint16_t>(internal::RankPort(comm, 0)));
  LlmDataDist a(1, LlmRole::kDecoder), c(3, LlmRole::kPrompt);
  const std::string at_c = LoopbackName(FreePort());
  ASSERT_EQ(InitializeEngine(a, "127.0.0.1", {}), LLM_SUCCESS);
  ASSERT_EQ(InitializeEngine(c, at_c, {}), LLM_SUCCESS);
  std::atomic<bool> armed{true}, linked{false};
  Status sa = LLM_SUCCESS;
  uint64_t ca = 9;
  std::thread rank_table_link;
  internal::rebind_window_for_test = [&] {
    if (!armed.exchange(false)) return;  // the rank-table link's own move, if it gets that far
    rank_table_link = std::thread([&] {
      sa = LinkRankTable(a, comm, {{1, 0}, {2, 1}}, Table(), ca);
      linked = true;
    });
    // Until it was refused or moved the listener to its port.
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (!linked && !ListensSoon(derived) && Clock::now() < until) {
    }
  };
  std::vector<Status> rets;
  const Status sb = LinkClusters(a, {{3, at_c}}, rets, 3000);
  const bool derived_listens = ListensSoon(derived);
  if (rank_table_link.joinable()) rank_table_link.join();  // ends at once, or after its 10 s deadline
  internal::rebind_window_for_test = nullptr;
  EXPECT_FALSE(armed) << "the premise: the first link moved the listener";
  EXPECT_EQ(sb, LLM_SUCCESS);
  EXPECT_EQ(sa, LLM_EXIST_LINK);
  EXPECT_EQ(ca, 0U);
  std::string listen;
  std::map<AscendString, AscendString> options;
  DataDistAccess::Listening(a, &listen, &options);
  EXPECT_TRUE(listen.empty() || ListensSoon(listen))
      << "recorded as listening at " << listen << ", where nothing listens (the first link's move replaced it)";
  EXPECT_FALSE(derived_listens && listen != derived);
  EXPECT_EQ(CheckLinkStatus(a, 3), LLM_SUCCESS);
  a.Finalize();
  c.Finalize();
}

// A Finalize that falls between a round's check that the link's Initialize
// still runs and the round's LinkClusters: the link ends LLM_FAILED with
// one ERROR line of its own ("finalized while linking"); the round's
// refusal is a WARN line, as its retries' are.
TEST(RankTableLink, AFinalizeBetweenARoundsCheckAndTheRoundIsOneErrorLine) {
  const uint16_t pa = FreePort(), pb = FreePort();
  LlmDataDist a(1, LlmRole::kPrompt), b(2, LlmRole::kDecoder);
  ASSERT_EQ(InitializeEngine(a, LoopbackName(pa), {}), LLM_SUCCESS);
  ASSERT_EQ(InitializeEngine(b, LoopbackName(pb), {}), LLM_SUCCESS);
  bool fired = false;
  link_round_window_for_test = [&] {
    if (fired) return;
    fired = true;
    a.Finalize();
  };
  uint64_t ca = 9;
  const auto r = ErrorLinesAndText(
      [&] { EXPECT_EQ(LinkRankTable(a, "finalize-in-round", {{1, 0}, {2, 1}}, Table(pa, pb), ca), LLM_FAILED); });
  link_round_window_for_test = nullptr;
  EXPECT_TRUE(fired) << "the premise: the round's window was reached";
  EXPECT_EQ(r.first, 1) << r.second;
  EXPECT_NE(r.second.find("finalized while linking"), std::string::npos) << r.second;
  EXPECT_EQ(ca, 0U);
  EXPECT_EQ(CheckLinkStatus(b, 1), LLM_NOT_YET_LINK);
  b.Finalize();
}

}  // namespace
}  // namespace llm_datadist::ext
