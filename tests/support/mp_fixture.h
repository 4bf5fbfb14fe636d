// PeerTest: a GoogleTest fixture with one engine in the test process (client
// only, "127.0.0.1") and one engine in a separate adxl_test_peer process
// (listening on a free loopback port), each with a registered host buffer.
#ifndef ADXL_TESTS_SUPPORT_MP_FIXTURE_H_
#define ADXL_TESTS_SUPPORT_MP_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "adxl/adxl_engine.h"
#include "pattern.h"
#include "peer_process.h"
#include "time_scale.h"
#include "timeout_checks.h"

namespace adxl_test {

// Page-aligned heap buffer.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t len) : len_(len) {
    void *p = nullptr;
    if (posix_memalign(&p, 4096, len) == 0) ptr_ = static_cast<uint8_t *>(p);
  }
  ~AlignedBuffer() { free(ptr_); }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  uint8_t *data() const { return ptr_; }
  uintptr_t addr() const { return reinterpret_cast<uintptr_t>(ptr_); }
  size_t size() const { return len_; }

 private:
  uint8_t *ptr_ = nullptr;
  size_t len_;
};

inline double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Polls `pred` every `poll_ms` until it holds or `timeout_ms` passed; returns
// whether it held (checked once more at the end).  For tests that wait for
// something to happen: they pass as soon as it did, and fail only at a
// generous bound instead of after a guessed fixed sleep.
template <typename Pred>
bool WaitUntil(Pred pred, double timeout_ms, int poll_ms = 5) {
  const auto t0 = std::chrono::steady_clock::now();
  while (MsSince(t0) < timeout_ms) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
  return pred();
}

class PeerTest : public ::testing::Test {
 protected:
  static constexpr size_t kRemoteSize = 4u << 20;
  static constexpr size_t kLocalSize = 4u << 20;
  static constexpr const char *kHeartbeatMs = "200";

  void SetUp() override { StartPeer({}); }

  // (Re)starts the peer process; env entries like "UCX_TLS=tcp".
  void StartPeer(const std::vector<std::string> &env) {
    peer_ = std::make_unique<PeerProcess>(env);
    peer_name_ = InitOnFreePort(*peer_, std::string("adxl.HeartbeatMs=") + kHeartbeatMs);
    ASSERT_NE(peer_name_, "") << "the peer could not initialize";
    auto a = peer_->Ok("alloc " + std::to_string(kRemoteSize));
    ASSERT_EQ(a.size(), 2u);
    remote_ = std::stoull(a[1]);
    auto r = peer_->Ok("reg 0");
    ASSERT_EQ(r.size(), 1u);
    remote_handle_ = r[0];
    ASSERT_EQ(peer_->Command("fill 0 1"), "ok");
    if (!engine_initialized_) {
      ASSERT_EQ(engine_.Initialize("127.0.0.1", {{"adxl.HeartbeatMs", kHeartbeatMs}}), adxl::SUCCESS);
      engine_initialized_ = true;
      ASSERT_EQ(engine_.RegisterMem({local_.addr(), local_.size()}, adxl::MEM_HOST, local_handle_), adxl::SUCCESS);
    }
  }

  adxl::Status Connect(int timeout_ms = 5000) { return engine_.Connect(peer_name_.c_str(), timeout_ms); }

  uint64_t RemoteHash(size_t off, size_t len) {
    auto w = peer_->Ok("hash 0 " + std::to_string(off) + " " + std::to_string(len));
    return w.empty() ? 0 : std::stoull(w[0]);
  }
  // Hash the remote buffer must have at [off, off+len) if it holds pattern
  // `seed` there (pattern indices count from the buffer start).
  static uint64_t PatternHash(uint64_t seed, size_t off, size_t len) {
    std::vector<uint8_t> v(len);
    FillPattern(v.data(), len, seed, off);
    return Hash(v.data(), len);
  }

  AlignedBuffer local_{kLocalSize};
  adxl::AdxlEngine engine_;
  bool engine_initialized_ = false;
  adxl::MemHandle local_handle_ = nullptr;
  std::unique_ptr<PeerProcess> peer_;
  std::string peer_name_;
  uintptr_t remote_ = 0;
  std::string remote_handle_;
};

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_MP_FIXTURE_H_
