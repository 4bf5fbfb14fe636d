// docs/contract.md §5.10 (the channel pool, GlobalResourceConfig
// channel_pool.*) and §5.11 (the inbound cap, adxl.MaxInboundPeers), with
// real peer processes: max_channel = 32 with 64 peers.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"
#include "pattern.h"
#include "peer_process.h"
#include "time_scale.h"

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

class ChannelPool : public ::testing::Test {
 protected:
  void SetUp() override {
    peers_ = StartPeers(64);
    ASSERT_FALSE(HasFailure());
    local_.assign(kLen, 0);
    ASSERT_EQ(engine_.Initialize("127.0.0.1",
                                 {{"adxl.HeartbeatMs", "1000"},
                                  {"GlobalResourceConfig",
                                   R"({"channel_pool.max_channel":"32","channel_pool.high_waterline":"0.8",)"
                                   R"("channel_pool.low_waterline":"0.5"})"}}),
              adxl::SUCCESS);
    adxl::MemDesc d{};
    d.addr = reinterpret_cast<uintptr_t>(local_.data());
    d.len = kLen;
    ASSERT_EQ(engine_.RegisterMem(d, adxl::MEM_HOST, handle_), adxl::SUCCESS);
  }
  void TearDown() override { engine_.Finalize(); }

  adxl::Status Read(size_t i, size_t len = 4096, int32_t timeout_ms = 3000) {
    return engine_.TransferSync(peers_[i].name.c_str(), adxl::READ,
                                {{reinterpret_cast<uintptr_t>(local_.data()), peers_[i].remote, len}}, timeout_ms);
  }
  // Reads from peer i and checks its pattern.
  void ReadAndVerify(size_t i, size_t len = 4096) {
    ASSERT_EQ(Read(i, len), adxl::SUCCESS) << "peer " << i;
    std::vector<uint8_t> want(len);
    FillPattern(want.data(), len, i + 1);
    EXPECT_EQ(Hash(local_.data(), len), Hash(want.data(), len)) << "peer " << i;
  }
  size_t LinkedCount() {
    size_t n = 0;
    for (const auto &p : peers_) n += Linked(engine_, p) ? 1 : 0;
    return n;
  }

  std::vector<Peer> peers_;
  std::vector<uint8_t> local_;
  adxl::AdxlEngine engine_;
  adxl::MemHandle handle_ = nullptr;
};

// max_channel 32, marks ⌊0.8 × 32⌋ = 25 and ⌊0.5 × 32⌋ = 16, links idle after 1 s.
TEST_F(ChannelPool, EvictsIdleLinksToTheLowMarkAndExhaustsWhenNoneIsIdle) {
  const auto t_connect = std::chrono::steady_clock::now();
  for (size_t i = 0; i < 32; ++i) ASSERT_EQ(engine_.Connect(peers_[i].name.c_str(), 5000), adxl::SUCCESS) << i;
  const long connect_32_ms = MsSince(t_connect);
  // Peers 0..23 used now; 24..31 never used but connected well under 1 s ago.
  for (size_t i = 0; i < 24; ++i) ReadAndVerify(i);
  EXPECT_EQ(LinkedCount(), 32u);
  // At max_channel with no idle link: the 33rd waits its timeout, then RESOURCE_EXHAUSTED.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(engine_.Connect(peers_[32].name.c_str(), 300), adxl::RESOURCE_EXHAUSTED);
  const long exhausted_ms = MsSince(t0);
  EXPECT_GE(MsSince(t0), 290);
  EXPECT_LT(MsSince(t0), ScaledMs(900));
  EXPECT_EQ(LinkedCount(), 32u);

  // All idle now; 0..7 used again.  The next Connect evicts 16: the
  // never-used 24..31 first, then the least recently used 8..15.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  for (size_t i = 0; i < 8; ++i) ReadAndVerify(i);
  t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(engine_.Connect(peers_[32].name.c_str(), 3000), adxl::SUCCESS);
  const long evicting_connect_ms = MsSince(t0);
  for (size_t i = 0; i < 33; ++i) {
    const bool kept = i < 8 || (i >= 16 && i < 24) || i == 32;
    EXPECT_EQ(Linked(engine_, peers_[i]), kept) << "peer " << i;
  }
  EXPECT_EQ(LinkedCount(), 17u);

  // The evicted side dropped its end: a DeregisterMem there waits for no
  // acknowledgement from us (a stale subscription would make it wait).
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(peers_[10].proc->Command("dereg " + peers_[10].handle), "ok");
  EXPECT_LT(MsSince(t0), ScaledMs(1000));

  // A transfer to an evicted peer reconnects by itself (AutoConnect is off)
  // and moves the right bytes, both ways.
  t0 = std::chrono::steady_clock::now();
  ReadAndVerify(24, kLen);
  const long reconnect_read_ms = MsSince(t0);
  FillPattern(local_.data(), kLen, 99);
  ASSERT_EQ(engine_.TransferSync(peers_[9].name.c_str(), adxl::WRITE,
                                 {{reinterpret_cast<uintptr_t>(local_.data()), peers_[9].remote, kLen}}, 3000),
            adxl::SUCCESS);
  EXPECT_EQ(peers_[9].proc->Command("hash 0 0 " + std::to_string(kLen)),
            "ok " + std::to_string(Hash(local_.data(), kLen)));
  EXPECT_TRUE(Linked(engine_, peers_[24]));
  // Disconnect of an evicted peer forgets it: no more reconnection on demand.
  EXPECT_EQ(engine_.Disconnect(peers_[15].name.c_str(), 1000), adxl::SUCCESS);
  EXPECT_EQ(Read(15), adxl::NOT_CONNECTED);
  // A never-connected peer is still NOT_CONNECTED without AutoConnect.
  EXPECT_EQ(Read(40), adxl::NOT_CONNECTED);

  // All 64: every Connect succeeds within its timeout (an idle link makes
  // room), and the pool never holds more than 32.
  size_t most = 0;
  t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < 64; ++i) {
    const adxl::Status st = engine_.Connect(peers_[i].name.c_str(), 3000);
    EXPECT_TRUE(st == adxl::SUCCESS || st == adxl::ALREADY_CONNECTED) << "peer " << i << " status " << st;
    if (i % 8 == 7) most = std::max(most, LinkedCount());
  }
  EXPECT_LE(most, 32u);
  EXPECT_LE(LinkedCount(), 32u);
  printf("channel pool, max_channel 32 with 64 peers: 32 Connects %ld ms; 33rd with none idle RESOURCE_EXHAUSTED "
         "after %ld ms (timeout 300); evicting Connect (16 evicted) %ld ms; READ 64 KiB from an evicted peer "
         "(reconnect included) %ld ms; 64 Connects in turn %ld ms, at most %zu links\n",
         connect_32_ms, exhausted_ms, evicting_connect_ms, reconnect_read_ms, MsSince(t0), most);
}

// An engine with channel_pool.max_channel = 1 (the marks default to it),
// and a 5 s heartbeat: a stopped peer is judged after 15 s, after the tests.
void InitPoolOfOne(adxl::AdxlEngine &e, std::vector<uint8_t> *local, adxl::MemHandle *h) {
  ASSERT_EQ(e.Initialize("127.0.0.1", {{"adxl.HeartbeatMs", "5000"},
                                       {"GlobalResourceConfig", R"({"channel_pool.max_channel":"1"})"}}),
            adxl::SUCCESS);
  local->assign(kLen, 0);
  ASSERT_EQ(e.RegisterMem({reinterpret_cast<uintptr_t>(local->data()), kLen}, adxl::MEM_HOST, *h), adxl::SUCCESS);
}

// §5.10 "a link in use is never evicted": the only link of a pool of one is
// held by a notify its stopped peer never acknowledges (5 s), and last used
// over 1 s ago when a Connect to another peer needs room: that Connect
// waits its timeout and is RESOURCE_EXHAUSTED, and the link stays.  A pool
// that judged idleness by the last use alone would evict it at 1 s.
TEST(ChannelPoolInUse, ALinkInUseIsNeverEvicted) {
  std::vector<Peer> peers = StartPeers(2);
  ASSERT_FALSE(::testing::Test::HasFailure());
  adxl::AdxlEngine engine;
  std::vector<uint8_t> local;
  adxl::MemHandle h = nullptr;
  ASSERT_NO_FATAL_FAILURE(InitPoolOfOne(engine, &local, &h));
  ASSERT_EQ(engine.Connect(peers[0].name.c_str(), 3000), adxl::SUCCESS);
  peers[0].proc->Stop();
  adxl::Status notify = adxl::SUCCESS;
  std::thread holder([&] { notify = engine.SendNotify(peers[0].name.c_str(), {"n", "m"}, 5000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // past the 1 s of idleness
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(engine.Connect(peers[1].name.c_str(), 1500), adxl::RESOURCE_EXHAUSTED)
      << "the Connect made room by evicting a link in use";
  const long ms = MsSince(t0);
  EXPECT_GE(ms, 1490) << "RESOURCE_EXHAUSTED before the Connect's timeout";
  EXPECT_TRUE(Linked(engine, peers[0])) << "the link in use was evicted";
  EXPECT_FALSE(Linked(engine, peers[1]));
  holder.join();
  EXPECT_EQ(notify, adxl::TIMEOUT);
  peers[0].proc->Signal(SIGCONT);
  engine.Finalize();
}

// §5.10 "What is counted is this engine's outgoing links ..., CONNECTING
// ones included": in a pool of one, a Connect to a stopped peer (its
// handshake unanswered, 4 s) holds the only place, so a Connect to another
// peer meanwhile is RESOURCE_EXHAUSTED at its timeout; a pool that counted
// connected links only would let both in.
TEST(ChannelPoolInUse, ConnectingLinksCount) {
  std::vector<Peer> peers = StartPeers(2);
  ASSERT_FALSE(::testing::Test::HasFailure());
  adxl::AdxlEngine engine;
  std::vector<uint8_t> local;
  adxl::MemHandle h = nullptr;
  ASSERT_NO_FATAL_FAILURE(InitPoolOfOne(engine, &local, &h));
  peers[0].proc->Stop();
  adxl::Status first = adxl::SUCCESS;
  std::thread connecting([&] { first = engine.Connect(peers[0].name.c_str(), 4000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its handshake is on the wire
  EXPECT_EQ(engine.Connect(peers[1].name.c_str(), 1000), adxl::RESOURCE_EXHAUSTED)
      << "a CONNECTING link was not counted";
  EXPECT_FALSE(Linked(engine, peers[1]));
  connecting.join();
  EXPECT_NE(first, adxl::SUCCESS) << "a stopped peer answered the handshake";
  peers[0].proc->Signal(SIGCONT);
  // The place is free again.
  EXPECT_EQ(engine.Connect(peers[1].name.c_str(), 3000), adxl::SUCCESS);
  engine.Finalize();
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
