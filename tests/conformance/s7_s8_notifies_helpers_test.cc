// docs/contract.md §7 (notifies) and §8 (static helpers), on every lane.
#include <csignal>
#include <thread>

#include "conformance.h"

using namespace adxl;
using namespace adxl_test;

namespace {

Status Send(AdxlEngine &e, const std::string &remote, const std::string &name, const std::string &msg,
            int32_t timeout_ms = 2000) {
  return e.SendNotify(remote.c_str(), {name.c_str(), msg.c_str()}, timeout_ms);
}

// §7.1 "SendNotify: client → server over an existing link (NOT_CONNECTED
// otherwise); name and notify_msg at most 1024 bytes each (1025 is
// PARAM_INVALID); timeout <= 0 is PARAM_INVALID"
TEST_P(Conformance, S7_1_NotifyNeedsALinkAndKeepsItsLimits) {
  InitLocal();
  EXPECT_EQ(Send(engine_, peer_name_, "a", "b"), NOT_CONNECTED);
  ASSERT_EQ(Connect(), SUCCESS);
  EXPECT_EQ(Send(engine_, peer_name_, "a", "b", 0), PARAM_INVALID);
  EXPECT_EQ(Send(engine_, peer_name_, "a", "b", -3), PARAM_INVALID);
  EXPECT_EQ(Send(engine_, peer_name_, std::string(1025, 'n'), "m"), PARAM_INVALID);
  EXPECT_EQ(Send(engine_, peer_name_, "n", std::string(1025, 'm')), PARAM_INVALID);
  EXPECT_EQ(Send(engine_, peer_name_, std::string(1024, 'n'), std::string(1024, 'm')), SUCCESS);
  EXPECT_EQ(peer_->Command("notifies"), "ok 1 " + std::string(1024, 'n') + "=" + std::string(1024, 'm'));
}

// §7.2 "delivery is acknowledged and the call returns TIMEOUT when no
// acknowledgement came in time"
TEST_P(Conformance, S7_2_UnacknowledgedNotifyIsTimeout) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  peer_->Stop();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Send(engine_, peer_name_, "n", "m", 150), TIMEOUT);
  const double ms = MsSince(t0);
  EXPECT_GE(ms, 150) << "TIMEOUT before the deadline";
  EXPECT_LT(ms, 150 + ScaledMs(850));
  peer_->Signal(SIGCONT);
}

// §7.2 (continued) "A control connection that closes meanwhile is
// NOTIFY_FAILED": the receiver is stopped (no acknowledgement) and killed
// while the notify waits; the call ends with NOTIFY_FAILED when the
// connection closes, long before its 5 s deadline, not TIMEOUT.
TEST_P(Conformance, S7_2_AConnectionClosedMeanwhileIsNotifyFailed) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  peer_->Stop();
  Status st = SUCCESS;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread sender([&] { st = Send(engine_, peer_name_, "n", "m", 5000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the notify is on the wire, unanswered
  peer_->KillAndWait();
  sender.join();
  const double ms = MsSince(t0);
  EXPECT_EQ(st, NOTIFY_FAILED) << "after " << ms << " ms";
  EXPECT_LT(ms, ScaledMs(2000)) << "the closed connection did not end the notify at once";
}

// §7.3 "a receiver holding 4096 undrained notifies answers
// RESOURCE_EXHAUSTED."
TEST_P(Conformance, S7_3_AFullReceiverIsResourceExhausted) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(Send(engine_, peer_name_, "n", "m"), SUCCESS) << i;
  EXPECT_EQ(Send(engine_, peer_name_, "n", "m"), RESOURCE_EXHAUSTED);
  auto got = peer_->Ok("notifies");
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0], "4096");
  EXPECT_EQ(Send(engine_, peer_name_, "n", "m"), SUCCESS);  // room again
}

// §7.4 "Order is kept per link. GetNotifies appends everything received
// since the last call, from all clients, and clears it; a second call
// returns nothing new."
TEST_P(Conformance, S7_4_OrderIsKeptPerLinkAndGetNotifiesDrainsAllClients) {
  InitLocal();
  ASSERT_EQ(Connect(), SUCCESS);
  AdxlEngine second;
  ASSERT_EQ(second.Initialize("127.0.0.1", LaneOptions()), SUCCESS);
  ASSERT_EQ(second.Connect(peer_name_.c_str(), 5000), SUCCESS);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(Send(engine_, peer_name_, "a" + std::to_string(i), "v"), SUCCESS);
    ASSERT_EQ(Send(second, peer_name_, "b" + std::to_string(i), "v"), SUCCESS);
  }
  auto got = peer_->Ok("notifies");
  ASSERT_EQ(got.size(), 201u);
  EXPECT_EQ(got[0], "200");
  int next_a = 0, next_b = 0;
  for (size_t i = 1; i < got.size(); ++i) {
    if (got[i][0] == 'a') {
      EXPECT_EQ(got[i], "a" + std::to_string(next_a++) + "=v");
    } else {
      EXPECT_EQ(got[i], "b" + std::to_string(next_b++) + "=v");
    }
  }
  EXPECT_EQ(next_a, 100);
  EXPECT_EQ(next_b, 100);
  EXPECT_EQ(peer_->Command("notifies"), "ok 0");
  // "appends": the caller's vector is extended, not replaced.
  const std::string own = LoopbackName(FreePort());
  AdxlEngine server;
  ASSERT_EQ(server.Initialize(own.c_str(), LaneOptions()), SUCCESS);
  ASSERT_EQ(engine_.Connect(own.c_str(), 5000), SUCCESS);
  ASSERT_EQ(Send(engine_, own, "x", "1"), SUCCESS);
  std::vector<NotifyDesc> mine = {{"already", "there"}};
  ASSERT_EQ(server.GetNotifies(mine), SUCCESS);
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(std::string(mine[0].name.GetString()), "already");
  EXPECT_EQ(std::string(mine[1].name.GetString()), "x");
}

// §8.1 "GetCapability: no Initialize needed; a negative feature is
// PARAM_INVALID; AUTO_CONNECT and CLIENT_SERVER_COMM report supported; any
// other non-negative value reports FEATURE_NOT_SUPPORTED."
TEST_P(Conformance, S8_1_GetCapability) {
  int32_t v = -1;
  EXPECT_EQ(AdxlEngine::GetCapability(AUTO_CONNECT, v), SUCCESS);
  EXPECT_EQ(v, FEATURE_SUPPORTED);
  EXPECT_EQ(AdxlEngine::GetCapability(CLIENT_SERVER_COMM, v), SUCCESS);
  EXPECT_EQ(v, FEATURE_SUPPORTED);
  EXPECT_EQ(AdxlEngine::GetCapability(static_cast<FeatureType>(2), v), SUCCESS);
  EXPECT_EQ(v, FEATURE_NOT_SUPPORTED);
  EXPECT_EQ(AdxlEngine::GetCapability(static_cast<FeatureType>(12345), v), SUCCESS);
  EXPECT_EQ(v, FEATURE_NOT_SUPPORTED);
  EXPECT_EQ(AdxlEngine::GetCapability(static_cast<FeatureType>(-1), v), PARAM_INVALID);
}

// §8.2 "MallocMem(type, size, &ptr): size == 0 or ptr == nullptr is
// PARAM_INVALID. Host memory ... is shareable with peers on the same node."
TEST_P(Conformance, S8_2_MallocMemChecksItsArgumentsAndItsMemoryMoves) {
  void *p = nullptr;
  EXPECT_EQ(AdxlEngine::MallocMem(MEM_HOST, 0, &p), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::MallocMem(MEM_HOST, 4096, nullptr), PARAM_INVALID);
  ASSERT_EQ(AdxlEngine::MallocMem(MEM_HOST, 1 << 20, &p), SUCCESS);
  ASSERT_NE(p, nullptr);
  InitLocal();
  MemHandle h = nullptr;
  ASSERT_EQ(engine_.RegisterMem({reinterpret_cast<uintptr_t>(p), 1 << 20}, MEM_HOST, h), SUCCESS);
  ASSERT_EQ(Connect(), SUCCESS);
  ASSERT_EQ(Sync(READ, {{reinterpret_cast<uintptr_t>(p), remote_, 1 << 20}}), SUCCESS);
  EXPECT_EQ(Hash(p, 1 << 20), PatternHash(1, 0, 1 << 20));
  ASSERT_EQ(engine_.DeregisterMem(h), SUCCESS);
  EXPECT_EQ(AdxlEngine::FreeMem(p), SUCCESS);
}

// §8.3 "ExportToShareableHandle(addr, &h) works only for the exact start of
// a live MallocMem block (else PARAM_INVALID), and returns the same handle
// every time."
TEST_P(Conformance, S8_3_ExportWorksOnlyForTheStartOfALiveBlock) {
  void *p = nullptr;
  ASSERT_EQ(AdxlEngine::MallocMem(MEM_HOST, 1 << 16, &p), SUCCESS);
  ShareableHandle a{}, b{};
  ASSERT_EQ(AdxlEngine::ExportToShareableHandle(p, a), SUCCESS);
  ASSERT_EQ(AdxlEngine::ExportToShareableHandle(p, b), SUCCESS);
  EXPECT_EQ(memcmp(&a, &b, sizeof(a)), 0);
  EXPECT_EQ(AdxlEngine::ExportToShareableHandle(static_cast<uint8_t *>(p) + 4096, b), PARAM_INVALID);
  int x = 0;
  EXPECT_EQ(AdxlEngine::ExportToShareableHandle(&x, b), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::FreeMem(p), SUCCESS);
  EXPECT_EQ(AdxlEngine::ExportToShareableHandle(p, b), PARAM_INVALID);
}

// §8.4 "FreeMem releases; using the pointer afterwards is PARAM_INVALID for
// these helpers."
TEST_P(Conformance, S8_4_AfterFreeMemThePointerIsParamInvalid) {
  void *p = nullptr;
  ASSERT_EQ(AdxlEngine::MallocMem(MEM_HOST, 1 << 16, &p), SUCCESS);
  EXPECT_EQ(AdxlEngine::FreeMem(p), SUCCESS);
  EXPECT_EQ(AdxlEngine::FreeMem(p), PARAM_INVALID);
  int x = 0;
  EXPECT_EQ(AdxlEngine::FreeMem(&x), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::FreeMem(nullptr), PARAM_INVALID);
}

}  // namespace
