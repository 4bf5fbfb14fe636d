// ConnectPool (src/facade/connect_pool.h) with fake connect / disconnect operations:
// queue bound, per-remote order, parallelism across remotes, latest
// submission wins, reconciliation with the engine's links, Stop().
#include "facade/connect_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using adxl::ConnectPool;
using hixl::AsyncConnectStatus;

namespace {

// Fake engine: operations block on a gate per remote and record their order.
class FakeEngine {
 public:
  ConnectPool::Ops Ops() {
    ConnectPool::Ops ops;
    ops.connect = [this](const std::string &r, int32_t) { return Run(r, "connect"); };
    ops.disconnect = [this](const std::string &r, int32_t) { return Run(r, "disconnect"); };
    ops.probe = [this](const std::string &r) {
      std::lock_guard<std::mutex> l(mu_);
      return linked_.count(r) != 0 ? ConnectPool::LinkProbe::kConnected : ConnectPool::LinkProbe::kNone;
    };
    return ops;
  }
  void Block(const std::string &r) {
    std::lock_guard<std::mutex> l(mu_);
    blocked_.insert(r);
  }
  void Unblock(const std::string &r) {
    {
      std::lock_guard<std::mutex> l(mu_);
      blocked_.erase(r);
    }
    cv_.notify_all();
  }
  void FailConnects(const std::string &r) {
    std::lock_guard<std::mutex> l(mu_);
    failing_.insert(r);
  }
  void DropLink(const std::string &r) {
    std::lock_guard<std::mutex> l(mu_);
    linked_.erase(r);
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> l(mu_);
    return log_;
  }
  int max_running() const { return max_running_.load(); }

 private:
  adxl::Status Run(const std::string &r, const std::string &what) {
    std::unique_lock<std::mutex> l(mu_);
    int now = ++running_;
    if (now > max_running_) max_running_ = now;
    log_.push_back(what + " " + r);
    cv_.wait(l, [&] { return blocked_.count(r) == 0; });
    --running_;
    if (what == "disconnect") {
      if (linked_.erase(r) == 0) return adxl::NOT_CONNECTED;
      return adxl::SUCCESS;
    }
    if (failing_.count(r) != 0) return adxl::FAILED;
    if (!linked_.insert(r).second) return adxl::ALREADY_CONNECTED;
    return adxl::SUCCESS;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> blocked_, failing_, linked_;
  std::vector<std::string> log_;
  int running_ = 0;
  std::atomic<int> max_running_{0};
};

AsyncConnectStatus WaitFor(ConnectPool &p, const std::string &r, AsyncConnectStatus want) {
  const auto t0 = std::chrono::steady_clock::now();
  AsyncConnectStatus st = p.Get(r);
  while (st != want && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    st = p.Get(r);
  }
  return st;
}

TEST(ConnectPool, StatesOfOneConnectAndDisconnect) {
  FakeEngine e;
  ConnectPool p(e.Ops(), 2, 128);
  EXPECT_EQ(p.Get("a"), AsyncConnectStatus::NOT_CONNECT);
  e.Block("a");
  ASSERT_EQ(p.Submit("a", true, 1000), adxl::SUCCESS);
  EXPECT_EQ(WaitFor(p, "a", AsyncConnectStatus::CONNECTING), AsyncConnectStatus::CONNECTING);
  e.Unblock("a");
  EXPECT_EQ(WaitFor(p, "a", AsyncConnectStatus::CONNECTED), AsyncConnectStatus::CONNECTED);
  EXPECT_EQ(p.GetAll().size(), 1u);
  e.Block("a");
  ASSERT_EQ(p.Submit("a", false, 1000), adxl::SUCCESS);
  EXPECT_EQ(WaitFor(p, "a", AsyncConnectStatus::DISCONNECTING), AsyncConnectStatus::DISCONNECTING);
  e.Unblock("a");
  EXPECT_EQ(WaitFor(p, "a", AsyncConnectStatus::NOT_CONNECT), AsyncConnectStatus::NOT_CONNECT);
  EXPECT_TRUE(p.GetAll().empty());
}

TEST(ConnectPool, FailedConnectStaysConnectFailed) {
  FakeEngine e;
  ConnectPool p(e.Ops(), 1, 8);
  e.FailConnects("x");
  ASSERT_EQ(p.Submit("x", true, 1000), adxl::SUCCESS);
  EXPECT_EQ(WaitFor(p, "x", AsyncConnectStatus::CONNECT_FAILED), AsyncConnectStatus::CONNECT_FAILED);
  EXPECT_EQ(p.GetAll().at("x"), AsyncConnectStatus::CONNECT_FAILED);
}

TEST(ConnectPool, QueueBoundCountsWaitingTasksOnly) {
  FakeEngine e;
  ConnectPool p(e.Ops(), 1, 2);
  e.Block("a");
  ASSERT_EQ(p.Submit("a", true, 1000), adxl::SUCCESS);
  ASSERT_EQ(WaitFor(p, "a", AsyncConnectStatus::CONNECTING), AsyncConnectStatus::CONNECTING);
  EXPECT_EQ(p.Submit("b", true, 1000), adxl::SUCCESS);
  EXPECT_EQ(p.Submit("c", true, 1000), adxl::SUCCESS);
  EXPECT_EQ(p.Submit("d", true, 1000), adxl::RESOURCE_EXHAUSTED);
  EXPECT_EQ(p.Get("d"), AsyncConnectStatus::NOT_CONNECT);  // a refused task leaves no trace
  e.Unblock("a");
  EXPECT_EQ(WaitFor(p, "c", AsyncConnectStatus::CONNECTED), AsyncConnectStatus::CONNECTED);
  EXPECT_EQ(p.Submit("d", true, 1000), adxl::SUCCESS);  // room again
}

TEST(ConnectPool, OneRemoteInOrderLatestSubmissionWins) {
  FakeEngine e;
  ConnectPool p(e.Ops(), 4, 16);
  e.Block("r");
  ASSERT_EQ(p.Submit("r", true, 1000), adxl::SUCCESS);
  ASSERT_EQ(WaitFor(p, "r", AsyncConnectStatus::CONNECTING), AsyncConnectStatus::CONNECTING);
  ASSERT_EQ(p.Submit("r", false, 1000), adxl::SUCCESS);
  EXPECT_EQ(p.Get("r"), AsyncConnectStatus::DISCONNECT_PENDING);  // not overwritten by the running connect
  ASSERT_EQ(p.Submit("r", true, 1000), adxl::SUCCESS);
  EXPECT_EQ(p.Get("r"), AsyncConnectStatus::CONNECT_PENDING);
  e.Unblock("r");
  EXPECT_EQ(WaitFor(p, "r", AsyncConnectStatus::CONNECTED), AsyncConnectStatus::CONNECTED);
  EXPECT_EQ(e.log(), (std::vector<std::string>{"connect r", "disconnect r", "connect r"}));
  EXPECT_EQ(e.max_running(), 1);  // never two tasks of one remote at once
}

TEST(ConnectPool, DifferentRemotesRunInParallel) {
  FakeEngine e;
  ConnectPool p(e.Ops(), 2, 16);
  e.Block("slow");
  ASSERT_EQ(p.Submit("slow", true, 1000), adxl::SUCCESS);
  ASSERT_EQ(p.Submit("fast", true, 1000), adxl::SUCCESS);
  EXPECT_EQ(WaitFor(p, "fast", AsyncConnectStatus::CONNECTED), AsyncConnectStatus::CONNECTED);
  EXPECT_EQ(p.Get("slow"), AsyncConnectStatus::CONNECTING);
  e.Unblock("slow");
  EXPECT_EQ(WaitFor(p, "slow", AsyncConnectStatus::CONNECTED), AsyncConnectStatus::CONNECTED);
}

TEST(ConnectPool, ALinkGoneSinceLeavesTheMap) {
  FakeEngine e;
  ConnectPool p(e.Ops(), 1, 4);
  ASSERT_EQ(p.Submit("a", true, 1000), adxl::SUCCESS);
  ASSERT_EQ(WaitFor(p, "a", AsyncConnectStatus::CONNECTED), AsyncConnectStatus::CONNECTED);
  e.DropLink("a");  // e.g. a sync Disconnect
  EXPECT_EQ(p.Get("a"), AsyncConnectStatus::NOT_CONNECT);
  EXPECT_TRUE(p.GetAll().empty());
}

TEST(ConnectPool, StopDropsQueuedTasksAndRefusesNewOnes) {
  FakeEngine e;
  auto p = std::make_unique<ConnectPool>(e.Ops(), 1, 8);
  e.Block("a");
  ASSERT_EQ(p->Submit("a", true, 1000), adxl::SUCCESS);
  ASSERT_EQ(WaitFor(*p, "a", AsyncConnectStatus::CONNECTING), AsyncConnectStatus::CONNECTING);
  ASSERT_EQ(p->Submit("b", true, 1000), adxl::SUCCESS);
  std::thread unblock([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    e.Unblock("a");
  });
  p->Stop();  // waits for the running task, drops "b"
  unblock.join();
  EXPECT_EQ(e.log(), std::vector<std::string>{"connect a"});
  EXPECT_EQ(p->Submit("c", true, 1000), adxl::FAILED);
  EXPECT_TRUE(p->GetAll().empty());
}

}  // namespace
