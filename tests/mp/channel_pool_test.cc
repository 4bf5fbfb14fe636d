// docs/contract.md §5.10 (the channel pool, GlobalResourceConfig
// channel_pool.*) §5.11 (the inbound cap, adxl.MaxInboundPeers), with
// real peer processes: max_channel = 32 with 64 peers.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"
#include "pattern.h"
#include "peer_process.h"

using namespace adxl_test;

namespace {

constexpr size_t kLen = 65536;

struct Peer {
  std::unique_ptr<PeerProcess> proc;
  std::string name;
  uintptr_t remote = 0;
  std::string handle;  // of the registration
};

long MsSince(std::chrono::steady_clock::time_point t0) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
}

// Starts `n` peers (forked at once, then initialized one by one), each with
// one registered buffer of kLen filled with pattern `i + 1`.
std::vector<Peer> StartPeers(size_t n, const std::string &args = "adxl.HeartbeatMs=1000") {
  std::vector<Peer> peers(n);
  for (auto &p : peers) p.proc = std::make_unique<PeerProcess>();
  for (size_t i = 0; i < n; ++i) {
    Peer &p = peers[i];
    p.name = InitOnFreePort(*p.proc, args);
    EXPECT_NE(p.name, "") << "peer " << i << " could not initialize";
    auto a = p.proc->Ok("alloc " + std::to_string(kLen));
    EXPECT_EQ(a.size(), 2u);
    if (a.size() == 2) p.remote = std::stoull(a[1]);
    auto r = p.proc->Ok("reg 0");
    EXPECT_EQ(r.size(), 1u);
    if (r.size() == 1) p.handle = r[0];
    EXPECT_EQ(p.proc->Command("fill 0 " + std::to_string(i + 1)), "ok");
  }
  return peers;
}

bool Linked(adxl::AdxlEngine &e, const Peer &p) {
  adxl::ext::LinkInfo info;
  return adxl::ext::GetLinkInfo(e, p.name.c_str(), info) == adxl::SUCCESS;
}

// §5.11: an engine serving adxl.MaxInboundPeers = 2 refuses a third peer
// with RESOURCE_EXHAUSTED, and accepts it once one disconnects.
TEST(InboundCap, AThirdPeerIsRefusedUntilOneDisconnects) {
  std::vector<Peer> target = StartPeers(1, "adxl.HeartbeatMs=1000 adxl.MaxInboundPeers=2");
  std::vector<Peer> clients = StartPeers(3);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string t = target[0].name;
  const std::string refused = "status " + std::to_string(adxl::RESOURCE_EXHAUSTED);
  EXPECT_EQ(clients[0].proc->Command("connect " + t + " 3000"), "ok");
  EXPECT_EQ(clients[1].proc->Command("connect " + t + " 3000"), "ok");
  EXPECT_EQ(clients[2].proc->Command("connect " + t + " 3000"), refused);
  // Refused at the handshake: nothing was linked, transfers say so.
  EXPECT_EQ(clients[2].proc->Command("read " + t + " 1000 0 0 " + std::to_string(target[0].remote) + " 64"),
            "status " + std::to_string(adxl::NOT_CONNECTED));
  EXPECT_EQ(clients[0].proc->Command("disconnect " + t + " 1000"), "ok");
  // The target sees the close a moment later.
  std::string st;
  for (int i = 0; i < 100 && st != "ok"; ++i) {
    st = clients[2].proc->Command("connect " + t + " 3000");
    if (st != "ok") std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(st, "ok");
  EXPECT_EQ(clients[2].proc->Command("read " + t + " 1000 0 0 " + std::to_string(target[0].remote) + " 64"), "ok");
  EXPECT_EQ(clients[0].proc->Command("connect " + t + " 3000"), refused);
}

}  // namespace
