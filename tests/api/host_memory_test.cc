// docs/contract.md §8 (MallocMem / ExportToShareableHandle / FreeMem) through the public
// API, one process.  Internals (import by a second process, hwloc binding
// policy) are checked in tests/unit/host_memory_test.cc.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "adxl/adxl_engine.h"

using namespace adxl;

namespace {

bool SameHandle(const ShareableHandle &a, const ShareableHandle &b) {
  return std::memcmp(a.data, b.data, sizeof a.data) == 0;
}

// NUMA nodes of the machine, from sysfs (no libnuma / hwloc in this binary).
std::vector<int> MachineNodes() {
  std::vector<int> nodes;
  if (DIR *d = opendir("/sys/devices/system/node")) {
    while (dirent *e = readdir(d)) {
      int n = -1;
      if (std::sscanf(e->d_name, "node%d", &n) == 1) nodes.push_back(n);
    }
    closedir(d);
  }
  return nodes;
}

TEST(HostMemoryApiTest, ArgumentChecks) {
  void *p = reinterpret_cast<void *>(0x1);
  EXPECT_EQ(AdxlEngine::MallocMem(MEM_HOST, 0, &p), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::MallocMem(MEM_HOST, 4096, nullptr), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::MallocMem(static_cast<MemType>(2), 4096, &p), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::MallocMem(static_cast<MemType>(-1), 4096, &p), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::MallocMem(MEM_DEVICE, 0, &p), PARAM_INVALID);
  EXPECT_EQ(p, reinterpret_cast<void *>(0x1));  // untouched on error

  ShareableHandle h;
  int local = 0;
  EXPECT_EQ(AdxlEngine::ExportToShareableHandle(nullptr, h), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::ExportToShareableHandle(&local, h), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::FreeMem(nullptr), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::FreeMem(&local), PARAM_INVALID);
}

// MallocMem(MEM_DEVICE) (UNSUPPORTED without a device, cudaMalloc with one):
// tests/device.

TEST(HostMemoryApiTest, LifeCycle) {
  void *p = nullptr;
  ASSERT_EQ(AdxlEngine::MallocMem(MEM_HOST, 1 << 20, &p), SUCCESS);
  ASSERT_NE(p, nullptr);

  ShareableHandle h1, h2, h3;
  ASSERT_EQ(AdxlEngine::ExportToShareableHandle(p, h1), SUCCESS);
  ASSERT_EQ(AdxlEngine::ExportToShareableHandle(p, h2), SUCCESS);
  EXPECT_TRUE(SameHandle(h1, h2));
  EXPECT_FALSE(SameHandle(h1, ShareableHandle{}));
  auto *bytes = static_cast<uint8_t *>(p);
  EXPECT_EQ(AdxlEngine::ExportToShareableHandle(bytes + 1, h3), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::ExportToShareableHandle(bytes + 4096, h3), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::FreeMem(bytes + 1), PARAM_INVALID);

  ASSERT_EQ(AdxlEngine::FreeMem(p), SUCCESS);
  EXPECT_EQ(AdxlEngine::ExportToShareableHandle(p, h3), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::FreeMem(p), PARAM_INVALID);
}

TEST(HostMemoryApiTest, BlocksAreDistinctAndHandlesDiffer) {
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(AdxlEngine::MallocMem(MEM_HOST, 4096, &a), SUCCESS);
  ASSERT_EQ(AdxlEngine::MallocMem(MEM_HOST, 4096, &b), SUCCESS);
  EXPECT_NE(a, b);
  ShareableHandle ha, hb;
  ASSERT_EQ(AdxlEngine::ExportToShareableHandle(a, ha), SUCCESS);
  ASSERT_EQ(AdxlEngine::ExportToShareableHandle(b, hb), SUCCESS);
  EXPECT_FALSE(SameHandle(ha, hb));
  EXPECT_EQ(AdxlEngine::FreeMem(a), SUCCESS);
  EXPECT_EQ(AdxlEngine::FreeMem(b), SUCCESS);
}

TEST(HostMemoryApiTest, MemoryIsWritableEverywhere) {
  for (size_t size : {size_t{1}, size_t{4095}, size_t{4096}, size_t{3 << 20}, size_t{4 << 20}}) {
    void *p = nullptr;
    ASSERT_EQ(AdxlEngine::MallocMem(MEM_HOST, size, &p), SUCCESS) << size;
    auto *bytes = static_cast<uint8_t *>(p);
    for (size_t i = 0; i < size; ++i) EXPECT_EQ(bytes[i], 0) << "fresh memory is zeroed";
    std::memset(p, 0xA5, size);
    for (size_t i = 0; i < size; i += 997) ASSERT_EQ(bytes[i], 0xA5);
    ASSERT_EQ(bytes[size - 1], 0xA5);
    EXPECT_EQ(AdxlEngine::FreeMem(p), SUCCESS);
  }
}

// The helpers are thread-safe: blocks made and freed concurrently stay
// distinct, and each thread's handle stays stable while its block lives.
TEST(HostMemoryApiTest, ConcurrentUse) {
  auto worker = [](int seed, int *failures) {
    for (int i = 0; i < 50; ++i) {
      void *p = nullptr;
      ShareableHandle a, b;
      if (AdxlEngine::MallocMem(MEM_HOST, 4096 * (1 + (i + seed) % 4), &p) != SUCCESS) {
        ++*failures;
        continue;
      }
      static_cast<uint8_t *>(p)[0] = static_cast<uint8_t>(seed);
      if (AdxlEngine::ExportToShareableHandle(p, a) != SUCCESS) ++*failures;
      std::this_thread::yield();
      if (AdxlEngine::ExportToShareableHandle(p, b) != SUCCESS || !SameHandle(a, b)) ++*failures;
      if (static_cast<uint8_t *>(p)[0] != static_cast<uint8_t>(seed)) ++*failures;
      if (AdxlEngine::FreeMem(p) != SUCCESS) ++*failures;
    }
  };
  int f1 = 0, f2 = 0;
  std::thread t1(worker, 1, &f1), t2(worker, 2, &f2);
  t1.join();
  t2.join();
  EXPECT_EQ(f1, 0);
  EXPECT_EQ(f2, 0);
}

// Every page is resident on one node right after MallocMem (first touch
// happened inside), and on a one-node machine that node is 0.  move_pages
// with no target nodes only reports where each page is.
TEST(HostMemoryApiTest, PagesArePlacedOnOneNodeAtAllocation) {
  const size_t size = 4 << 20, page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void *p = nullptr;
  ASSERT_EQ(AdxlEngine::MallocMem(MEM_HOST, size, &p), SUCCESS);
  std::vector<void *> pages;
  for (size_t off = 0; off < size; off += page) pages.push_back(static_cast<uint8_t *>(p) + off);
  std::vector<int> status(pages.size(), -1);
  long rc = syscall(SYS_move_pages, 0, pages.size(), pages.data(), nullptr, status.data(), 0);
  if (rc != 0 && errno == ENOSYS) GTEST_SKIP() << "move_pages not available (kernel without NUMA)";
  ASSERT_EQ(rc, 0) << std::strerror(errno);
  for (size_t i = 0; i < status.size(); ++i) {
    ASSERT_GE(status[i], 0) << "page " << i << " not resident: " << std::strerror(-status[i]);
    ASSERT_EQ(status[i], status[0]) << "page " << i;
  }
  const std::vector<int> nodes = MachineNodes();
  if (nodes.size() == 1 && std::getenv("ADXL_NUMA_NODE") == nullptr) {
    EXPECT_EQ(status[0], nodes[0]);
  }
  EXPECT_EQ(AdxlEngine::FreeMem(p), SUCCESS);
}

}  // namespace
