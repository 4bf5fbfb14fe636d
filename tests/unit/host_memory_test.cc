// Host memory of MallocMem (host_memory.h): real NUMA binding on this machine,
// huge pages when the system has them, and sharing with another process
// through the exported handle.
#include "memory/host_memory.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "memory/numa_topology.h"

namespace adxl {
namespace {

constexpr size_t kHuge = 2u << 20;

// Owns a HostAlloc block for one test.
class Block {
 public:
  explicit Block(size_t size) : size_(size) {
    std::string why;
    status_ = HostAlloc(size, &ptr_, &why);
    EXPECT_EQ(status_, SUCCESS) << why;
  }
  ~Block() {
    std::string why;
    if (ptr_ != nullptr) {
      EXPECT_EQ(HostFree(ptr_, &why), SUCCESS) << why;
    }
  }
  uint8_t *get() const { return static_cast<uint8_t *>(ptr_); }
  size_t size() const { return size_; }
  ShareableHandle Export() const {
    ShareableHandle h;
    std::string why;
    EXPECT_EQ(HostExport(ptr_, &h, &why), SUCCESS) << why;
    return h;
  }
  void Free() {
    std::string why;
    EXPECT_EQ(HostFree(ptr_, &why), SUCCESS) << why;
    ptr_ = nullptr;
  }

 private:
  void *ptr_ = nullptr;
  size_t size_;
  Status status_;
};

uint64_t SysfsNumber(const std::string &path) {
  std::ifstream in(path);
  uint64_t v = 0;
  in >> v;
  return v;
}

// Free 2 MiB pages on NUMA node `node` (0 when unknown).
uint64_t FreeHugePagesOnNode(unsigned node) {
  return SysfsNumber("/sys/devices/system/node/node" + std::to_string(node) +
                     "/hugepages/hugepages-2048kB/free_hugepages");
}

TEST(HostMemoryTest, BoundToTheChosenNodeAndResident) {
  const SystemTopology *sys = SystemTopology::Get();
  ASSERT_NE(sys, nullptr);
  ASSERT_TRUE(sys->is_this_system());
  if (std::getenv("ADXL_NUMA_NODE") == nullptr && hwloc_get_nbobjs_by_type(sys->topology(), HWLOC_OBJ_NUMANODE) == 1) {
    EXPECT_EQ(sys->node_os_index(), 0u);
  }

  Block b(8 << 20);
  ASSERT_NE(b.get(), nullptr);
  HostBlockInfo info;
  ASSERT_TRUE(FindHostBlock(b.get(), &info));
  EXPECT_EQ(info.node, static_cast<int>(sys->node_os_index()));

  hwloc_topology_t topo = sys->topology();
  BitmapPtr where(hwloc_bitmap_alloc());
  // Where the pages are now (they were touched by HostAlloc, nobody wrote yet).
  ASSERT_EQ(hwloc_get_area_memlocation(topo, b.get(), b.size(), where.get(), HWLOC_MEMBIND_BYNODESET), 0)
      << std::strerror(errno);
  EXPECT_TRUE(hwloc_bitmap_isequal(where.get(), sys->node()->nodeset));
  EXPECT_EQ(hwloc_bitmap_first(where.get()), static_cast<int>(sys->node_os_index()));

  // The policy, not only the placement: bound, to exactly that node.
  BitmapPtr policy_set(hwloc_bitmap_alloc());
  hwloc_membind_policy_t policy = HWLOC_MEMBIND_DEFAULT;
  ASSERT_EQ(hwloc_get_area_membind(topo, b.get(), b.size(), policy_set.get(), &policy, HWLOC_MEMBIND_BYNODESET), 0);
  EXPECT_EQ(policy, HWLOC_MEMBIND_BIND);
  EXPECT_TRUE(hwloc_bitmap_isequal(policy_set.get(), sys->node()->nodeset));
}

TEST(HostMemoryTest, HugePagesWhenTheNodeHasThem) {
  const SystemTopology *sys = SystemTopology::Get();
  ASSERT_NE(sys, nullptr);
  const uint64_t free_pages = FreeHugePagesOnNode(sys->node_os_index());

  Block aligned(4 * kHuge);
  HostBlockInfo info;
  ASSERT_TRUE(FindHostBlock(aligned.get(), &info));
  if (free_pages >= 4) {
    EXPECT_EQ(info.page_size, kHuge);
  } else {
    EXPECT_EQ(info.page_size, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
    std::cout << "[   NOTE   ] no free 2 MiB huge pages on node " << sys->node_os_index()
              << " (vm.nr_hugepages); normal pages used\n";
  }
  aligned.get()[info.size - 1] = 7;  // the whole block is usable either way

  Block odd(kHuge + 4096);  // not a multiple of 2 MiB: never hugetlb
  ASSERT_TRUE(FindHostBlock(odd.get(), &info));
  EXPECT_EQ(info.page_size, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
}

TEST(HostMemoryTest, FindHostBlockCoversTheBlockOnly) {
  Block b(3 * 4096 + 100);
  HostBlockInfo info;
  ASSERT_TRUE(FindHostBlock(b.get(), &info));
  EXPECT_EQ(info.base, b.get());
  EXPECT_EQ(info.size, b.size());
  ASSERT_TRUE(FindHostBlock(b.get() + b.size() - 1, &info));
  EXPECT_EQ(info.base, b.get());
  EXPECT_FALSE(FindHostBlock(b.get() + b.size(), &info));
  EXPECT_FALSE(FindHostBlock(b.get() - 1, &info));
  EXPECT_EQ(std::memcmp(info.handle.data, b.Export().data, sizeof info.handle.data), 0);
}

TEST(HostMemoryTest, RefusesMoreThanTheMachineHas) {
  void *p = nullptr;
  std::string why;
  EXPECT_EQ(HostAlloc(size_t{1} << 60, &p, &why), RESOURCE_EXHAUSTED);
  EXPECT_EQ(p, nullptr);
  EXPECT_FALSE(why.empty());
}

// Blocks a child until the parent has written: one byte over a pipe.
struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { EXPECT_EQ(pipe(fds), 0); }
  ~Pipe() {
    close(fds[0]);
    close(fds[1]);
  }
  void Signal() { EXPECT_EQ(write(fds[1], "x", 1), 1); }
  bool Wait() {
    char c;
    return read(fds[0], &c, 1) == 1;
  }
};

// The exported handle maps the same pages in another process, both ways:
// the child reads what the parent wrote (before and after the child mapped
// it), the parent reads what the child wrote.
// Run for a normal-page size and a 2 MiB multiple (hugetlb where the machine
// has huge pages).
class HostMemoryShareTest : public ::testing::TestWithParam<size_t> {};

TEST_P(HostMemoryShareTest, AnotherProcessMapsTheSamePages) {
  const size_t size = GetParam();
  Block b(size);
  for (size_t i = 0; i < size; ++i) b.get()[i] = static_cast<uint8_t>(i * 7 + 1);
  const ShareableHandle h = b.Export();
  Pipe mapped, written;

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit codes name the failing step; no gtest macros in the child.
    size_t got = 0;
    std::string why;
    auto *p = static_cast<uint8_t *>(ImportShareableHandle(h, &got, &why));
    if (p == nullptr) {
      std::fprintf(stderr, "child: import failed: %s\n", why.c_str());
      _exit(10);
    }
    if (got != size) _exit(11);
    if (p == b.get()) _exit(12);  // a new mapping, not the inherited one
    for (size_t i = 0; i < size; ++i)
      if (p[i] != static_cast<uint8_t>(i * 7 + 1)) _exit(13);
    mapped.Signal();
    if (!written.Wait()) _exit(14);
    if (p[12345] != 0xAB) _exit(15);  // written by the parent after we mapped
    for (size_t i = 0; i < size; i += 4096) p[i] = 0x5C;
    ReleaseImported(p, got);
    _exit(0);
  }
  ASSERT_TRUE(mapped.Wait());
  b.get()[12345] = 0xAB;
  written.Signal();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "child failed at step " << WEXITSTATUS(status);
  for (size_t i = 0; i < size; i += 4096) ASSERT_EQ(b.get()[i], 0x5C) << i;
  EXPECT_EQ(b.get()[1], static_cast<uint8_t>(8));
}

INSTANTIATE_TEST_SUITE_P(Sizes, HostMemoryShareTest, ::testing::Values(size_t{1} << 20, 2 * kHuge));

TEST(HostMemoryTest, ImportInThisProcessSharesPages) {
  Block b(64 << 10);
  size_t size = 0;
  std::string why;
  auto *p = static_cast<uint8_t *>(ImportShareableHandle(b.Export(), &size, &why));
  ASSERT_NE(p, nullptr) << why;
  EXPECT_EQ(size, b.size());
  p[100] = 42;
  EXPECT_EQ(b.get()[100], 42);
  ReleaseImported(p, size);
}

TEST(HostMemoryTest, ImportRefusesTamperedStaleAndForeignHandles) {
  size_t size = 0;
  std::string why;
  EXPECT_EQ(ImportShareableHandle(ShareableHandle{}, &size, &why), nullptr);
  EXPECT_NE(why.find("not an ADXL"), std::string::npos) << why;

  Block b(64 << 10);
  const ShareableHandle good = b.Export();
  // Layout offsets (host_memory.cc WireHandle): id at 40, boot id at 48.
  ShareableHandle wrong_id = good;
  wrong_id.data[40] ^= 0xFF;
  EXPECT_EQ(ImportShareableHandle(wrong_id, &size, &why), nullptr);
  EXPECT_NE(why.find("no longer"), std::string::npos) << why;
  ShareableHandle foreign = good;
  foreign.data[48] ^= 0xFF;
  EXPECT_EQ(ImportShareableHandle(foreign, &size, &why), nullptr);
  EXPECT_NE(why.find("another machine"), std::string::npos) << why;

  b.Free();  // the descriptor is closed: the handle is stale
  EXPECT_EQ(ImportShareableHandle(good, &size, &why), nullptr);
  EXPECT_FALSE(why.empty());
}

TEST(HostMemoryTest, ExportAndFreeOnlyForLiveBlockStarts) {
  std::string why;
  ShareableHandle h;
  int local = 0;
  EXPECT_EQ(HostExport(&local, &h, &why), PARAM_INVALID);
  EXPECT_EQ(HostFree(&local, &why), PARAM_INVALID);
  EXPECT_EQ(HostFree(nullptr, &why), PARAM_INVALID);
  Block b(4096);
  EXPECT_EQ(HostExport(b.get() + 1, &h, &why), PARAM_INVALID);
  EXPECT_EQ(HostFree(b.get() + 4095, &why), PARAM_INVALID);
}

}  // namespace
}  // namespace adxl
