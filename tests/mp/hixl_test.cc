// What only the HIXL facade has, against real peer processes: async connect
// (queue bound, per-remote order, parallel remotes, latest submission wins,
// disconnected remotes leave the map) and the batch GetTransferStatus.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <thread>

#include "facade_fixture.h"

using namespace adxl_test;
using hixl::AsyncConnectStatus;

namespace {

class HixlTest : public FacadeTest<HixlApi> {
 protected:
  // Polls the async state of `remote` until it is `want` (or `ms` pass).
  AsyncConnectStatus WaitState(const std::string &remote, AsyncConnectStatus want, int ms = 5000) {
    AsyncConnectStatus st = AsyncConnectStatus::NOT_CONNECT;
    const auto t0 = std::chrono::steady_clock::now();
    while (MsSince(t0) < ms) {
      if (engine_.GetAsyncConnectStatus(remote.c_str(), st) != hixl::SUCCESS || st == want) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return st;
  }
  // A second peer engine, listening; returns its name.
  std::string ExtraPeer(std::unique_ptr<PeerProcess> *p, const std::vector<std::string> &env = {}) {
    *p = std::make_unique<PeerProcess>(env);
    const std::string name = LoopbackName(FreePort());
    EXPECT_EQ((*p)->Command("init " + name), "ok");
    return name;
  }
};

TEST_F(HixlTest, AsyncConnectArgumentsAndLifecycle) {
  hixl::Hixl e;
  AsyncConnectStatus st;
  EXPECT_EQ(e.ConnectAsync(peer_name_.c_str()), hixl::FAILED);
  EXPECT_EQ(e.DisconnectAsync(peer_name_.c_str()), hixl::FAILED);
  EXPECT_EQ(e.GetAsyncConnectStatus(peer_name_.c_str(), st), hixl::FAILED);
  std::map<hixl::AscendString, AsyncConnectStatus> all;
  EXPECT_EQ(e.GetAsyncConnectStatus(all), hixl::FAILED);
  std::vector<hixl::TransferResult> results;
  EXPECT_EQ(e.GetTransferStatus(hixl::GetTransferStatusArgs{}, results), hixl::FAILED);
  const std::string me = LoopbackName(FreePort());
  ASSERT_EQ(e.Initialize(me.c_str(), {}), hixl::SUCCESS);
  EXPECT_EQ(e.ConnectAsync(peer_name_.c_str(), 0), hixl::PARAM_INVALID);
  EXPECT_EQ(e.ConnectAsync("localhost:26000", 1000), hixl::PARAM_INVALID);
  EXPECT_EQ(e.ConnectAsync("127.0.0.1", 1000), hixl::PARAM_INVALID);  // client only
  EXPECT_EQ(e.ConnectAsync(me.c_str(), 1000), hixl::PARAM_INVALID);   // oneself
  EXPECT_EQ(e.DisconnectAsync(peer_name_.c_str(), -1), hixl::PARAM_INVALID);
  EXPECT_EQ(e.GetAsyncConnectStatus(peer_name_.c_str(), st), hixl::SUCCESS);
  EXPECT_EQ(st, AsyncConnectStatus::NOT_CONNECT);
  e.Finalize();
  EXPECT_EQ(e.ConnectAsync(peer_name_.c_str()), hixl::FAILED);
}

TEST_F(HixlTest, ConnectAsyncThenTransferThenDisconnectAsync) {
  Init({});
  ASSERT_EQ(engine_.ConnectAsync(peer_name_.c_str(), 5000), hixl::SUCCESS);
  ASSERT_EQ(WaitState(peer_name_, AsyncConnectStatus::CONNECTED), AsyncConnectStatus::CONNECTED);
  std::map<hixl::AscendString, AsyncConnectStatus> all;
  ASSERT_EQ(engine_.GetAsyncConnectStatus(all), hixl::SUCCESS);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all.begin()->first, hixl::AscendString(peer_name_));
  EXPECT_EQ(all.begin()->second, AsyncConnectStatus::CONNECTED);
  FillPattern(local_.data(), 8192, 71);
  ASSERT_EQ(Sync(hixl::WRITE, {{local_.addr(), remote_, 8192}}), hixl::SUCCESS);
  EXPECT_EQ(RemoteHash(0, 8192), Hash(local_.data(), 8192));
  ASSERT_EQ(engine_.DisconnectAsync(peer_name_.c_str(), 1000), hixl::SUCCESS);
  ASSERT_EQ(WaitState(peer_name_, AsyncConnectStatus::NOT_CONNECT), AsyncConnectStatus::NOT_CONNECT);
  ASSERT_EQ(engine_.GetAsyncConnectStatus(all), hixl::SUCCESS);
  EXPECT_TRUE(all.empty());  // disconnected remotes leave the map
  EXPECT_EQ(Sync(hixl::WRITE, {{local_.addr(), remote_, 64}}), hixl::NOT_CONNECTED);
  // A sync Disconnect of an async link also takes it out of the map.
  ASSERT_EQ(engine_.ConnectAsync(peer_name_.c_str(), 5000), hixl::SUCCESS);
  ASSERT_EQ(WaitState(peer_name_, AsyncConnectStatus::CONNECTED), AsyncConnectStatus::CONNECTED);
  ASSERT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), hixl::SUCCESS);
  AsyncConnectStatus st;
  ASSERT_EQ(engine_.GetAsyncConnectStatus(peer_name_.c_str(), st), hixl::SUCCESS);
  EXPECT_EQ(st, AsyncConnectStatus::NOT_CONNECT);
}

TEST_F(HixlTest, ConnectAsyncToNobodyIsConnectFailed) {
  Init({});
  const std::string nobody = LoopbackName(FreePort());
  ASSERT_EQ(engine_.ConnectAsync(nobody.c_str(), 500), hixl::SUCCESS);
  EXPECT_EQ(WaitState(nobody, AsyncConnectStatus::CONNECT_FAILED), AsyncConnectStatus::CONNECT_FAILED);
}

// A peer that is stopped accepts TCP connections (the kernel does) but never
// answers the handshake: a connect task to it holds its worker until its
// timeout.  One worker then lets us watch the queue.
TEST_F(HixlTest, FullQueueIsResourceExhaustedAndOneRemoteKeepsSubmissionOrder) {
  Init({{"GlobalResourceConfig", R"({"connect_pool": {"thread_num": 1, "task_queue_capacity": 3}})"}});
  std::unique_ptr<PeerProcess> stopped;
  const std::string blocker = ExtraPeer(&stopped);
  ASSERT_TRUE(StopProcess(stopped->pid()));
  ASSERT_EQ(engine_.ConnectAsync(blocker.c_str(), 1500), hixl::SUCCESS);
  ASSERT_EQ(WaitState(blocker, AsyncConnectStatus::CONNECTING), AsyncConnectStatus::CONNECTING);
  // Three queued tasks fill the queue: connect, disconnect, connect to one peer.
  const char *peer = peer_name_.c_str();
  ASSERT_EQ(engine_.ConnectAsync(peer, 5000), hixl::SUCCESS);
  AsyncConnectStatus st;
  ASSERT_EQ(engine_.GetAsyncConnectStatus(peer, st), hixl::SUCCESS);
  EXPECT_EQ(st, AsyncConnectStatus::CONNECT_PENDING);
  ASSERT_EQ(engine_.DisconnectAsync(peer, 1000), hixl::SUCCESS);
  ASSERT_EQ(engine_.GetAsyncConnectStatus(peer, st), hixl::SUCCESS);
  EXPECT_EQ(st, AsyncConnectStatus::DISCONNECT_PENDING);  // the latest submission wins
  ASSERT_EQ(engine_.ConnectAsync(peer, 5000), hixl::SUCCESS);
  EXPECT_EQ(engine_.ConnectAsync(LoopbackName(FreePort()).c_str(), 1000), hixl::RESOURCE_EXHAUSTED);
  EXPECT_EQ(engine_.DisconnectAsync(peer, 1000), hixl::RESOURCE_EXHAUSTED);
  // In order: connected, disconnected, connected again.
  EXPECT_EQ(WaitState(peer_name_, AsyncConnectStatus::CONNECTED, 8000), AsyncConnectStatus::CONNECTED);
  EXPECT_EQ(WaitState(blocker, AsyncConnectStatus::CONNECT_FAILED), AsyncConnectStatus::CONNECT_FAILED);
  EXPECT_EQ(engine_.Connect(peer, 1000), hixl::ALREADY_CONNECTED);
  stopped->Signal(SIGCONT);
}

TEST_F(HixlTest, LatestSubmissionWinsAndDisconnectLeavesTheMap) {
  Init({{"GlobalResourceConfig", R"({"connect_pool.thread_num": 1})"}});
  std::unique_ptr<PeerProcess> stopped;
  const std::string blocker = ExtraPeer(&stopped);
  ASSERT_TRUE(StopProcess(stopped->pid()));
  ASSERT_EQ(engine_.ConnectAsync(blocker.c_str(), 800), hixl::SUCCESS);
  ASSERT_EQ(WaitState(blocker, AsyncConnectStatus::CONNECTING), AsyncConnectStatus::CONNECTING);
  const char *peer = peer_name_.c_str();
  ASSERT_EQ(engine_.ConnectAsync(peer, 5000), hixl::SUCCESS);
  ASSERT_EQ(engine_.DisconnectAsync(peer, 1000), hixl::SUCCESS);
  ASSERT_EQ(WaitState(peer_name_, AsyncConnectStatus::NOT_CONNECT, 5000), AsyncConnectStatus::NOT_CONNECT);
  std::map<hixl::AscendString, AsyncConnectStatus> all;
  ASSERT_EQ(engine_.GetAsyncConnectStatus(all), hixl::SUCCESS);
  EXPECT_EQ(all.count(peer_name_), 0u);
  EXPECT_EQ(engine_.Disconnect(peer, 1000), hixl::NOT_CONNECTED);  // the connect ran, then the disconnect
  stopped->Signal(SIGCONT);
}

TEST_F(HixlTest, DifferentRemotesConnectInParallel) {
  Init({});  // thread_num 2
  std::unique_ptr<PeerProcess> stopped;
  const std::string blocker = ExtraPeer(&stopped);
  ASSERT_TRUE(StopProcess(stopped->pid()));
  ASSERT_EQ(engine_.ConnectAsync(blocker.c_str(), 3000), hixl::SUCCESS);
  ASSERT_EQ(WaitState(blocker, AsyncConnectStatus::CONNECTING), AsyncConnectStatus::CONNECTING);
  ASSERT_EQ(engine_.ConnectAsync(peer_name_.c_str(), 3000), hixl::SUCCESS);
  EXPECT_EQ(WaitState(peer_name_, AsyncConnectStatus::CONNECTED, 2000), AsyncConnectStatus::CONNECTED);
  AsyncConnectStatus st;
  ASSERT_EQ(engine_.GetAsyncConnectStatus(blocker.c_str(), st), hixl::SUCCESS);
  EXPECT_EQ(st, AsyncConnectStatus::CONNECTING);  // still held by its own worker
  stopped->Signal(SIGCONT);
}

TEST_F(HixlTest, FinalizeDropsQueuedTasks) {
  Init({{"GlobalResourceConfig", R"({"connect_pool.thread_num": 1})"}});
  // Two stopped peers: their TCP connects succeed (the kernel accepts) but
  // no handshake answer comes, so a connect to either runs to its timeout.
  std::unique_ptr<PeerProcess> stopped, queued_peer;
  const std::string blocker = ExtraPeer(&stopped);
  const std::string queued = ExtraPeer(&queued_peer);
  ASSERT_TRUE(StopProcess(stopped->pid()));
  ASSERT_TRUE(StopProcess(queued_peer->pid()));
  ASSERT_EQ(engine_.ConnectAsync(blocker.c_str(), 500), hixl::SUCCESS);
  // The one worker is busy with the blocker, so the second connect waits in the queue.
  ASSERT_EQ(WaitState(blocker, AsyncConnectStatus::CONNECTING), AsyncConnectStatus::CONNECTING);
  ASSERT_EQ(engine_.ConnectAsync(queued.c_str(), 5000), hixl::SUCCESS);
  AsyncConnectStatus st;
  ASSERT_EQ(engine_.GetAsyncConnectStatus(queued.c_str(), st), hixl::SUCCESS);
  ASSERT_EQ(st, AsyncConnectStatus::CONNECT_PENDING);
  // Finalize waits for the running connect (<= 500 ms) only: had the queued
  // one been run instead of dropped, Finalize would wait its 5 s out.
  const auto t0 = std::chrono::steady_clock::now();
  engine_.Finalize();
  EXPECT_LT(MsSince(t0), ScaledMs(2000)) << "Finalize ran the queued connect instead of dropping it";
  stopped->Signal(SIGCONT);
  queued_peer->Signal(SIGCONT);
}

// Finalize with a ConnectAsync task in its handshake (a socket that accepts
// and never answers; the task's timeout is 20 s): Finalize ends the task's
// Connect and joins its worker within the bound of docs/contract.md §3.3,
// and a GetAsyncConnectStatus meanwhile does not queue behind that join
// (the facade's lock was held across it, so the query waited the 20 s out;
// it now finds no pool and says FAILED at once).  When Finalize is quick
// the query may come after it: FAILED at once as well.
TEST_F(HixlTest, FinalizeEndsAConnectTaskInItsHandshakeAndStatusQueriesDoNotWait) {
  Init({{"GlobalResourceConfig", R"({"connect_pool.thread_num": 1})"}});
  const adxl_test::SilentListener listener(4);
  ASSERT_TRUE(listener.ok());
  const std::string silent = listener.name();
  ASSERT_EQ(engine_.ConnectAsync(silent.c_str(), 20000), hixl::SUCCESS);
  ASSERT_EQ(WaitState(silent, AsyncConnectStatus::CONNECTING), AsyncConnectStatus::CONNECTING);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the task waits for the HelloAck
  std::atomic<double> finalize_ms{-1};
  const auto t0 = std::chrono::steady_clock::now();
  std::thread fin([&] {
    engine_.Finalize();
    finalize_ms = MsSince(t0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t1 = std::chrono::steady_clock::now();
  AsyncConnectStatus st = AsyncConnectStatus::CONNECTED;
  const hixl::Status got = engine_.GetAsyncConnectStatus(silent.c_str(), st);
  const double query_ms = MsSince(t1);
  fin.join();
  EXPECT_LT(query_ms, ScaledMs(500)) << "GetAsyncConnectStatus waited for Finalize";
  EXPECT_EQ(got, hixl::FAILED);
  EXPECT_GE(finalize_ms.load(), 0);
  EXPECT_LT(finalize_ms.load(), ScaledMs(2000)) << "Finalize waited for a connect task's own timeout";
}

TEST_F(HixlTest, BatchStatusInSubmissionOrderWithUserData) {
  StartPeer(RemoteTcpPeerEnv());
  Init({});
  const char *peer = peer_name_.c_str();
  ASSERT_EQ(engine_.Connect(peer, 5000), hixl::SUCCESS);
  std::vector<hixl::TransferResult> results;
  ASSERT_EQ(engine_.GetTransferStatus(hixl::GetTransferStatusArgs{}, results), hixl::SUCCESS);
  EXPECT_TRUE(results.empty());
  ASSERT_TRUE(StopProcess(peer_->pid()));  // TCP lane: nothing completes while the target is stopped
  static const int tags[3] = {1, 2, 3};
  std::vector<hixl::TransferReq> reqs;
  for (int i = 0; i < 3; ++i) {
    hixl::TransferArgs args;
    args.user_data = &tags[i];
    hixl::TransferReq r = nullptr;
    const size_t off = static_cast<size_t>(i) * (1u << 20);
    // 16 MiB each (one remote MiB 16 times): more than socket buffers hold.
    const std::vector<hixl::TransferOpDesc> d(16, {local_.addr() + off, remote_ + off, 1u << 20});
    ASSERT_EQ(engine_.TransferAsync(peer, hixl::WRITE, d, args, r), hixl::SUCCESS);
    reqs.push_back(r);
  }
  hixl::GetTransferStatusArgs args;
  ASSERT_EQ(engine_.GetTransferStatus(args, results), hixl::SUCCESS);
  ASSERT_EQ(results.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(results[i].req, reqs[i]);
    EXPECT_EQ(results[i].user_data, &tags[i]);
    EXPECT_EQ(results[i].status, hixl::TransferStatus::WAITING);
  }
  args.max_query_count = 2;
  ASSERT_EQ(engine_.GetTransferStatus(args, results), hixl::SUCCESS);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].req, reqs[1]);
  args.max_query_count = 0;
  ASSERT_EQ(engine_.GetTransferStatus(args, results), hixl::SUCCESS);
  EXPECT_TRUE(results.empty());
  args.max_query_count = UINT32_MAX;
  args.skip_waiting = true;
  ASSERT_EQ(engine_.GetTransferStatus(args, results), hixl::SUCCESS);
  EXPECT_TRUE(results.empty());
  peer_->Signal(SIGCONT);
  // Every request is reported once, COMPLETED, with its user_data.
  std::vector<hixl::TransferResult> done;
  const auto t0 = std::chrono::steady_clock::now();
  while (done.size() < 3 && MsSince(t0) < 10000) {
    ASSERT_EQ(engine_.GetTransferStatus(args, results), hixl::SUCCESS);
    for (const auto &r : results) {
      EXPECT_NE(r.status, hixl::TransferStatus::WAITING);  // skip_waiting
      done.push_back(r);
    }
  }
  ASSERT_EQ(done.size(), 3u);
  for (const auto &r : done) {
    EXPECT_EQ(r.status, hixl::TransferStatus::COMPLETED);
    const size_t i = static_cast<size_t>(*static_cast<const int *>(r.user_data) - 1);
    EXPECT_EQ(r.req, reqs[i]);
  }
  // Finished requests left the index.
  args.skip_waiting = false;
  ASSERT_EQ(engine_.GetTransferStatus(args, results), hixl::SUCCESS);
  EXPECT_TRUE(results.empty());
  hixl::TransferStatus ts;
  EXPECT_EQ(engine_.GetTransferStatus(reqs[0], ts), hixl::PARAM_INVALID);
}

TEST_F(HixlTest, BatchStatusReportsFailedRequestsOnce) {
  StartPeer(RemoteTcpPeerEnv());
  Init({});
  const char *peer = peer_name_.c_str();
  ASSERT_EQ(engine_.Connect(peer, 5000), hixl::SUCCESS);
  ASSERT_TRUE(StopProcess(peer_->pid()));
  hixl::TransferArgs args;
  int tag = 9;
  args.user_data = &tag;
  hixl::TransferReq r = nullptr;
  const std::vector<hixl::TransferOpDesc> d(16, {local_.addr(), remote_, 4u << 20});
  ASSERT_EQ(engine_.TransferAsync(peer, hixl::WRITE, d, args, r), hixl::SUCCESS);
  ASSERT_EQ(engine_.Disconnect(peer, 500), hixl::SUCCESS);
  std::vector<hixl::TransferResult> results;
  ASSERT_EQ(engine_.GetTransferStatus(hixl::GetTransferStatusArgs{}, results), hixl::SUCCESS);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, hixl::TransferStatus::FAILED);
  EXPECT_EQ(results[0].user_data, &tag);
  ASSERT_EQ(engine_.GetTransferStatus(hixl::GetTransferStatusArgs{}, results), hixl::SUCCESS);
  EXPECT_TRUE(results.empty());
  peer_->Signal(SIGCONT);
}

}  // namespace
