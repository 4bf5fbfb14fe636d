// Soak: 4 engines in 4 processes, full mesh (each links to
// the 3 others), random sizes, every byte checked, for ADXL_SOAK_SECONDS
// (default 60).  Passes with zero mismatches, no failed call, and resident
// memory flat: each process's RSS at the end is within a tolerance of its RSS
// after the warm-up (a quarter of the run).
//
// Each engine has an inbox (one 1 MiB slot per writer) and a static region
// filled with its own pattern.  A round against a random peer: WRITE random
// bytes of a random size into our slot of its inbox, READ them back and
// compare; READ a random range of its static region and compare with the
// pattern.  Buffers are mapped before fork(), so every process has them at
// the same addresses and knows its peers' remote addresses.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "adxl/adxl_engine.h"
#include "pattern.h"
#include "peer_process.h"

using namespace adxl;
using adxl_test::FillPattern;
using adxl_test::Hash;

namespace {

constexpr int kEngines = 4;
constexpr size_t kSlot = 1u << 20;
constexpr size_t kInbox = kSlot * kEngines;
constexpr size_t kStatic = 4u << 20;

struct Result {
  uint64_t rounds = 0, bytes = 0, mismatches = 0, failed_calls = 0;
  uint64_t rss_warm = 0, rss_end = 0;
  int connect_status = 0;
};

uint64_t Rss() {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, res = 0;
  if (f != nullptr) {
    if (fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
    fclose(f);
  }
  return static_cast<uint64_t>(res) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

void *Map(size_t n) {
  void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// One engine process.  Writes its Result to `out`, then waits for a byte on
// `go` (every engine finished) before it finalizes.
void RunEngine(int me, const std::vector<std::string> &names, uint8_t *inbox, uint8_t *stat, uint8_t *src,
               uint8_t *dst, double seconds, int out, int go) {
  Result r;
  AdxlEngine e;
  FillPattern(stat, kStatic, 1000 + me);
  MemHandle h1 = nullptr, h2 = nullptr, h3 = nullptr, h4 = nullptr;
  if (e.Initialize(names[me].c_str(), {{"adxl.BufferPool", "0:0"}}) != SUCCESS ||
      e.RegisterMem({reinterpret_cast<uintptr_t>(inbox), kInbox}, MEM_HOST, h1) != SUCCESS ||
      e.RegisterMem({reinterpret_cast<uintptr_t>(stat), kStatic}, MEM_HOST, h2) != SUCCESS ||
      e.RegisterMem({reinterpret_cast<uintptr_t>(src), kSlot}, MEM_HOST, h3) != SUCCESS ||
      e.RegisterMem({reinterpret_cast<uintptr_t>(dst), kStatic}, MEM_HOST, h4) != SUCCESS) {
    r.connect_status = -1;
  }
  // Connect to every other engine (they may still be starting).
  for (int j = 0; j < kEngines && r.connect_status == 0; ++j) {
    if (j == me) continue;
    Status st = FAILED;
    for (int tries = 0; tries < 200 && st != SUCCESS; ++tries) {
      st = e.Connect(names[j].c_str(), 2000);
      if (st != SUCCESS) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (st != SUCCESS) r.connect_status = static_cast<int>(st);
  }
  std::mt19937_64 rng(0x50a1 + me);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  bool warmed = false;
  while (r.connect_status == 0 && elapsed() < seconds) {
    if (!warmed && elapsed() >= seconds / 4) {
      r.rss_warm = Rss();
      warmed = true;
    }
    int j = static_cast<int>(rng() % (kEngines - 1));
    if (j >= me) ++j;
    const char *peer = names[j].c_str();
    // Random sizes: mostly small, sometimes the whole slot.
    const size_t k = rng() % 100;
    const size_t len = k < 50 ? 1 + rng() % 4096 : k < 90 ? 1 + rng() % (256u << 10) : 1 + rng() % kSlot;
    const size_t off = rng() % (kSlot - len + 1);
    const uint64_t seed = rng();
    FillPattern(src, len, seed);
    const uintptr_t slot = reinterpret_cast<uintptr_t>(inbox) + static_cast<size_t>(me) * kSlot + off;
    if (e.TransferSync(peer, WRITE, {{reinterpret_cast<uintptr_t>(src), slot, len}}, 10000) != SUCCESS) {
      ++r.failed_calls;
      continue;
    }
    memset(dst, 0, len);
    if (e.TransferSync(peer, READ, {{reinterpret_cast<uintptr_t>(dst), slot, len}}, 10000) != SUCCESS) {
      ++r.failed_calls;
      continue;
    }
    if (Hash(dst, len) != Hash(src, len)) ++r.mismatches;
    // The peer's static pattern, in up to 4 descriptors at random offsets.
    const size_t n = 1 + rng() % 4;
    std::vector<TransferOpDesc> d;
    std::vector<std::pair<size_t, size_t>> want;
    size_t at = 0;
    for (size_t i = 0; i < n; ++i) {
      const size_t l = 1 + rng() % (64u << 10);
      const size_t o = rng() % (kStatic - l + 1);
      d.push_back({reinterpret_cast<uintptr_t>(dst) + at, reinterpret_cast<uintptr_t>(stat) + o, l});
      want.push_back({o, l});
      at += l;
    }
    if (e.TransferSync(peer, READ, d, 10000) != SUCCESS) {
      ++r.failed_calls;
      continue;
    }
    std::vector<uint8_t> expect;
    at = 0;
    for (const auto &w : want) {
      expect.resize(w.second);
      FillPattern(expect.data(), w.second, 1000 + j, w.first);
      if (memcmp(dst + at, expect.data(), w.second) != 0) ++r.mismatches;
      at += w.second;
    }
    ++r.rounds;
    r.bytes += 2 * len + at;
  }
  r.rss_end = Rss();
  ssize_t w = write(out, &r, sizeof(r));
  (void)w;
  char c;
  ssize_t rd = read(go, &c, 1);
  (void)rd;
  e.Finalize();
}

TEST(Soak, FourEnginesFullMeshRandomSizesChecksummedAndFlatMemory) {
  const char *env = getenv("ADXL_SOAK_SECONDS");
  const double seconds = env != nullptr && *env != '\0' ? atof(env) : 60.0;
  std::vector<std::string> names;
  for (int i = 0; i < kEngines; ++i) names.push_back(adxl_test::LoopbackName(adxl_test::FreePort()));
  uint8_t *inbox = static_cast<uint8_t *>(Map(kInbox));
  uint8_t *stat = static_cast<uint8_t *>(Map(kStatic));
  uint8_t *src = static_cast<uint8_t *>(Map(kSlot));
  uint8_t *dst = static_cast<uint8_t *>(Map(kStatic));
  ASSERT_TRUE(inbox && stat && src && dst);
  std::vector<pid_t> pids;
  std::vector<int> outs, gos;
  for (int i = 0; i < kEngines; ++i) {
    int out[2], go[2];
    ASSERT_EQ(pipe(out), 0);
    ASSERT_EQ(pipe(go), 0);
    fflush(nullptr);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(out[0]);
      close(go[1]);
      RunEngine(i, names, inbox, stat, src, dst, seconds, out[1], go[0]);
      _exit(0);
    }
    close(out[1]);
    close(go[0]);
    pids.push_back(pid);
    outs.push_back(out[0]);
    gos.push_back(go[1]);
  }
  std::vector<Result> results(kEngines);
  for (int i = 0; i < kEngines; ++i) {
    ssize_t n = read(outs[i], &results[i], sizeof(Result));
    EXPECT_EQ(n, static_cast<ssize_t>(sizeof(Result))) << "engine " << i << " died";
  }
  for (int i = 0; i < kEngines; ++i) {
    ssize_t w = write(gos[i], "g", 1);
    (void)w;
  }
  for (int i = 0; i < kEngines; ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "engine " << i << " exit status " << status;
    close(outs[i]);
    close(gos[i]);
  }
  uint64_t rounds = 0, bytes = 0;
  for (int i = 0; i < kEngines; ++i) {
    const Result &r = results[i];
    SCOPED_TRACE("engine " + std::to_string(i));
    EXPECT_EQ(r.connect_status, 0);
    EXPECT_GT(r.rounds, 0u);
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(r.failed_calls, 0u);
    // Flat: at most 16 MiB or 10% above the post-warm-up RSS.
    const uint64_t tolerance = std::max<uint64_t>(16u << 20, r.rss_warm / 10);
    EXPECT_GT(r.rss_warm, 0u);
    EXPECT_LE(r.rss_end, r.rss_warm + tolerance) << "RSS grew from " << (r.rss_warm >> 20) << " MiB to "
                                                 << (r.rss_end >> 20) << " MiB";
    printf("engine %d: %llu rounds, %.1f MiB moved, RSS %llu -> %llu KiB, %llu mismatches, %llu failed calls\n", i,
           static_cast<unsigned long long>(r.rounds), r.bytes / 1048576.0,
           static_cast<unsigned long long>(r.rss_warm >> 10), static_cast<unsigned long long>(r.rss_end >> 10),
           static_cast<unsigned long long>(r.mismatches), static_cast<unsigned long long>(r.failed_calls));
    rounds += r.rounds;
    bytes += r.bytes;
  }
  printf("soak: %d engines, full mesh, %.0f s: %llu rounds, %.1f GiB checked\n", kEngines, seconds,
         static_cast<unsigned long long>(rounds), bytes / 1073741824.0);
}

}  // namespace
