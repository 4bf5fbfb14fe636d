// The rank-table link (llm_datadist_ext.h LinkRankTable / UnlinkComm /
// QueryRegisterMemStatus; rank_table.h): the ports derived from comm_name
// are the Python package's (zlib.crc32, values computed with
// python3 -c 'import zlib; print(zlib.crc32(b"link"))'), the rank table's
// engine names, each refusal a status and one ERROR line, and two clusters
// of one process linked through a rank table, each on its own thread as
// two participants would be, a cache pulled over the link.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "adxl/adxl_engine.h"
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

using adxl_test::ErrorLines;
using adxl_test::FreePort;
using adxl_test::LoopbackName;
using internal::RankEngine;
using Ranks = std::vector<std::pair<uint64_t, uint32_t>>;

// Captures stderr around f(): (number of ERROR lines, the text).
template <typename F>
std::pair<int, std::string> Refusal(F f) {
  return adxl_test::ErrorLinesAndText(f);
}

// A rank table of two devices on 127.0.0.1, ranks 0 and 1, device_ip as given.
std::string Table(const std::string &ip0, const std::string &ip1) {
  return R"({"server_count": "1", "version": "1.2", "server_list": [{"device": [)"
         R"({"device_id": "0", "device_ip": ")" + ip0 + R"(", "rank_id": "0"},)"
         R"({"device_id": "1", "device_ip": ")" + ip1 + R"(", "rank_id": "1"}]}]})";
}

TEST(RankTable, Crc32IsZlibs) {
  EXPECT_EQ(internal::Crc32(""), 0U);
  EXPECT_EQ(internal::Crc32("link"), 917281265U);
  EXPECT_EQ(internal::Crc32("pd"), 607768136U);
  EXPECT_EQ(internal::Crc32("c"), 112844655U);
  EXPECT_EQ(internal::Crc32("comm"), 2819359715U);
  EXPECT_EQ(internal::Crc32("vllm-0"), 125284280U);
}

TEST(RankTable, DerivedPortsAreThePythonPackages) {
  // 12000 + 4 * (zlib.crc32(name) % 2000) + place
  EXPECT_EQ(internal::RankPort("link", 0), 17060U);
  EXPECT_EQ(internal::RankPort("link", 1), 17061U);
  EXPECT_EQ(internal::RankPort("pd", 0), 12544U);
  EXPECT_EQ(internal::RankPort("comm", 3), 18863U);
  EXPECT_EQ(internal::RankPort("", 0), 12000U);
}

TEST(RankTable, EngineNames) {
  const std::string table = R"({"server_list": [{"device": [)"
                            R"({"rank_id": "0", "device_ip": "10.0.0.1"},)"
                            R"({"rank_id": 1, "device_ip": "10.0.0.2", "device_port": 26001},)"
                            R"({"rank_id": " 2 ", "device_ip": "10.0.0.3:26002"},)"
                            R"({"rank_id": 3, "device_ip": "fe80::1"},)"
                            R"({"rank_id": 4, "device_ip": "fe80::2", "port": "26004"},)"
                            R"({"rank_id": 5, "device_ip": "[fe80::3]:26005"}]}]})";
  std::map<int64_t, RankEngine> e;
  ASSERT_EQ(internal::ParseRankTable("test", table, "link", {0, 3}, &e), LLM_SUCCESS);
  ASSERT_EQ(e.size(), 6U);
  EXPECT_EQ(e[0].engine, "10.0.0.1:17060");
  EXPECT_FALSE(e[0].port_given);
  EXPECT_EQ(e[1].engine, "10.0.0.2:26001");
  EXPECT_TRUE(e[1].port_given);
  EXPECT_EQ(e[2].engine, "10.0.0.3:26002");
  EXPECT_TRUE(e[2].port_given);
  EXPECT_EQ(e[3].engine, "[fe80::1]:17061");  // place 1 among the ranks {0, 3}
  EXPECT_FALSE(e[3].port_given);
  EXPECT_EQ(e[4].engine, "[fe80::2]:26004");
  EXPECT_EQ(e[5].engine, "[fe80::3]:26005");
}

TEST(RankTable, BadTablesAreAStatusAndOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{not json", "server_list[].device[]"},
      {R"({"version": "1.0"})", "server_list[].device[]"},
      {R"({"server_list": [{"devices": []}]})", "server_list[].device[]"},
      {R"({"server_list": [{"device": [{"rank_id": "0"}]}]})", "no device_ip"},
      {R"({"server_list": [{"device": [{"device_ip": "127.0.0.1"}]}]})", "no rank_id"},
      {R"({"server_list": [{"device": [7]}]})", "no rank_id and no device_ip"},
      {R"({"server_list": [{"device": [{"rank_id": "one", "device_ip": "127.0.0.1"}]}]})", "not a number"},
      // Beyond int64_t: no rank (its conversion would be undefined).
      {R"({"server_list": [{"device": [{"rank_id": 1e30, "device_ip": "127.0.0.1"}]}]})", "not a number"},
      {R"({"server_list": [{"device": [{"rank_id": -1e19, "device_ip": "127.0.0.1"}]}]})", "not a number"},
      // A port no peer can listen on: refused here, not after the link's deadline.
      {R"({"server_list": [{"device": [{"rank_id": 3, "device_ip": "127.0.0.1", "device_port": 0}]}]})",
       "(rank_id 3): device_port must be a port, 1 to 65535 (it is 0)"},
      {R"({"server_list": [{"device": [{"rank_id": 3, "device_ip": "127.0.0.1", "device_port": 65536}]}]})",
       "device_port must be a port, 1 to 65535 (it is 65536)"},
      {R"({"server_list": [{"device": [{"rank_id": 3, "device_ip": "127.0.0.1", "device_port": -1}]}]})",
       "device_port must be a port"},
      {R"({"server_list": [{"device": [{"rank_id": 3, "device_ip": "127.0.0.1", "device_port": "abc"}]}]})",
       "device_port must be a port"},
      {R"({"server_list": [{"device": [{"rank_id": 3, "device_ip": "127.0.0.1", "device_port": "99999"}]}]})",
       "device_port must be a port"},
      {R"({"server_list": [{"device": [{"rank_id": 3, "device_ip": "127.0.0.1", "device_port": 8000.5}]}]})",
       "device_port must be a port"},
      {R"({"server_list": [{"device": [{"rank_id": 3, "device_ip": "127.0.0.1", "port": "80 0"}]}]})",
       "(rank_id 3): port must be a port"},
  };
  for (const auto &c : cases) {
    std::map<int64_t, RankEngine> e;
    const auto r = Refusal([&] { EXPECT_EQ(internal::ParseRankTable("test", c.first, "c", {0, 1}, &e), LLM_PARAM_INVALID); });
    EXPECT_EQ(r.first, 1) << c.first << "\n" << r.second;
    EXPECT_NE(r.second.find(c.second), std::string::npos) << c.first << "\n" << r.second;
  }
}

TEST(RankTableLink, BadInputIsAStatusAndOneLineAndNothingIsLinked) {
  LlmDataDist dd(1, LlmRole::kDecoder);
  uint64_t comm = 7;
  const std::string good = Table("127.0.0.1", "127.0.0.1");
  // Not initialized.
  auto r = Refusal([&] { EXPECT_EQ(LinkRankTable(dd, "c", {{1, 0}, {2, 1}}, good, comm), LLM_FAILED); });
  EXPECT_EQ(r.first, 1) << r.second;
  EXPECT_EQ(comm, 0U);
  ASSERT_EQ(InitializeEngine(dd, "127.0.0.1", {}), LLM_SUCCESS);  // client only, as vLLM-Ascend's
  const std::vector<std::tuple<std::string, Ranks, std::string, std::string>> cases = {
      {"", {{1, 0}, {2, 1}}, good, "comm_name"},
      {std::string(128, 'x'), {{1, 0}, {2, 1}}, good, "comm_name"},
      {"c", {{1, 0}}, good, "2 to 4 clusters"},
      {"c", {{1, 0}, {2, 1}, {3, 2}, {4, 3}, {5, 4}}, good, "2 to 4 clusters"},
      {"c", {{1, 1}, {2, 0}}, good, "ordered and distinct"},
      {"c", {{1, 0}, {2, 0}}, good, "ordered and distinct"},
      {"c", {{1, 0}, {1, 1}}, good, "cluster 1 twice"},
      {"c", {{3, 0}, {2, 1}}, good, "this cluster (1)"},
      {"c", {{1, 0}, {2, 1}}, "{not json", "rank_table"},
      {"c", {{1, 0}, {2, 7}}, good, "rank_id 7 (cluster 2)"},
      {"c", {{1, 5}, {2, 7}}, good, "rank_id 5 (this cluster, 1)"},
  };
  for (const auto &c : cases) {
    r = Refusal([&] {
      EXPECT_EQ(LinkRankTable(dd, std::get<0>(c), std::get<1>(c), std::get<2>(c), comm), LLM_PARAM_INVALID);
    });
    EXPECT_EQ(r.first, 1) << std::get<3>(c) << "\n" << r.second;
    EXPECT_NE(r.second.find(std::get<3>(c)), std::string::npos) << r.second;
    EXPECT_EQ(comm, 0U);
  }
  EXPECT_EQ(CheckLinkStatus(dd, 2), LLM_NOT_YET_LINK);
  r = Refusal([&] { EXPECT_EQ(UnlinkComm(dd, 12345), LLM_PARAM_INVALID); });
  EXPECT_EQ(r.first, 1) << r.second;
  EXPECT_NE(r.second.find("12345"), std::string::npos) << r.second;
  r = Refusal([&] { EXPECT_EQ(QueryRegisterMemStatus(dd, 12345), LLM_PARAM_INVALID); });
  EXPECT_EQ(r.first, 1) << r.second;
  EXPECT_NE(r.second.find("12345"), std::string::npos) << r.second;
}

// A device_port that is no port is refused before any wait: at once (the
// link would otherwise wait 10 s for a listener on it), one line naming the
// device, nothing linked.
TEST(RankTableLink, ABadDevicePortIsRefusedAtOnce) {
  LlmDataDist dd(1, LlmRole::kDecoder);
  ASSERT_EQ(InitializeEngine(dd, "127.0.0.1", {}), LLM_SUCCESS);
  for (const std::string port : {"0", "70000", R"("x1")"}) {
    const std::string table = R"({"server_list": [{"device": [)"
                              R"({"rank_id": 0, "device_ip": "127.0.0.1:)" + std::to_string(FreePort()) + R"("},)"
                              R"({"rank_id": 1, "device_ip": "127.0.0.1", "device_port": )" + port + "}]}]}";
    uint64_t comm = 9;
    const auto start = std::chrono::steady_clock::now();
    const auto r = Refusal(
        [&] { EXPECT_EQ(LinkRankTable(dd, "bad-port", {{1, 0}, {2, 1}}, table, comm), LLM_PARAM_INVALID); });
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(ms, 500) << port;
    EXPECT_EQ(r.first, 1) << r.second;
    EXPECT_NE(r.second.find("(rank_id 1): device_port must be a port, 1 to 65535 (it is " + port + ")"),
              std::string::npos)
        << r.second;
    EXPECT_EQ(comm, 0U);
  }
  EXPECT_EQ(CheckLinkStatus(dd, 2), LLM_NOT_YET_LINK);
  dd.Finalize();
}

// One int32 tensor of 2 x 16; `seed` 0: zeros.
struct Rows {
  explicit Rows(int32_t seed) : data(32) {
    for (int i = 0; i < 32; ++i) data[i] = seed == 0 ? 0 : seed + i;
  }
  CacheDesc desc() const {
    CacheDesc d;
    d.num_tensors = 1;
    d.shape = {2, 16};
    d.data_type = DataType::DT_INT32;
    d.placement = Placement::HOST;
    return d;
  }
  std::vector<uintptr_t> addrs() { return {reinterpret_cast<uintptr_t>(data.data())}; }
  std::vector<int32_t> data;
};

// Both call LinkRankTable at once, as two participants do; each gets its comm id.
void LinkBoth(LlmDataDist &a, LlmDataDist &b, const std::string &comm_name, const std::string &table, uint64_t *ca,
              uint64_t *cb) {
  Status sa = LLM_FAILED, sb = LLM_FAILED;
  std::thread t([&] { sb = LinkRankTable(b, comm_name, {{1, 0}, {2, 1}}, table, *cb); });
  sa = LinkRankTable(a, comm_name, {{1, 0}, {2, 1}}, table, *ca);
  t.join();
  ASSERT_EQ(sa, LLM_SUCCESS);
  ASSERT_EQ(sb, LLM_SUCCESS);
}

// A pull 2 <- 1 over the comm's links, every byte checked.
void PullOver(LlmDataDist &holder, LlmDataDist &puller) {
  Rows src(41), dst(0);
  Cache sc, dc;
  ASSERT_EQ(RegisterCache(holder, src.desc(), src.addrs(), {}, true, sc), LLM_SUCCESS);
  ASSERT_EQ(RegisterCache(puller, dst.desc(), dst.addrs(), {}, std::nullopt, dc), LLM_SUCCESS);
  Cache d;
  d.cache_id = dc.cache_id;
  ASSERT_EQ(PullCache(puller, CacheKeyByIdAndIndex{1, sc.cache_id, 1}, d), LLM_SUCCESS);
  EXPECT_EQ(std::memcmp(dst.data.data(), src.data.data() + 16, 16 * sizeof(int32_t)), 0);
  EXPECT_EQ(holder.UnregisterKvCache(sc.cache_id), LLM_SUCCESS);
  EXPECT_EQ(puller.UnregisterKvCache(dc.cache_id), LLM_SUCCESS);
}

// The vendor's rank tables: device_ip without a port, no listen address at
// Initialize: each cluster moves its listener to the derived port and links
// to the other; unlink drops the links, finalize, initialize the same two
// objects again and link again (comm ids from 1 again, the listener moved
// again).
TEST(RankTableLink, TwoClustersWithoutListenAddressesLinkOnTheDerivedPorts) {
  const std::string comm_name = "rank-table-link-test-" + std::to_string(FreePort());
  const std::string table = Table("127.0.0.1", "127.0.0.1");
  // A second comm whose derived port is not the first's: one name in
  // kRankPortSlots shares its slot, and linking it would find the peer at
  // the port already linked (LLM_ALREADY_LINK) instead of moving the listener.
  std::string other = comm_name + "-other";
  while (internal::RankPort(other, 0) == internal::RankPort(comm_name, 0)) other += "+";
  LlmDataDist a(1, LlmRole::kPrompt), b(2, LlmRole::kDecoder);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_EQ(InitializeEngine(a, "127.0.0.1", {}), LLM_SUCCESS);
    ASSERT_EQ(InitializeEngine(b, "127.0.0.1", {}), LLM_SUCCESS);
    uint64_t ca = 0, cb = 0;
    ASSERT_NO_FATAL_FAILURE(LinkBoth(a, b, comm_name, table, &ca, &cb));
    EXPECT_EQ(ca, 1U);  // numbered from 1 again after Finalize
    EXPECT_EQ(cb, 1U);
    EXPECT_EQ(QueryRegisterMemStatus(a, ca), LLM_SUCCESS);
    EXPECT_EQ(CheckLinkStatus(a, 2), LLM_SUCCESS);
    EXPECT_EQ(CheckLinkStatus(b, 1), LLM_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(PullOver(a, b));
    // Linked: the listener cannot move any more (one line naming the link).
    const auto r = Refusal([&] {
      uint64_t c = 0;
      EXPECT_EQ(LinkRankTable(a, other, {{1, 0}, {2, 1}}, table, c), LLM_EXIST_LINK);
    });
    EXPECT_EQ(r.first, 1) << r.second;
    EXPECT_NE(r.second.find("link('" + other + "'): listening at 127.0.0.1:"), std::string::npos)
        << r.second;
    EXPECT_EQ(UnlinkComm(a, ca), LLM_SUCCESS);
    EXPECT_EQ(UnlinkComm(b, cb), LLM_SUCCESS);
    EXPECT_EQ(CheckLinkStatus(a, 2), LLM_NOT_YET_LINK);
    EXPECT_EQ(CheckLinkStatus(b, 1), LLM_NOT_YET_LINK);
    EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(UnlinkComm(a, ca), LLM_PARAM_INVALID); }), 1);
    EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(QueryRegisterMemStatus(a, ca), LLM_PARAM_INVALID); }), 1);
    a.Finalize();
    b.Finalize();
  }
}

// Ports in the rank table ("ip:port", device_port): clusters that listen
// there already are not moved.
TEST(RankTableLink, PortsInTheTableAreUsedAsGiven) {
  const uint16_t pa = FreePort(), pb = FreePort();
  LlmDataDist a(1, LlmRole::kPrompt), b(2, LlmRole::kDecoder);
  ASSERT_EQ(InitializeEngine(a, LoopbackName(pa), {}), LLM_SUCCESS);
  ASSERT_EQ(InitializeEngine(b, LoopbackName(pb), {}), LLM_SUCCESS);
  const std::string table = R"({"server_list": [{"device": [)"
                            R"({"rank_id": "0", "device_ip": "127.0.0.1:)" + std::to_string(pa) + R"("},)"
                            R"({"rank_id": "1", "device_ip": "127.0.0.1", "device_port": )" + std::to_string(pb) +
                            "}]}]}";
  uint64_t ca = 0, cb = 0;
  ASSERT_NO_FATAL_FAILURE(LinkBoth(a, b, "given-ports", table, &ca, &cb));
  ASSERT_NO_FATAL_FAILURE(PullOver(a, b));
  EXPECT_EQ(UnlinkComm(b, cb), LLM_SUCCESS);
  EXPECT_EQ(UnlinkComm(a, ca), LLM_SUCCESS);
  a.Finalize();
  b.Finalize();
}

// A participant that never comes: after the 10 s deadline each side gets
// LLM_LINK_FAILED, no comm id, and the link it made to the other is undone;
// one ERROR line each (nothing connects to the one that never listened).
TEST(RankTableLink, AParticipantThatNeverListensFailsTheLinkAndUndoesTheOthers) {
  const uint16_t pa = FreePort(), pb = FreePort(), nobody = FreePort();
  LlmDataDist a(1, LlmRole::kPrompt), b(2, LlmRole::kDecoder);
  ASSERT_EQ(InitializeEngine(a, LoopbackName(pa), {}), LLM_SUCCESS);
  ASSERT_EQ(InitializeEngine(b, LoopbackName(pb), {}), LLM_SUCCESS);
  std::string table = R"({"server_list": [{"device": [)";
  const uint16_t ports[] = {pa, pb, nobody};
  for (int r = 0; r < 3; ++r) {
    table += std::string(r == 0 ? "" : ",") + R"({"rank_id": )" + std::to_string(r) + R"(, "device_ip": "127.0.0.1:)" +
             std::to_string(ports[r]) + R"("})";
  }
  table += "]}]}";
  const Ranks ranks = {{1, 0}, {2, 1}, {3, 2}};
  uint64_t ca = 9, cb = 9;
  Status sa = LLM_SUCCESS, sb = LLM_SUCCESS;
  const auto start = std::chrono::steady_clock::now();
  const auto r = Refusal([&] {
    std::thread t([&] { sb = LinkRankTable(b, "nobody-comes", ranks, table, cb); });
    sa = LinkRankTable(a, "nobody-comes", ranks, table, ca);
    t.join();
  });
  EXPECT_EQ(r.first, 2) << r.second;
  EXPECT_NE(r.second.find("cluster 3 at 127.0.0.1:" + std::to_string(nobody) + " among them, not listening"),
            std::string::npos)
      << r.second;
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(sa, LLM_LINK_FAILED);
  EXPECT_EQ(sb, LLM_LINK_FAILED);
  EXPECT_EQ(ca, 0U);
  EXPECT_EQ(cb, 0U);
  EXPECT_EQ(CheckLinkStatus(a, 2), LLM_NOT_YET_LINK);
  EXPECT_EQ(CheckLinkStatus(b, 1), LLM_NOT_YET_LINK);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(UnlinkComm(a, 1), LLM_PARAM_INVALID); }), 1);
  a.Finalize();
  b.Finalize();
}


// Two links of one cluster at once, to different comms: the first moves the
// listener to its derived port and waits there for its peer; the second,
// whose comm derives another port, is refused at once (LLM_EXIST_LINK, one
// line) instead of moving the listener from under the first, whose peer
// then links to it where it expects it.
TEST(RankTableLink, ASecondLinkCannotMoveTheListenerAFirstLinkWaitsOn) {
  const std::string x = "held-listener-" + std::to_string(FreePort());
  std::string y = x + "-y";
  while (internal::RankPort(y, 0) == internal::RankPort(x, 0)) y += "+";
  const std::string table = Table("127.0.0.1", "127.0.0.1");
  LlmDataDist a(1, LlmRole::kPrompt), b(2, LlmRole::kDecoder);
  ASSERT_EQ(InitializeEngine(a, "127.0.0.1", {}), LLM_SUCCESS);
  ASSERT_EQ(InitializeEngine(b, "127.0.0.1", {}), LLM_SUCCESS);
  uint64_t ca = 0, cb = 0;
  Status sa = LLM_FAILED;
  std::thread t([&] { sa = LinkRankTable(a, x, {{1, 0}, {2, 1}}, table, ca); });
  // a listens at x's port and waits for b (up to 10 s).
  ASSERT_TRUE(internal::WaitListening(LoopbackName(static_cast<uint16_t>(internal::RankPort(x, 0))),
                                      std::chrono::steady_clock::now() + std::chrono::seconds(5)));
  const auto start = std::chrono::steady_clock::now();
  const auto r = Refusal([&] {
    uint64_t c = 9;
    EXPECT_EQ(LinkRankTable(a, y, {{1, 0}, {3, 1}}, table, c), LLM_EXIST_LINK);
    EXPECT_EQ(c, 0U);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(r.first, 1) << r.second;
  // (The move may still be finishing: refused as a move under way then.)
  EXPECT_NE(r.second.find("link('" + y + "'): "), std::string::npos) << r.second;
  EXPECT_EQ(LinkRankTable(b, x, {{1, 0}, {2, 1}}, table, cb), LLM_SUCCESS);
  t.join();
  EXPECT_EQ(sa, LLM_SUCCESS);
  EXPECT_EQ(CheckLinkStatus(a, 2), LLM_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PullOver(a, b));
  EXPECT_EQ(UnlinkComm(a, ca), LLM_SUCCESS);
  EXPECT_EQ(UnlinkComm(b, cb), LLM_SUCCESS);
  a.Finalize();
  b.Finalize();
}

// A listener move (MoveListener, as LinkRankTable's and SetRole's) whose
// fresh engine starts across a Finalize and a new Initialize ends
// LLM_FAILED with one line and leaves the new instance's engine alone: it
// listens where its own Initialize put it, and nothing at the move's address.
TEST(RankTableLink, AMoveAcrossFinalizeAndInitializeLeavesTheNewInstancesListener) {
  const std::string old_name = LoopbackName(FreePort()), moved = LoopbackName(FreePort()),
                    fresh = LoopbackName(FreePort());
  LlmDataDist a(1, LlmRole::kPrompt);
  ASSERT_EQ(InitializeEngine(a, old_name, {}), LLM_SUCCESS);
  Status again = LLM_FAILED;
  internal::rebind_window_for_test = [&] {
    a.Finalize();
    again = InitializeEngine(a, fresh, {});
  };
  const auto r = Refusal([&] { EXPECT_EQ(MoveListener(a, moved, {}), LLM_FAILED); });
  internal::rebind_window_for_test = nullptr;
  ASSERT_EQ(again, LLM_SUCCESS);
  EXPECT_EQ(r.first, 1) << r.second;
  std::string listen;
  std::map<AscendString, AscendString> options;
  DataDistAccess::Listening(a, &listen, &options);
  EXPECT_EQ(listen, fresh);
  const auto soon = [] { return std::chrono::steady_clock::now() + std::chrono::milliseconds(300); };
  EXPECT_TRUE(internal::WaitListening(fresh, soon()));
  EXPECT_FALSE(internal::WaitListening(moved, soon()));
  // The new instance's engine works: a peer links to it at its address.
  LlmDataDist b(2, LlmRole::kDecoder);
  ASSERT_EQ(InitializeEngine(b, "127.0.0.1", {}), LLM_SUCCESS);
  std::vector<Status> rets;
  EXPECT_EQ(LinkClusters(b, {{1, fresh}}, rets, 3000), LLM_SUCCESS);
  b.Finalize();
  a.Finalize();
}

// A failed rank-table link undoes only what it made: the link B made to A
// before, with its own LinkClusters, stays on both sides (A still counts it:
// SetRole is refused; B still pulls over it).
TEST(RankTableLink, AFailedLinkKeepsAnEarlierLinkThePeerMadeToThisCluster) {
  const uint16_t pa = FreePort(), pb = FreePort(), nobody = FreePort();
  LlmDataDist a(1, LlmRole::kPrompt), b(2, LlmRole::kDecoder);
  ASSERT_EQ(InitializeEngine(a, LoopbackName(pa), {}), LLM_SUCCESS);
  ASSERT_EQ(InitializeEngine(b, LoopbackName(pb), {}), LLM_SUCCESS);
  std::vector<Status> rets;
  ASSERT_EQ(LinkClusters(b, {{1, LoopbackName(pa)}}, rets, 3000), LLM_SUCCESS);
  std::string table = R"({"server_list": [{"device": [)";
  const uint16_t ports[] = {pa, pb, nobody};
  for (int r = 0; r < 3; ++r) {
    table += std::string(r == 0 ? "" : ",") + R"({"rank_id": )" + std::to_string(r) + R"(, "device_ip": "127.0.0.1:)" +
             std::to_string(ports[r]) + R"("})";
  }
  table += "]}]}";
  uint64_t ca = 9;
  EXPECT_EQ(ErrorLines([&] {
              EXPECT_EQ(LinkRankTable(a, "keeps-b", {{1, 0}, {2, 1}, {3, 2}}, table, ca), LLM_LINK_FAILED);
            }),
            1);
  EXPECT_EQ(ca, 0U);
  EXPECT_EQ(CheckLinkStatus(a, 2), LLM_NOT_YET_LINK);  // a's own link to b is undone
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(a.SetRole(LlmRole::kDecoder, {}), LLM_EXIST_LINK); }), 1);
  EXPECT_EQ(CheckLinkStatus(b, 1), LLM_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PullOver(a, b));
  EXPECT_EQ(UnlinkClusters(b, {{1, LoopbackName(pa)}}, rets, 3000, false), LLM_SUCCESS);
  b.Finalize();
  a.Finalize();
}

// A peer that listens but never answers as a cache layer (an engine with no
// cache table) is retried until the deadline: the retries write WARN lines,
// the failed link one ERROR line.
TEST(RankTableLink, RetriesOfAPeerThatNeverAnswersWriteNoErrorLines) {
  const uint16_t pa = FreePort(), pc = FreePort();
  LlmDataDist a(1, LlmRole::kPrompt);
  ASSERT_EQ(InitializeEngine(a, LoopbackName(pa), {}), LLM_SUCCESS);
  adxl::AdxlEngine c;
  ASSERT_EQ(c.Initialize(LoopbackName(pc).c_str(), {}), adxl::SUCCESS);
  const std::string table = R"({"server_list": [{"device": [)"
                            R"({"rank_id": 0, "device_ip": "127.0.0.1:)" + std::to_string(pa) + R"("},)"
                            R"({"rank_id": 1, "device_ip": "127.0.0.1:)" + std::to_string(pc) + R"("}]}]})";
  uint64_t ca = 9;
  const auto r = Refusal(
      [&] { EXPECT_EQ(LinkRankTable(a, "no-cache-layer", {{1, 0}, {3, 1}}, table, ca), LLM_LINK_FAILED); });
  EXPECT_EQ(r.first, 1) << r.second;
  EXPECT_NE(r.second.find("publishes no cache-layer metadata"), std::string::npos) << r.second;  // as WARN
  EXPECT_EQ(ca, 0U);
  a.Finalize();
  c.Finalize();
}

// A link that waits for a peer across a Finalize and a new Initialize of its
// own cluster ends LLM_FAILED: it links nothing in the new instance and
// records no comm there (it did both before the instance check).
TEST(RankTableLink, ALinkThatWaitedAcrossFinalizeAndInitializeLinksNothingInTheNewInstance) {
  const uint16_t pa = FreePort(), pb = FreePort();
  LlmDataDist a(1, LlmRole::kPrompt), b(2, LlmRole::kDecoder);
  ASSERT_EQ(InitializeEngine(a, LoopbackName(pa), {}), LLM_SUCCESS);
  const std::string table = R"({"server_list": [{"device": [)"
                            R"({"rank_id": 0, "device_ip": "127.0.0.1:)" + std::to_string(pa) + R"("},)"
                            R"({"rank_id": 1, "device_ip": "127.0.0.1:)" + std::to_string(pb) + R"("}]}]})";
  uint64_t ca = 9;
  Status sa = LLM_SUCCESS;
  std::thread t([&] { sa = LinkRankTable(a, "across-finalize", {{1, 0}, {2, 1}}, table, ca); });
  // The link waits for b's listener (up to 10 s); meanwhile a starts again.
  // (Were the thread to start only after that, it would link and this fail.)
  std::this_thread::sleep_for(std::chrono::seconds(1));
  a.Finalize();
  ASSERT_EQ(InitializeEngine(a, LoopbackName(FreePort()), {}), LLM_SUCCESS);
  ASSERT_EQ(InitializeEngine(b, LoopbackName(pb), {}), LLM_SUCCESS);
  t.join();
  EXPECT_EQ(sa, LLM_FAILED);
  EXPECT_EQ(ca, 0U);
  EXPECT_EQ(CheckLinkStatus(a, 2), LLM_NOT_YET_LINK);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(QueryRegisterMemStatus(a, 1), LLM_PARAM_INVALID); }), 1);
  a.Finalize();
  b.Finalize();
}

}  // namespace
}  // namespace llm_datadist::ext
