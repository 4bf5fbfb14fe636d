// Spec §5 (links) with a real peer process on loopback.
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <csignal>
#include <thread>

#include "mp_fixture.h"

using namespace adxl;
using namespace adxl_test;

namespace {

class LinksTest : public PeerTest {};

TEST_F(LinksTest, ConnectRejectsNonPositiveTimeout) {
  EXPECT_EQ(engine_.Connect(peer_name_.c_str(), 0), PARAM_INVALID);
  EXPECT_EQ(engine_.Connect(peer_name_.c_str(), -5), PARAM_INVALID);
}

TEST_F(LinksTest, ConnectRejectsMalformedAndPortlessNames) {
  EXPECT_EQ(engine_.Connect("localhost:26000", 1000), PARAM_INVALID);
  EXPECT_EQ(engine_.Connect("127.0.0.1", 1000), PARAM_INVALID);  // client-only: nothing to connect to
  EXPECT_EQ(engine_.Connect("::1:26000", 1000), PARAM_INVALID);
}

TEST_F(LinksTest, ConnectToSelfIsParamInvalid) {
  AdxlEngine server;
  const std::string name = LoopbackName(FreePort());
  ASSERT_EQ(server.Initialize(name.c_str(), {}), SUCCESS);
  EXPECT_EQ(server.Connect(name.c_str(), 1000), PARAM_INVALID);
}

TEST_F(LinksTest, SecondConnectIsAlreadyConnected) {
  ASSERT_EQ(Connect(), SUCCESS);
  EXPECT_EQ(Connect(), ALREADY_CONNECTED);
}

TEST_F(LinksTest, NobodyListeningIsFailed) {
  EXPECT_EQ(engine_.Connect(LoopbackName(FreePort()).c_str(), 1000), FAILED);
}

TEST_F(LinksTest, SilentListenerIsTimeoutWithinTheDeadline) {
  // A socket that accepts (kernel backlog) but never answers the handshake.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  const std::string name = LoopbackName(ntohs(a.sin_port));
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(engine_.Connect(name.c_str(), 300), TIMEOUT);
  EXPECT_LT(MsSince(t0), 2000);
  close(fd);
}

TEST_F(LinksTest, PeerWithAnotherIdentityIsRefused) {
  // The peer listens on every address as "0.0.0.0:P"; "127.0.0.1:P" reaches
  // its socket but is not its name.
  PeerProcess other;
  const uint16_t port = FreePort();
  ASSERT_EQ(other.Command("init 0.0.0.0:" + std::to_string(port)), "ok");
  EXPECT_EQ(engine_.Connect(LoopbackName(port).c_str(), 2000), FAILED);
}

TEST_F(LinksTest, ConcurrentConnectsGiveExactlyOneSuccess) {
  constexpr int kThreads = 8;
  std::atomic<int> success{0}, already{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      Status st = engine_.Connect(peer_name_.c_str(), 5000);
      (st == SUCCESS ? success : st == ALREADY_CONNECTED ? already : other)++;
    });
  }
  for (auto &t : threads) t.join();
  EXPECT_EQ(success.load(), 1);
  EXPECT_EQ(already.load(), kThreads - 1);
  EXPECT_EQ(other.load(), 0);
}

TEST_F(LinksTest, LinksAreDirectional) {
  AdxlEngine server;
  const std::string name = LoopbackName(FreePort());
  ASSERT_EQ(server.Initialize(name.c_str(), {}), SUCCESS);
  AlignedBuffer buf(1 << 16);
  MemHandle h;
  ASSERT_EQ(server.RegisterMem({buf.addr(), buf.size()}, MEM_HOST, h), SUCCESS);
  // We connect to the peer: we may act on it ...
  ASSERT_EQ(server.Connect(peer_name_.c_str(), 5000), SUCCESS);
  ASSERT_EQ(server.TransferSync(peer_name_.c_str(), READ, {{buf.addr(), remote_, 4096}}), SUCCESS);
  // ... but the peer may not act on us until it connects itself.
  const std::string write = "write " + name + " 1000 0 0 " + std::to_string(buf.addr()) + " 4096";
  EXPECT_EQ(peer_->Command(write), "status " + std::to_string(NOT_CONNECTED));
  EXPECT_EQ(peer_->Command("notify " + name + " n m 1000"), "status " + std::to_string(NOT_CONNECTED));
  ASSERT_EQ(peer_->Command("connect " + name + " 5000"), "ok");
  EXPECT_EQ(peer_->Command(write), "ok");
  EXPECT_EQ(Hash(buf.data(), 4096), PatternHash(1, 0, 4096));
}

TEST_F(LinksTest, DisconnectRules) {
  EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), NOT_CONNECTED);
  ASSERT_EQ(Connect(), SUCCESS);
  EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 0), PARAM_INVALID);
  EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), -1), PARAM_INVALID);
  EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), SUCCESS);
  EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), NOT_CONNECTED);
  EXPECT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), remote_, 64}}), NOT_CONNECTED);
  // And the link can be made again.
  ASSERT_EQ(Connect(), SUCCESS);
  EXPECT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), remote_, 64}}), SUCCESS);
}

TEST_F(LinksTest, DisconnectFromDeadPeerSucceedsLocally) {
  ASSERT_EQ(Connect(), SUCCESS);
  peer_->KillAndWait();
  EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), SUCCESS);
  EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), NOT_CONNECTED);
}

TEST_F(LinksTest, KilledPeerFailsCallsFastInsteadOfTimingOut) {
  ASSERT_EQ(Connect(), SUCCESS);
  peer_->KillAndWait();
  // Detection: the control connection closes (same host) or the heartbeat stops.
  const auto t0 = std::chrono::steady_clock::now();
  Status st = SUCCESS;
  while (MsSince(t0) < 3000) {
    st = engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), remote_, 4096}}, 5000);
    if (st != SUCCESS) break;
  }
  EXPECT_EQ(st, FAILED);
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), remote_, 4096}}, 5000), FAILED);
  EXPECT_LT(MsSince(t1), 100);  // fails fast, not after its 5 s timeout
  EXPECT_EQ(engine_.SendNotify(peer_name_.c_str(), {"a", "b"}, 5000), FAILED);
}

TEST_F(LinksTest, HeartbeatDetectsAStoppedPeer) {
  ASSERT_EQ(Connect(), SUCCESS);
  peer_->Stop();
  // 3 heartbeat periods (200 ms) without an answer: the link fails.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), remote_, 4096}}, 5000), FAILED);
  EXPECT_LT(MsSince(t0), 100);
  peer_->Signal(SIGCONT);
  // Reconnecting after Disconnect works once the peer answers again.
  EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), SUCCESS);
  ASSERT_EQ(Connect(), SUCCESS);
  EXPECT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), remote_, 4096}}), SUCCESS);
}

TEST_F(LinksTest, ServerForgetsADeadClient) {
  // Our engine is the server; the peer connects to it, then dies.  A
  // registration made afterwards must not wait for the dead client's ack.
  AdxlEngine server;
  const std::string name = LoopbackName(FreePort());
  ASSERT_EQ(server.Initialize(name.c_str(), {{"adxl.HeartbeatMs", "200"}}), SUCCESS);
  ASSERT_EQ(peer_->Command("connect " + name + " 5000"), "ok");
  peer_->KillAndWait();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  AlignedBuffer buf(1 << 16);
  MemHandle h;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(server.RegisterMem({buf.addr(), buf.size()}, MEM_HOST, h), SUCCESS);
  EXPECT_LT(MsSince(t0), 300);
}

TEST_F(LinksTest, AnIdleLinkedEngineUsesNoMeasurableCpu) {
  ASSERT_EQ(Connect(), SUCCESS);
  ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 1 << 20}}), SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const long before = ProcessCpuMs(peer_->pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // 10 heartbeats of 200 ms
  const long used = ProcessCpuMs(peer_->pid()) - before;
  ASSERT_GE(before, 0);
  // A busy-polling progress thread would use ~2000 ms here; heartbeats cost
  // microseconds.  (A behaviour check with a wide margin, not a timing.)
  EXPECT_LT(used, 100) << "the idle peer used " << used << " ms of CPU in 2 s";
}

TEST_F(LinksTest, FinalizeOfTheServerFailsTheClientsLink) {
  ASSERT_EQ(Connect(), SUCCESS);
  ASSERT_EQ(peer_->Command("finalize"), "ok");
  const auto t0 = std::chrono::steady_clock::now();
  Status st = SUCCESS;
  while (MsSince(t0) < 2000 && st == SUCCESS) {
    st = engine_.TransferSync(peer_name_.c_str(), READ, {{local_.addr(), remote_, 64}}, 1000);
  }
  EXPECT_EQ(st, FAILED);
  EXPECT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), SUCCESS);
}

}  // namespace
