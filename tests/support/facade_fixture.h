// FacadeTest<Api>: a GoogleTest typed fixture that runs one test body against
// both public facades over the one engine, adxl::AdxlEngine and hixl::Hixl.
// Like PeerTest (mp_fixture.h): a peer engine in a separate adxl_test_peer
// process listening on a free loopback port with a registered, pattern-filled
// host buffer; the engine under test lives in the test process, client only,
// and is initialized by the test with the options it needs (Init()).
#ifndef ADXL_TESTS_SUPPORT_FACADE_FIXTURE_H_
#define ADXL_TESTS_SUPPORT_FACADE_FIXTURE_H_

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "hixl/hixl.h"
#include "mp_fixture.h"

namespace adxl_test {

struct AdxlApi {
  using Engine = adxl::AdxlEngine;
  using MemDesc = adxl::MemDesc;
  using TransferArgs = adxl::TransferArgs;
  static const char *BufferPoolKey() { return adxl::OPTION_BUFFER_POOL; }
  static const char *AutoConnectKey() { return adxl::OPTION_AUTO_CONNECT; }
};

struct HixlApi {
  using Engine = hixl::Hixl;
  using MemDesc = hixl::MemDesc;
  using TransferArgs = hixl::TransferArgs;
  static const char *BufferPoolKey() { return hixl::OPTION_BUFFER_POOL; }
  static const char *AutoConnectKey() { return hixl::OPTION_AUTO_CONNECT; }
};

struct FacadeNames {
  template <typename T>
  static std::string GetName(int) {
    return std::is_same<T, AdxlApi>::value ? "Adxl" : "Hixl";
  }
};

using Facades = ::testing::Types<AdxlApi, HixlApi>;

template <typename Api>
class FacadeTest : public ::testing::Test {
 protected:
  using Options = std::map<adxl::AscendString, adxl::AscendString>;
  static constexpr size_t kRemoteSize = 4u << 20;
  static constexpr size_t kLocalSize = 4u << 20;
  static constexpr const char *kHeartbeatMs = "200";

  void SetUp() override { StartPeer({}); }

  // (Re)starts the peer process (env entries like "UCX_TLS=tcp"), listening
  // on `port` (0: a free one).
  void StartPeer(const std::vector<std::string> &env, uint16_t port = 0) {
    peer_ = std::make_unique<PeerProcess>(env);
    const std::string args = std::string("adxl.HeartbeatMs=") + kHeartbeatMs;
    if (port == 0) {
      peer_name_ = InitOnFreePort(*peer_, args);
      ASSERT_NE(peer_name_, "") << "the peer could not initialize";
    } else {
      peer_name_ = LoopbackName(port);
      ASSERT_EQ(peer_->Command("init " + peer_name_ + " " + args), "ok");
    }
    auto a = peer_->Ok("alloc " + std::to_string(kRemoteSize));
    ASSERT_EQ(a.size(), 2u);
    remote_ = std::stoull(a[1]);
    ASSERT_EQ(peer_->Ok("reg 0").size(), 1u);
    ASSERT_EQ(peer_->Command("fill 0 1"), "ok");
  }

  // Initializes the engine under test with `extra` options (plus a short
  // heartbeat) and registers local_.
  void Init(const Options &extra) {
    Options o = extra;
    o["adxl.HeartbeatMs"] = kHeartbeatMs;
    ASSERT_EQ(engine_.Initialize("127.0.0.1", o), adxl::SUCCESS);
    typename Api::MemDesc d{};
    d.addr = local_.addr();
    d.len = local_.size();
    ASSERT_EQ(engine_.RegisterMem(d, adxl::MEM_HOST, local_handle_), adxl::SUCCESS);
  }

  // TransferSync to the peer; every TIMEOUT it returns is checked to come on
  // time (docs/contract.md §6.4, TimeoutCameOnTime in timeout_checks.h).
  adxl::Status Sync(adxl::TransferOp op, const std::vector<adxl::TransferOpDesc> &d, int32_t timeout_ms = 5000) {
    const auto t0 = std::chrono::steady_clock::now();
    const adxl::Status st = engine_.TransferSync(peer_name_.c_str(), op, d, timeout_ms);
    const double ms = MsSince(t0);
    if (st == adxl::TIMEOUT) {
      EXPECT_TRUE(TimeoutCameOnTime(ms, timeout_ms));
    }
    return st;
  }

  // The same with HIXL's own types (distinct from ADXL's, as the vendor's):
  // only a Hixl fixture calls it.
  adxl::Status Sync(hixl::TransferOp op, const std::vector<hixl::TransferOpDesc> &d, int32_t timeout_ms = 5000) {
    const auto t0 = std::chrono::steady_clock::now();
    const adxl::Status st = engine_.TransferSync(peer_name_.c_str(), op, d, timeout_ms);
    const double ms = MsSince(t0);
    if (st == adxl::TIMEOUT) {
      EXPECT_TRUE(TimeoutCameOnTime(ms, timeout_ms));
    }
    return st;
  }

  uint64_t RemoteHash(size_t off, size_t len) {
    auto w = peer_->Ok("hash 0 " + std::to_string(off) + " " + std::to_string(len));
    return w.empty() ? 0 : std::stoull(w[0]);
  }

  // Polls an async request until it leaves WAITING (or 10 s pass).
  adxl::TransferStatus WaitFor(adxl::TransferReq req) {
    adxl::TransferStatus st = adxl::TransferStatus::WAITING;
    const auto t0 = std::chrono::steady_clock::now();
    while (MsSince(t0) < 10000) {
      if (engine_.GetTransferStatus(req, st) != adxl::SUCCESS || st != adxl::TransferStatus::WAITING) break;
    }
    return st;
  }

  AlignedBuffer local_{kLocalSize};
  typename Api::Engine engine_;
  adxl::MemHandle local_handle_ = nullptr;
  std::unique_ptr<PeerProcess> peer_;
  std::string peer_name_;
  uintptr_t remote_ = 0;
};

// SIGSTOPs a process and waits until it is stopped (kill() only queues the
// signal; a busy peer may run on for a moment).
inline bool StopProcess(pid_t pid) {
  kill(pid, SIGSTOP);
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  for (int i = 0; i < 2000; ++i) {
    FILE *f = fopen(path.c_str(), "r");
    if (f == nullptr) return false;
    char buf[512] = {};
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    const char *paren = strrchr(buf, ')');  // "pid (comm) S ..."
    if (n > 0 && paren != nullptr && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't')) return true;
    usleep(1000);
  }
  return false;
}

// A peer on "another host" over TCP: the network lane, which without an RDMA
// device moves bytes by active-message rendezvous (plugin/ucx, README
// "ADXL_UCX_RDMA_PROTOCOL"); that needs the target to progress, so a stopped
// target keeps transfers waiting.
inline const std::vector<std::string> &RemoteTcpPeerEnv() {
  static const std::vector<std::string> env = {"ADXL_NODE_ID=another-host", "UCX_TLS=tcp"};
  return env;
}

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_FACADE_FIXTURE_H_
