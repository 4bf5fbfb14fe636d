// Liveness that never drops a live peer, with real processes:
// engines of different heartbeat periods keep their links, and a peer that
// does not run for a while (stopped, as a CPU-starved one) is not declared
// dead before the timeout it was given, yet is after it.
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "adxl/adxl_engine.h"
#include "free_port.h"
#include "mp_fixture.h"
#include "peer_process.h"

using namespace adxl;
using namespace adxl_test;

namespace {

constexpr size_t kLen = 64 << 10;

struct Target {
  AlignedBuffer buf{kLen};
  AdxlEngine engine;
  MemHandle h = nullptr;
  std::string name;
  bool Start(const std::map<AscendString, AscendString> &opts) {
    name = LoopbackName(FreePort());
    return engine.Initialize(name.c_str(), opts) == SUCCESS &&
           engine.RegisterMem({buf.addr(), kLen}, MEM_HOST, h) == SUCCESS;
  }
  std::string WriteCommand() const {
    return "write " + name + " 2000 0 0 " + std::to_string(buf.addr()) + " " + std::to_string(kLen);
  }
};

std::unique_ptr<PeerProcess> Client(const std::string &args) {
  auto p = std::make_unique<PeerProcess>();
  if (p->Command("init 127.0.0.1 " + args) != "ok" || p->Ok("alloc " + std::to_string(kLen)).size() != 2 ||
      p->Ok("reg 0").size() != 1) {
    return nullptr;
  }
  return p;
}

// A target pinging every 200 ms (dead after 600 ms) and a client pinging
// every 1000 ms: the target judges the client by the client's own period
// (its Hello says it), so the link lives through many of the target's
// periods.  Before, the faster side dropped the slower one as silent.
TEST(LivenessTest, EnginesOfDifferentPeriodsKeepTheirLink) {
  Target t;
  ASSERT_TRUE(t.Start({{"adxl.HeartbeatMs", "200"}}));
  auto client = Client("adxl.HeartbeatMs=1000");
  ASSERT_TRUE(client);
  ASSERT_EQ(client->Command("connect " + t.name + " 5000"), "ok");
  ASSERT_EQ(client->Command(t.WriteCommand()), "ok");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // 12 of the target's periods
  EXPECT_EQ(client->Command(t.WriteCommand()), "ok") << "the 200 ms engine dropped the 1000 ms one";
  EXPECT_EQ(client->FinalizeAndExit(), 0);
}

// A client that does not run for 1.5 s (SIGSTOP: as a process starved of
// CPU) with a 5 s timeout keeps its link; stopped past its timeout, the
// target forgets it (a later transfer of the client fails, it must
// reconnect).
TEST(LivenessTest, AStoppedPeerIsDeadOnlyAfterItsTimeout) {
  Target t;
  ASSERT_TRUE(t.Start({{"adxl.HeartbeatMs", "200"}}));
  auto client = Client("adxl.HeartbeatMs=200 adxl.HeartbeatTimeoutMs=2500");
  ASSERT_TRUE(client);
  ASSERT_EQ(client->Command("connect " + t.name + " 5000"), "ok");
  client->Stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  client->Signal(SIGCONT);
  EXPECT_EQ(client->Command(t.WriteCommand()), "ok") << "a peer stopped for less than its timeout was dropped";
  client->Stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500 + 2000));
  client->Signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // it reads the closed connection
  EXPECT_NE(client->Command(t.WriteCommand()), "ok") << "a peer stopped past its timeout was kept";
  EXPECT_EQ(client->FinalizeAndExit(), 0);
}

}  // namespace
