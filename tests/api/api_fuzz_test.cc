// Random API fuzz: 100k random calls with a fixed seed on
// an engine linked to a peer process.  Every status is checked against the
// status the contract (docs/contract.md §4, §6) gives for that input, computed from a
// model of both sides' registrations; every local registration lies between
// PROT_NONE guard pages, so that any touch of memory outside a registration
// kills the process, and the peer's unregistered bytes are checked
// unchanged at the end.
//
// Environment: ADXL_API_FUZZ_CALLS (default 100000), ADXL_API_FUZZ_SEED
// (default 20240501).  The engine's ERROR lines (one per refused call) go to
// api_fuzz_engine.log in the working directory, not to the test output.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "pattern.h"
#include "peer_process.h"

using namespace adxl;
using namespace adxl_test;

namespace {

struct Range {
  uintptr_t addr;
  size_t len;
};

// Is every byte of [a, a+len) inside one of `regs`?  (Registrations never
// overlap, so the sorted union is walked once; adjacent ones join.)
bool Covered(const std::map<uintptr_t, size_t> &regs, uintptr_t a, size_t len) {
  if (len == 0 || a + len < a) return false;
  uintptr_t pos = a;
  const uintptr_t end = a + len;
  auto it = regs.upper_bound(pos);
  if (it == regs.begin()) return false;
  --it;
  while (true) {
    if (pos < it->first || pos >= it->first + it->second) return false;
    pos = it->first + it->second;
    if (pos >= end) return true;
    ++it;
    if (it == regs.end()) return false;
  }
}

uint64_t EnvU64(const char *name, uint64_t dflt) {
  const char *v = getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : dflt;
}

class ApiFuzz : public ::testing::Test {
 protected:
  static constexpr size_t kSlots = 16;          // local slots: [guard][kUsablePages][guard]
  static constexpr size_t kUsablePages = 4;
  static constexpr size_t kRemoteSlots = 8;     // remote slots: [gap][2 registered pages][gap]
  static constexpr size_t kMaxLiveRegs = 48;

  void SetUp() override {
    pg_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    slot_ = (kUsablePages + 2) * pg_;
    void *m = mmap(nullptr, kSlots * slot_ + pg_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    arena_ = static_cast<uint8_t *>(m);
    for (size_t s = 0; s <= kSlots; ++s) ASSERT_EQ(mprotect(arena_ + s * slot_, pg_, PROT_NONE), 0);
    for (size_t s = 0; s < kSlots; ++s) memset(Usable(s), 0x5a, kUsablePages * pg_);

    peer_ = std::make_unique<PeerProcess>();
    peer_name_ = LoopbackName(FreePort());
    ASSERT_EQ(peer_->Command("init " + peer_name_), "ok");
    auto a = peer_->Ok("alloc " + std::to_string(kRemoteSlots * 4 * pg_));
    ASSERT_EQ(a.size(), 2u);
    remote_base_ = std::stoull(a[1]);
    ASSERT_EQ(peer_->Command("fill 0 3"), "ok");
    for (size_t s = 0; s < kRemoteSlots; ++s) {
      remote_handle_.push_back("");
      ToggleRemote(s);
    }

    // The engine's ERROR lines go to a file while the fuzz runs.
    log_path_ = "api_fuzz_engine.log";
    fflush(stderr);
    saved_stderr_ = dup(2);
    FILE *f = fopen(log_path_.c_str(), "w");
    ASSERT_NE(f, nullptr);
    dup2(fileno(f), 2);
    fclose(f);
    printf("engine log: %s\n", log_path_.c_str());
    // No buffer pool: an unregistered local range is then PARAM_INVALID
    // (with a pool, TransferSync would stage it: docs/contract.md §6.2).
    ASSERT_EQ(engine_.Initialize("127.0.0.1", {{"adxl.BufferPool", "0:0"}}), SUCCESS);
    ASSERT_EQ(engine_.Connect(peer_name_.c_str(), 5000), SUCCESS);
  }
  void TearDown() override {
    engine_.Finalize();
    if (saved_stderr_ >= 0) {
      fflush(stderr);
      dup2(saved_stderr_, 2);
      close(saved_stderr_);
    }
    if (arena_ != nullptr) munmap(arena_, kSlots * slot_ + pg_);
  }

  uint8_t *Usable(size_t s) const { return arena_ + s * slot_ + pg_; }
  uintptr_t RemoteSlotReg(size_t s) const { return remote_base_ + s * 4 * pg_ + pg_; }

  void ToggleRemote(size_t s) {
    if (remote_handle_[s].empty()) {
      auto r = peer_->Ok("reg 0 " + std::to_string(s * 4 * pg_ + pg_) + " " + std::to_string(2 * pg_));
      ASSERT_EQ(r.size(), 1u);
      remote_handle_[s] = r[0];
      remote_regs_[RemoteSlotReg(s)] = 2 * pg_;
    } else {
      ASSERT_EQ(peer_->Command("dereg " + remote_handle_[s]), "ok");
      remote_handle_[s].clear();
      remote_regs_.erase(RemoteSlotReg(s));
    }
  }

  size_t R(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }
  bool P(int percent) { return R(100) < static_cast<size_t>(percent); }

  // Overlaps some live local registration?
  bool Overlaps(uintptr_t a, size_t len) const {
    for (const auto &kv : local_regs_) {
      if (a < kv.first + kv.second && kv.first < a + len) return true;
    }
    return false;
  }

  // A random address for `len` bytes on one side: inside a registration, just
  // outside one (crossing an edge by 1..16 bytes), in an unregistered gap, a
  // stale registration, an overflowing address, or zero.
  uintptr_t PickAddr(const std::map<uintptr_t, size_t> &regs, const std::vector<Range> &stale,
                     const std::vector<Range> &space, size_t len) {
    const size_t k = R(100);
    if (k < 50 && !regs.empty()) {
      auto it = regs.begin();
      std::advance(it, R(regs.size()));
      if (it->second >= len) return it->first + R(it->second - len + 1);
      return it->first;  // too long for it: not covered unless it runs into a neighbour
    }
    if (k < 70 && !regs.empty()) {
      auto it = regs.begin();
      std::advance(it, R(regs.size()));
      const size_t d = 1 + R(16);
      if (P(50)) return it->first - d;                    // starts d bytes before
      return it->first + it->second + d - std::min(len, it->second + d);  // ends up to d bytes after
    }
    if (k < 80 && !stale.empty()) {
      const Range &s = stale[R(stale.size())];
      return s.addr + (s.len > len ? R(s.len - len + 1) : 0);
    }
    if (k < 92) {
      const Range &s = space[R(space.size())];
      return s.addr + R(s.len);
    }
    if (k < 97) return UINTPTR_MAX - R(2 * len + 2);
    return 0;
  }

  size_t PickLen() {
    const size_t k = R(100);
    if (k < 60) return 1 + R(256);
    if (k < 85) return 1 + R(2 * pg_);
    if (k < 92) return 1 + R(8 * pg_);
    if (k < 96) return SIZE_MAX - R(4096);  // overflowing
    if (k < 98) return static_cast<size_t>(1) << (40 + R(20));
    return 0;
  }

  void Fail(const std::string &what) {
    ADD_FAILURE() << "call " << calls_ << ": " << what;
    ++failures_;
  }

  void CheckStatus(const char *api, Status got, Status want, const std::string &detail) {
    ++calls_;
    if (got != want) Fail(std::string(api) + " returned " + std::to_string(got) + ", contract says " +
                          std::to_string(want) + " (" + detail + ")");
  }

  // Polls every outstanding async request to its end.
  void Drain() {
    for (int round = 0; round < 100000 && !reqs_.empty(); ++round) {
      for (size_t i = 0; i < reqs_.size();) {
        TransferStatus st = TransferStatus::WAITING;
        Status s = engine_.GetTransferStatus(reqs_[i], st);
        ++calls_;
        if (s != SUCCESS) {
          Fail("GetTransferStatus of a live request: " + std::to_string(s));
          reqs_.erase(reqs_.begin() + static_cast<long>(i));
        } else if (st == TransferStatus::WAITING) {
          ++i;
        } else {
          if (st != TransferStatus::COMPLETED) Fail("async request ended " + std::to_string(static_cast<int>(st)));
          stale_reqs_.push_back(reqs_[i]);
          reqs_.erase(reqs_.begin() + static_cast<long>(i));
        }
      }
    }
    if (!reqs_.empty()) Fail("async requests never finished");
  }

  // The link still moves bytes right: a round trip through a valid remote range.
  void VerifyRoundTrip() {
    if (local_regs_.empty() || remote_regs_.empty()) return;
    auto l = local_regs_.begin();
    std::advance(l, R(local_regs_.size()));
    auto r = remote_regs_.begin();
    std::advance(r, R(remote_regs_.size()));
    const size_t len = std::min(l->second, r->second);
    uint8_t *p = reinterpret_cast<uint8_t *>(l->first);
    FillPattern(p, len, rng_());
    const uint64_t h = Hash(p, len);
    ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), WRITE, {{l->first, r->first, len}}, 5000), SUCCESS);
    memset(p, 0, len);
    ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, {{l->first, r->first, len}}, 5000), SUCCESS);
    EXPECT_EQ(Hash(p, len), h) << "round trip corrupted bytes";
    auto w = peer_->Ok("hash 0 " + std::to_string(r->first - remote_base_) + " " + std::to_string(len));
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(std::stoull(w[0]), h);
    ++verified_;
  }

  void OneCall() {
    const size_t k = R(100);
    if (k < 10) {  // RegisterMem
      uintptr_t a;
      size_t len;
      if (P(25) && !local_regs_.empty()) {  // identical to a live one: the same handle, one more reference
        auto it = local_regs_.begin();
        std::advance(it, R(local_regs_.size()));
        a = it->first;
        len = it->second;
      } else if (P(8)) {  // invalid ranges
        const size_t c = R(3);
        a = c == 0 ? 0 : c == 1 ? reinterpret_cast<uintptr_t>(Usable(0)) : UINTPTR_MAX - 10;
        len = c == 1 ? 0 : 4096;
      } else {
        const size_t s = R(kSlots);
        const size_t off = R(kUsablePages * pg_);
        a = reinterpret_cast<uintptr_t>(Usable(s)) + off;
        len = 1 + R(kUsablePages * pg_ - off);
      }
      const bool bad_type = P(3);
      const MemType type = bad_type ? static_cast<MemType>(2 + R(5)) : MEM_HOST;
      Status want;
      auto same = local_regs_.find(a);
      const bool identical = same != local_regs_.end() && same->second == len;
      if (a == 0 || len == 0 || a + len < a || bad_type) {
        want = PARAM_INVALID;
      } else if (identical) {
        want = SUCCESS;
      } else if (Overlaps(a, len)) {
        want = PARAM_INVALID;
      } else if (local_regs_.size() >= kMaxLiveRegs) {
        return;  // keep well under adxl.MaxRegistrations
      } else {
        want = SUCCESS;
      }
      MemHandle h = nullptr;
      Status got = engine_.RegisterMem({a, len}, type, h);
      CheckStatus("RegisterMem", got, want, "range " + std::to_string(len) + " bytes");
      if (got == SUCCESS && want == SUCCESS) {
        if (identical) {
          if (h != handle_of_[a]) Fail("identical registration got another handle");
          ++refs_[h];
        } else {
          local_regs_[a] = len;
          handle_of_[a] = h;
          refs_[h] = 1;
          range_of_[h] = {a, len};
        }
      }
    } else if (k < 18) {  // DeregisterMem: live, stale, bogus, null
      const size_t c = R(10);
      MemHandle h = nullptr;
      Status want = SUCCESS;
      if (c < 6 && !refs_.empty()) {
        auto it = refs_.begin();
        std::advance(it, R(refs_.size()));
        h = it->first;
      } else if (c < 8 && !stale_handles_.empty()) {
        h = stale_handles_[R(stale_handles_.size())];
        if (refs_.count(h) != 0) return;  // ids are never reused, but be safe
      } else if (c < 9) {
        h = reinterpret_cast<MemHandle>(static_cast<uintptr_t>(0xdead0000u + R(1000)));
        if (refs_.count(h) != 0) return;
      } else {
        want = PARAM_INVALID;  // null handle
      }
      Drain();  // a transfer in flight may still use the region (that is allowed, but keep the model simple)
      CheckStatus("DeregisterMem", engine_.DeregisterMem(h), want, "handle");
      auto it = refs_.find(h);
      if (h != nullptr && it != refs_.end() && --it->second == 0) {
        const Range r = range_of_[h];
        local_regs_.erase(r.addr);
        handle_of_.erase(r.addr);
        range_of_.erase(h);
        refs_.erase(it);
        stale_handles_.push_back(h);
        local_stale_.push_back(r);
      }
    } else if (k < 20) {  // GetTransferStatus of stale and bogus requests
      TransferReq req = !stale_reqs_.empty() && P(70) ? stale_reqs_[R(stale_reqs_.size())]
                                                      : reinterpret_cast<TransferReq>(static_cast<uintptr_t>(0xbad0000u + R(99)));
      TransferStatus st;
      CheckStatus("GetTransferStatus", engine_.GetTransferStatus(req, st), PARAM_INVALID, "stale request");
    } else {  // TransferSync / TransferAsync
      const bool async = P(25);
      const TransferOp op = P(3) ? static_cast<TransferOp>(2 + R(100)) : (P(50) ? READ : WRITE);
      const size_t n = P(5) ? 0 : 1 + R(P(80) ? 1 : 6);
      std::vector<TransferOpDesc> d;
      bool zero = false, covered = true;
      for (size_t i = 0; i < n; ++i) {
        const size_t len = PickLen();
        const uintptr_t la = PickAddr(local_regs_, local_stale_, local_space_, len);
        const uintptr_t ra = PickAddr(remote_regs_, remote_stale_, remote_space_, len);
        d.push_back({la, ra, len});
        if (la == 0 || ra == 0 || len == 0) zero = true;
        if (!Covered(local_regs_, la, len) || !Covered(remote_regs_, ra, len)) covered = false;
      }
      const bool unknown_peer = P(3);
      const int32_t timeout = !async && P(3) ? -static_cast<int32_t>(R(2)) : 5000;
      Status want;
      if (!async && timeout <= 0) {
        want = PARAM_INVALID;
      } else if (op != READ && op != WRITE) {
        want = PARAM_INVALID;
      } else if (d.empty() || zero) {
        want = PARAM_INVALID;
      } else if (unknown_peer) {
        want = NOT_CONNECTED;
      } else if (!covered) {
        want = PARAM_INVALID;
      } else {
        want = SUCCESS;
      }
      const std::string remote = unknown_peer ? LoopbackName(1) : peer_name_;
      std::string detail = std::to_string(d.size()) + " descriptors";
      if (async) {
        if (reqs_.size() >= 8) Drain();
        TransferReq req = nullptr;
        Status got = engine_.TransferAsync(remote.c_str(), op, d, TransferArgs{}, req);
        CheckStatus("TransferAsync", got, want, detail);
        if (got == SUCCESS) reqs_.push_back(req);
      } else {
        CheckStatus("TransferSync", engine_.TransferSync(remote.c_str(), op, d, timeout), want, detail);
      }
      if (want == SUCCESS) ++moved_;
    }
  }

  size_t pg_ = 4096, slot_ = 0;
  uint8_t *arena_ = nullptr;
  std::unique_ptr<PeerProcess> peer_;
  std::string peer_name_;
  uintptr_t remote_base_ = 0;
  std::vector<std::string> remote_handle_;
  std::map<uintptr_t, size_t> remote_regs_;
  std::vector<Range> remote_stale_, remote_space_;
  std::map<uintptr_t, size_t> local_regs_;
  std::map<uintptr_t, MemHandle> handle_of_;
  std::map<MemHandle, int> refs_;
  std::map<MemHandle, Range> range_of_;
  std::vector<MemHandle> stale_handles_;
  std::vector<Range> local_stale_, local_space_;
  std::vector<TransferReq> reqs_, stale_reqs_;
  AdxlEngine engine_;
  std::mt19937_64 rng_;
  std::string log_path_;
  int saved_stderr_ = -1;
  uint64_t calls_ = 0, moved_ = 0, verified_ = 0, failures_ = 0;
};

TEST_F(ApiFuzz, RandomCallsGetTheStatusTheContractGivesAndNeverTouchGuardPages) {
  const uint64_t n = EnvU64("ADXL_API_FUZZ_CALLS", 100000);
  const uint64_t seed = EnvU64("ADXL_API_FUZZ_SEED", 20240501);
  rng_.seed(seed);
  for (size_t s = 0; s < kSlots; ++s) {
    // Whole slots, guards included: the fuzz aims just outside registrations.
    local_space_.push_back({reinterpret_cast<uintptr_t>(Usable(s)) - pg_, (kUsablePages + 2) * pg_});
  }
  for (size_t s = 0; s < kRemoteSlots; ++s) {
    remote_space_.push_back({remote_base_ + s * 4 * pg_, 4 * pg_});
    remote_stale_.push_back({RemoteSlotReg(s), 2 * pg_});
  }
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t toggles = 0;
  for (uint64_t i = 0; calls_ < n && failures_ < 20; ++i) {
    OneCall();
    if (i % 4000 == 3999) {  // the peer changes its registrations now and then
      Drain();
      ToggleRemote(R(kRemoteSlots));
      ++toggles;
    }
    if (i % 1000 == 999) {
      Drain();
      VerifyRoundTrip();
    }
  }
  Drain();
  // The peer's bytes outside its registrations were never written: its
  // buffer's gap pages still hold the fill pattern.
  for (size_t s = 0; s < kRemoteSlots; ++s) {
    for (size_t gap : {s * 4 * pg_, s * 4 * pg_ + 3 * pg_}) {
      auto w = peer_->Ok("hash 0 " + std::to_string(gap) + " " + std::to_string(pg_));
      ASSERT_EQ(w.size(), 1u);
      std::vector<uint8_t> want(pg_);
      FillPattern(want.data(), pg_, 3, gap);
      EXPECT_EQ(std::stoull(w[0]), Hash(want.data(), pg_)) << "peer byte outside registrations written, gap " << gap;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("api fuzz: seed %llu, %llu calls in %.1f s (%llu transfers expected to succeed, %llu verified round trips, "
         "%llu peer registration changes)\n",
         static_cast<unsigned long long>(seed), static_cast<unsigned long long>(calls_), s,
         static_cast<unsigned long long>(moved_), static_cast<unsigned long long>(verified_),
         static_cast<unsigned long long>(toggles));
  EXPECT_EQ(failures_, 0u);
}

}  // namespace
