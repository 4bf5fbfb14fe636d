// NUMA-placed shareable host memory and its registry; see host_memory.h.
#include "memory/host_memory.h"
#include "common/thread_annotations.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <type_traits>
#include <utility>

#include "common/log.h"
#include "memory/numa_topology.h"

namespace adxl {

namespace {

constexpr size_t kHugePageSize = 2u << 20;
// MFD_HUGE_2MB from <linux/memfd.h> (log2(2 MiB) << MFD_HUGE_SHIFT); glibc's
// <sys/mman.h> lacks it and the kernel header clashes with glibc's MFD_* macros.
constexpr unsigned kMfdHuge2Mb = 21u << 26;
constexpr uint32_t kHandleMagic = 0x48584441;  // "ADXH" in memory on little-endian
constexpr uint16_t kHandleVersion = 1;
constexpr uint16_t kFlagHugetlb = 0x1;

// The layout of ShareableHandle::data.  Host byte order: a handle is only
// meaningful on the machine that made it.  Append fields, bump the version.
struct WireHandle {
  uint32_t magic;
  uint16_t version;
  uint16_t flags;
  int32_t pid;
  int32_t fd;
  uint64_t size;
  uint64_t page_size;
  int32_t node;
  uint32_t reserved;
  uint64_t id;
  uint8_t boot_id[16];
};
static_assert(std::is_trivially_copyable<WireHandle>::value, "copied with memcpy");
static_assert(sizeof(WireHandle) <= sizeof(ShareableHandle::data), "must fit the public handle");

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd &operator=(UniqueFd &&o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~UniqueFd() { Reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

class Mapping {
 public:
  Mapping() = default;
  Mapping(void *addr, size_t len) : addr_(addr), len_(len) {}
  Mapping(Mapping &&o) noexcept : addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0)) {}
  Mapping &operator=(Mapping &&o) noexcept {
    if (this != &o) {
      Reset();
      addr_ = std::exchange(o.addr_, nullptr);
      len_ = std::exchange(o.len_, 0);
    }
    return *this;
  }
  ~Mapping() { Reset(); }
  void *get() const { return addr_; }

 private:
  void Reset() {
    if (addr_ != nullptr) ::munmap(addr_, len_);
    addr_ = nullptr;
  }
  void *addr_ = nullptr;
  size_t len_ = 0;
};

struct Block {
  UniqueFd fd;  // kept open: peers reach the pages through /proc/<pid>/fd/<fd>
  Mapping map;
  HostBlockInfo info;
};

// Process-wide, never destroyed: memory from MallocMem may be used by other
// static objects' destructors until the process ends.
class BlockRegistry {
 public:
  static BlockRegistry &Get() {
    static BlockRegistry *const instance = std::make_unique<BlockRegistry>().release();
    return *instance;
  }
  void Add(Block block) {
    MutexLock lock(&mu_);
    auto key = reinterpret_cast<uintptr_t>(block.info.base);
    blocks_.emplace(key, std::move(block));
  }
  bool Export(const void *addr, ShareableHandle *handle) {
    MutexLock lock(&mu_);
    auto it = blocks_.find(reinterpret_cast<uintptr_t>(addr));
    if (it == blocks_.end()) return false;
    *handle = it->second.info.handle;
    return true;
  }
  // Removes the block; its pages are released when the returned node dies,
  // outside the lock (munmap of a large block takes a while).
  std::map<uintptr_t, Block>::node_type Remove(const void *addr) {
    MutexLock lock(&mu_);
    return blocks_.extract(reinterpret_cast<uintptr_t>(addr));
  }
  bool Find(const void *addr, HostBlockInfo *info) {
    auto a = reinterpret_cast<uintptr_t>(addr);
    MutexLock lock(&mu_);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return false;
    --it;
    if (a - it->first >= it->second.info.size) return false;
    *info = it->second.info;
    return true;
  }

 private:
  Mutex mu_;  // a leaf: never held across mmap / munmap
  std::map<uintptr_t, Block> blocks_ ADXL_GUARDED_BY(mu_);  // keyed by start address
};

std::string Errno(const std::string &what, int err) { return what + ": " + std::strerror(err); }

// The status for a failed system call, errno read first: out of memory is
// RESOURCE_EXHAUSTED, anything else FAILED.
Status SysFailure(const char *what, std::string *why) {
  const int err = errno;
  *why = std::string(what) + ": " + std::strerror(err);
  return (err == ENOMEM || err == ENOSPC || err == EFBIG) ? RESOURCE_EXHAUSTED : FAILED;
}

uint64_t RandomId() {
  uint64_t id = 0;
  if (getrandom(&id, sizeof id, 0) == static_cast<ssize_t>(sizeof id) && id != 0) return id;
  std::random_device rd;  // getrandom missing (old kernel, seccomp): still unpredictable enough
  return (static_cast<uint64_t>(rd()) << 32) | rd() | 1;
}

// The kernel's boot id (a UUID), identical for every process of this boot
// of this machine; zeros when unreadable.
const uint8_t *BootId() {
  static const auto id = [] {
    std::array<uint8_t, 16> out{};
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string s, hex;
    std::getline(in, s);
    for (char c : s)
      if (c != '-') hex += c;
    if (hex.size() != 32) return out;
    std::array<uint8_t, 16> parsed{};
    for (size_t i = 0; i < 16; ++i) {
      char *end = nullptr;
      const std::string byte = hex.substr(2 * i, 2);
      parsed[i] = static_cast<uint8_t>(std::strtoul(byte.c_str(), &end, 16));
      if (end != byte.c_str() + 2) return out;
    }
    return parsed;
  }();
  return id.data();
}

std::string MemfdName(uint64_t id) {
  char name[32];
  std::snprintf(name, sizeof name, "adxl-%016" PRIx64, id);
  return name;
}

// Runs `fn` with this thread's memory policy bound to `node`, then restores
// the previous policy.  Used for hugetlb pages, which are allocated by
// fallocate (outside any mapping, so an area binding cannot apply) in order
// to fail cleanly instead of raising SIGBUS at first touch when the node has
// no free huge page.
template <typename Fn>
bool WithThreadMembind(const SystemTopology *sys, Fn fn) {
  if (sys == nullptr || !sys->is_this_system()) return fn();
  hwloc_topology_t topo = sys->topology();
  BitmapPtr old(hwloc_bitmap_alloc());
  hwloc_membind_policy_t old_policy = HWLOC_MEMBIND_DEFAULT;
  bool saved = old && hwloc_get_membind(topo, old.get(), &old_policy,
                                        HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) == 0;
  bool bound = hwloc_set_membind(topo, sys->node()->nodeset, HWLOC_MEMBIND_BIND,
                                 HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) == 0;
  bool ok = fn();
  if (bound) {
    if (saved) {
      hwloc_set_membind(topo, old.get(), old_policy, HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET);
    } else {
      hwloc_set_membind(topo, hwloc_topology_get_complete_nodeset(topo), HWLOC_MEMBIND_DEFAULT,
                        HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET);
    }
  }
  return ok;
}

// A hugetlb-backed memfd holding `size` bytes of allocated huge pages on the
// chosen node, or an empty fd when the system has none to give (the normal
// case on machines without a reserved huge-page pool).
UniqueFd TryHugetlbFd(const std::string &name, size_t size, const SystemTopology *sys) {
  if (size % kHugePageSize != 0) return UniqueFd();
  UniqueFd fd(memfd_create(name.c_str(), MFD_CLOEXEC | MFD_HUGETLB | kMfdHuge2Mb));
  if (!fd) return UniqueFd();
  if (ftruncate(fd.get(), static_cast<off_t>(size)) != 0) return UniqueFd();
  int err = 0;
  bool ok = WithThreadMembind(sys, [&] {
    if (fallocate(fd.get(), 0, 0, static_cast<off_t>(size)) == 0) return true;
    err = errno;  // before the policy is restored
    return false;
  });
  if (!ok) {
    ADXL_DEBUG("MallocMem: no %zu huge pages free on the node (%s); normal pages", size / kHugePageSize,
               std::strerror(err));
    return UniqueFd();
  }
  return fd;
}

bool DecodeHandle(const ShareableHandle &h, WireHandle *w, std::string *why) {
  std::memcpy(w, h.data, sizeof *w);
  if (w->magic != kHandleMagic || w->version != kHandleVersion) {
    *why = "not an ADXL shareable handle (bad magic or version)";
    return false;
  }
  if (w->size == 0 || w->page_size == 0 || (w->page_size & (w->page_size - 1)) != 0 || w->pid <= 0 || w->fd < 0) {
    *why = "malformed shareable handle";
    return false;
  }
  static const uint8_t kZero[16] = {};
  const uint8_t *mine = BootId();
  if (std::memcmp(mine, kZero, 16) != 0 && std::memcmp(w->boot_id, kZero, 16) != 0 &&
      std::memcmp(mine, w->boot_id, 16) != 0) {
    *why = "handle comes from another machine (boot id differs)";
    return false;
  }
  return true;
}

}  // namespace

Status HostAlloc(size_t size, void **ptr, std::string *why) {
  const size_t base_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const SystemTopology *sys = SystemTopology::Get();

  // Pages are all allocated before we return, and a strict binding plus
  // first touch of more than the node holds ends in the OOM killer rather
  // than an error, so refuse what cannot fit up front.
  const uint64_t phys = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * base_page;
  if (size > phys || size > SIZE_MAX - kHugePageSize) {
    *why = "size " + std::to_string(size) + " exceeds the machine's memory (" + std::to_string(phys) + " bytes)";
    return RESOURCE_EXHAUSTED;
  }
  if (sys != nullptr && sys->is_this_system()) {
    uint64_t local = sys->node()->attr->numanode.local_memory;
    if (local != 0 && size > local) {
      *why = "size " + std::to_string(size) + " exceeds NUMA node " + std::to_string(sys->node_os_index()) +
             "'s memory (" + std::to_string(local) + " bytes)";
      return RESOURCE_EXHAUSTED;
    }
  }

  Block block;
  const uint64_t id = RandomId();
  const std::string name = MemfdName(id);
  size_t page_size = kHugePageSize;
  block.fd = TryHugetlbFd(name, size, sys);
  if (!block.fd) {
    page_size = base_page;
    block.fd = UniqueFd(memfd_create(name.c_str(), MFD_CLOEXEC));
    if (!block.fd) {
      return SysFailure("memfd_create", why);
    }
    if (ftruncate(block.fd.get(), static_cast<off_t>(size)) != 0) {
      return SysFailure("ftruncate", why);
    }
  }
  const size_t map_size = (size + page_size - 1) / page_size * page_size;
  void *addr = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, block.fd.get(), 0);
  if (addr == MAP_FAILED) {
    return SysFailure("mmap", why);
  }
  block.map = Mapping(addr, map_size);
  if (page_size != kHugePageSize) {
    // Transparent huge pages for shmem only come when the administrator set
    // shmem_enabled to advise (or more); elsewhere this is a harmless no-op.
    madvise(addr, map_size, MADV_HUGEPAGE);
  }

  int node = -1;
  if (sys != nullptr && sys->is_this_system()) {
    // On a shmem mapping this sets the file's own policy, so pages that a
    // peer faults in through its import land on the node as well.
    if (hwloc_set_area_membind(sys->topology(), addr, map_size, sys->node()->nodeset, HWLOC_MEMBIND_BIND,
                               HWLOC_MEMBIND_BYNODESET) == 0) {
      node = static_cast<int>(sys->node_os_index());
    } else {
      ADXL_WARN("MallocMem: binding %zu bytes to NUMA node %u failed (%s); memory kept unbound", size,
                sys->node_os_index(), std::strerror(errno));
    }
  } else {
    // A process-wide condition (hwloc failed, or HWLOC_XMLFILE / HWLOC_SYNTHETIC
    // without HWLOC_THISSYSTEM=1): say it once, not per block.
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) ADXL_WARN("MallocMem: no hwloc topology of this machine; host memory is not NUMA-bound");
  }
  // First touch now, so that the placement (and the cost of faulting) happens
  // here rather than in the middle of the first transfer.
  auto *bytes = static_cast<volatile unsigned char *>(addr);
  for (size_t off = 0; off < size; off += page_size) bytes[off] = 0;

  WireHandle w{};
  w.magic = kHandleMagic;
  w.version = kHandleVersion;
  w.flags = page_size == kHugePageSize ? kFlagHugetlb : 0;
  w.pid = static_cast<int32_t>(getpid());
  w.fd = block.fd.get();
  w.size = size;
  w.page_size = page_size;
  w.node = node;
  w.id = id;
  std::memcpy(w.boot_id, BootId(), sizeof w.boot_id);

  block.info.base = addr;
  block.info.size = size;
  block.info.page_size = page_size;
  block.info.node = node;
  block.info.fd = block.fd.get();
  std::memcpy(block.info.handle.data, &w, sizeof w);
  ADXL_DEBUG("MallocMem: %zu bytes at %p, node %d, %zu-byte pages", size, addr, node, page_size);
  BlockRegistry::Get().Add(std::move(block));
  *ptr = addr;
  return SUCCESS;
}

Status HostExport(const void *addr, ShareableHandle *handle, std::string *why) {
  if (!BlockRegistry::Get().Export(addr, handle)) {
    *why = "not the start of a live MallocMem block";
    return PARAM_INVALID;
  }
  return SUCCESS;
}

Status HostFree(void *ptr, std::string *why) {
  auto node = BlockRegistry::Get().Remove(ptr);
  if (node.empty()) {
    *why = "not the start of a live MallocMem block";
    return PARAM_INVALID;
  }
  return SUCCESS;  // `node` unmaps and closes here, outside the registry lock
}

bool FindHostBlock(const void *addr, HostBlockInfo *info) { return BlockRegistry::Get().Find(addr, info); }

void *ImportShareableHandle(const ShareableHandle &handle, size_t *size, std::string *why) {
  std::string scratch;
  if (why == nullptr) why = &scratch;
  WireHandle w{};
  if (!DecodeHandle(handle, &w, why)) return nullptr;

  const std::string path = "/proc/" + std::to_string(w.pid) + "/fd/" + std::to_string(w.fd);
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    *why = Errno("open " + path, err) + " (owner gone, block freed, or no access)";
    return nullptr;
  }
  // The number may have been reused for another file after FreeMem; the
  // memfd's name carries the block's random id.
  char target[256];
  const std::string self = "/proc/self/fd/" + std::to_string(fd.get());
  ssize_t n = readlink(self.c_str(), target, sizeof target - 1);
  const std::string want = "/memfd:" + MemfdName(w.id);
  if (n < 0 || std::string(target, static_cast<size_t>(n)).compare(0, want.size(), want) != 0 ||
      (static_cast<size_t>(n) > want.size() && target[want.size()] != ' ')) {
    *why = path + " is no longer the exported block";
    return nullptr;
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) < w.size) {
    *why = path + " is smaller than the handle says";
    return nullptr;
  }
  void *addr = mmap(nullptr, w.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (addr == MAP_FAILED) {
    *why = Errno("mmap", errno);
    return nullptr;
  }
  *size = w.size;
  return addr;  // the mapping keeps the file alive; our descriptor closes here
}

void ReleaseImported(void *ptr, size_t size) {
  if (ptr != nullptr && size != 0) munmap(ptr, size);
}

}  // namespace adxl
