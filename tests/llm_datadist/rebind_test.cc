// CacheManager::Rebind (cache_manager.h, rebind.cc) against a real peer in
// another process: a move whose re-registration with its fresh engine fails
// part-way deregisters what it had registered there without the manager's
// locks, since DeregisterMem waits for the acknowledgements of the peers
// that heard of the region.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "adxl/adxl_engine.h"
#include "cache_manager.h"
#include "child_guard.h"
#include "free_port.h"

namespace llm_datadist::internal {
namespace {

using adxl_test::ChildGuard;
using adxl_test::FreePort;
using adxl_test::LoopbackName;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kCluster = 1;

// One host tensor of 4 x 8 fp16 (64 bytes) per cache.
struct Tensor {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(64);
  std::vector<uintptr_t> addrs() { return {reinterpret_cast<uintptr_t>(bytes.data())}; }
  static CacheDesc desc() {
    CacheDesc d;
    d.num_tensors = 1;
    d.shape = {4, 8};
    d.data_type = DataType::DT_FLOAT16;
    d.placement = Placement::HOST;
    return d;
  }
};

// A client engine that connects to `name` once the parent says so (from
// then on it hears of every region registered there), says it is
// connected, and then only waits (the parent stops it).
int RunConnectingPeer(const std::string &name, int up, int down) {
  char go = 0;
  if (read(down, &go, 1) != 1) return 40;
  adxl::AdxlEngine e;
  if (e.Initialize("127.0.0.1", {}) != adxl::SUCCESS) return 41;
  if (e.Connect(name.c_str(), 3000) != adxl::SUCCESS) return 42;
  if (write(up, &go, 1) != 1) return 43;
  if (read(down, &go, 1) != 1) return 44;
  return 0;
}

long Ms(Clock::duration d) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

// The fresh engine allows one registration (adxl.MaxRegistrations 1), so the
// second of two caches is refused after the first was registered there; a
// peer connected to the fresh engine (in the window Rebind leaves after the
// engine started) and then stopped makes the deregistration of that first
// registration wait ~1 s.  The calls that take the manager's locks meanwhile
// (Generation: Impl::mu; RegisteredAddrCount: LocalCaches::mu) do not wait
// for it, and the manager keeps its engine and caches.
TEST(Rebind, AFailedReRegistrationDeregistersWithoutTheLocks) {
  const std::string moved = LoopbackName(FreePort());
  int up[2], down[2];
  ASSERT_EQ(pipe(up), 0);
  ASSERT_EQ(pipe(down), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(up[0]);
    close(down[1]);
    _exit(RunConnectingPeer(moved, up[1], down[0]));
  }
  ChildGuard guard(child);
  close(up[1]);
  close(down[0]);
  CacheManager m;
  ASSERT_EQ(m.Initialize(kCluster, "127.0.0.1"), LLM_SUCCESS);
  Tensor t1, t2;
  Cache c1, c2;
  ASSERT_EQ(m.RegisterCache(Tensor::desc(), t1.addrs(), {}, true, c1), LLM_SUCCESS);
  ASSERT_EQ(m.RegisterCache(Tensor::desc(), t2.addrs(), {}, true, c2), LLM_SUCCESS);
  std::atomic<bool> stopped{false};
  rebind_window_for_test = [&] {
    char go = 1;
    if (write(down[1], &go, 1) != 1 || read(up[0], &go, 1) != 1) return;  // connected to the fresh engine
    int st = 0;  // stopped for sure (kill only sends): it acknowledges nothing from here on
    if (kill(child, SIGSTOP) != 0 || waitpid(child, &st, WUNTRACED) != child || !WIFSTOPPED(st)) return;
    stopped = true;
  };
  std::atomic<bool> done{false};
  Status s = LLM_SUCCESS;
  std::thread rebind([&] {
    s = m.Rebind(moved, {{adxl::AscendString("adxl.MaxRegistrations"), adxl::AscendString("1")}}, "SetRole");
    done = true;
  });
  const auto start = Clock::now();
  while (!stopped && !done && Clock::now() - start < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Clock::duration slowest{};
  const auto re_registration = Clock::now();
  while (!done) {
    const auto t0 = Clock::now();
    EXPECT_NE(m.Generation(), 0u);
    EXPECT_EQ(m.RegisteredAddrCount(), 2u);
    slowest = std::max(slowest, Clock::now() - t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  rebind.join();
  const auto took = Clock::now() - re_registration;
  rebind_window_for_test = nullptr;
  ASSERT_TRUE(stopped) << "the premise: the peer connected to the fresh engine and was stopped";
  EXPECT_NE(s, LLM_SUCCESS);
  EXPECT_GE(Ms(took), 500) << "the premise: the deregistration waited for the stopped peer";
  EXPECT_LT(Ms(slowest), 300) << "a call waited for the failed move's deregistration";
  // Nothing moved: the old engine keeps both caches under their ids.
  EXPECT_EQ(m.RegisteredAddrCount(), 2u);
  Cache got;
  EXPECT_EQ(m.GetCache(c2.cache_id, got), LLM_SUCCESS);
  guard.Kill();
  EXPECT_EQ(m.UnregisterCache(c1.cache_id), LLM_SUCCESS);
  EXPECT_EQ(m.UnregisterCache(c2.cache_id), LLM_SUCCESS);
  m.Finalize();
  close(up[0]);
  close(down[1]);
}

}  // namespace
}  // namespace llm_datadist::internal
