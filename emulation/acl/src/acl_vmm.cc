// The emulated runtime's virtual memory calls: physical allocations
// (aclrtMallocPhysical: one memfd each), address reservations, mappings of
// the one into the other, access flags, shareable handles (export / import,
// the uint64_t and the fabric forms), and aclrtHostRegister.
//
// Why a memfd: mapped memory must be shareable with another process (the
// vendor's programs export a physical allocation and a peer imports and
// maps it) and the ADXL engine's same-node mapped lane maps file-backed
// memory of its peer; MAP_SHARED of a memfd gives both, with the bytes in one
// place.  A handle exported here names the exporting process and its
// descriptor; the importer opens /proc/<pid>/fd/<fd> (the same user, on this
// machine, while the exporter lives).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include "acl/acl_rt.h"
#include "acl_state.h"

using acl_host::Fail;

namespace {

constexpr size_t kGranularity = 2u << 20;  // what the vendor's runtime reports for huge pages
constexpr uint32_t kFabricMagic = 0x4841434cu;  // "LCAH"
constexpr uint32_t kFabricVersion = 1;

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

bool PageAligned(uintptr_t v) { return v % PageSize() == 0; }

struct Physical {
  int fd = -1;
  size_t size = 0;  // whole pages
  int32_t device = 0;
  bool freed = false;  // aclrtFreePhysical was called; gone when its last mapping goes
  int mappings = 0;
};

struct Mapping {
  size_t size = 0;
  Physical *phys = nullptr;
};

struct Reservation {
  size_t size = 0;
  std::map<uintptr_t, Mapping> mappings;  // by address
};

// What an exported handle carries (the fabric form; the uint64_t form packs
// pid and fd).
struct FabricHandle {
  uint32_t magic;
  uint32_t version;
  int32_t pid;
  int32_t fd;
  uint64_t size;
  int32_t device;
};
static_assert(sizeof(FabricHandle) <= sizeof(aclrtMemFabricHandle), "fits the runtime's handle");

class Vmm {
 public:
  static Vmm &Get() {
    // Never destroyed (released on purpose): programs free memory from static destructors.
    static Vmm *v = std::make_unique<Vmm>().release();
    return *v;
  }
  adxl::Mutex mu;  // a leaf
  std::map<Physical *, std::unique_ptr<Physical>> physical ADXL_GUARDED_BY(mu);
  std::map<uintptr_t, Reservation> reservations ADXL_GUARDED_BY(mu);  // by base
  std::map<uintptr_t, size_t> host_registered ADXL_GUARDED_BY(mu);  // base -> size

  Physical *FindPhysical(aclrtDrvMemHandle h) ADXL_REQUIRES(mu) {
    auto it = physical.find(static_cast<Physical *>(h));
    return it == physical.end() || it->second->freed ? nullptr : it->second.get();
  }
  void Drop(Physical *p) ADXL_REQUIRES(mu) {
    if (!p->freed || p->mappings > 0) return;
    close(p->fd);
    physical.erase(p);
  }
  // The reservation holding addr; null when none does.
  std::pair<const uintptr_t, Reservation> *ReservationOf(uintptr_t addr) ADXL_REQUIRES(mu) {
    auto it = reservations.upper_bound(addr);
    if (it == reservations.begin()) return nullptr;
    --it;
    if (addr - it->first >= it->second.size) return nullptr;
    return &*it;
  }
};

aclError NewPhysical(const char *call, int fd, size_t size, int32_t device, aclrtDrvMemHandle *handle) {
  auto p = std::make_unique<Physical>();
  p->fd = fd;
  p->size = size;
  p->device = device;
  Physical *raw = p.get();
  Vmm &v = Vmm::Get();
  adxl::MutexLock l(&v.mu);
  v.physical.emplace(raw, std::move(p));
  *handle = raw;
  (void)call;
  return ACL_SUCCESS;
}

aclError Reserve(const char *call, void **virPtr, size_t size, size_t alignment, void *expectPtr) {
  if (virPtr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "%s: virPtr is NULL", call);
  if (size == 0) return Fail(ACL_ERROR_INVALID_PARAM, "%s: size is 0", call);
  if (alignment != 0 && (alignment & (alignment - 1)) != 0) {
    return Fail(ACL_ERROR_INVALID_PARAM, "%s: alignment %zu is not a power of two", call, alignment);
  }
  const size_t page = PageSize();
  const size_t align = alignment > page ? alignment : page;
  if (size > SIZE_MAX / 2 - align) return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s(%zu): size too large", call, size);
  const size_t len = (size + page - 1) / page * page;
  // Over-reserve by the alignment, then trim both ends.
  void *p = mmap(expectPtr, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s(%zu): no address space (mmap: %s)", call, size, strerror(errno));
  }
  const uintptr_t raw = reinterpret_cast<uintptr_t>(p);
  const uintptr_t base = (raw + align - 1) / align * align;
  if (base > raw) munmap(p, base - raw);
  const uintptr_t end = raw + len + align;
  if (end > base + len) munmap(reinterpret_cast<void *>(base + len), end - (base + len));
  Vmm &v = Vmm::Get();
  try {
    adxl::MutexLock l(&v.mu);
    v.reservations[base].size = len;
  } catch (...) {  // no exception leaves a C call
    munmap(reinterpret_cast<void *>(base), len);
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: out of memory for the reservation table", call);
  }
  *virPtr = reinterpret_cast<void *>(base);
  return ACL_SUCCESS;
}

// Opens the descriptor `fd` of process `pid` (possibly this one).
int OpenPeerFd(int32_t pid, int32_t fd) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/fd/%d", static_cast<int>(pid), static_cast<int>(fd));
  return open(path, O_RDWR | O_CLOEXEC);
}

aclError Import(const char *call, int32_t pid, int32_t fd, int32_t device, aclrtDrvMemHandle *handle) {
  if (handle == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "%s: handle is NULL", call);
  const int mine = OpenPeerFd(pid, fd);
  if (mine < 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s: cannot open the exported memory (/proc/%d/fd/%d: %s; the exporting "
                "process must live, on this machine, as the same user)", call, pid, fd, strerror(errno));
  }
  struct stat st;
  if (fstat(mine, &st) != 0 || st.st_size <= 0) {
    close(mine);
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s: the exported memory /proc/%d/fd/%d is not a physical allocation",
                call, pid, fd);
  }
  try {
    return NewPhysical(call, mine, static_cast<size_t>(st.st_size), device, handle);
  } catch (...) {
    close(mine);
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: out of memory", call);
  }
}

aclError ExportOf(const char *call, aclrtDrvMemHandle handle, FabricHandle *out) {
  Vmm &v = Vmm::Get();
  adxl::MutexLock l(&v.mu);
  Physical *p = v.FindPhysical(handle);
  if (p == nullptr) return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s(%p): unknown physical memory handle", call, handle);
  memset(out, 0, sizeof(*out));
  out->magic = kFabricMagic;
  out->version = kFabricVersion;
  out->pid = static_cast<int32_t>(getpid());
  out->fd = p->fd;
  out->size = p->size;
  out->device = p->device;
  return ACL_SUCCESS;
}

uint64_t Pack(int32_t pid, int32_t fd) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(pid)) << 32) | static_cast<uint32_t>(fd);
}

}  // namespace

namespace acl_host {

int VmmDeviceRange(uintptr_t addr, size_t len, int32_t *device, std::string *why) {
  Vmm &v = Vmm::Get();
  adxl::MutexLock l(&v.mu);
  auto *r = v.ReservationOf(addr);
  if (r == nullptr) return 0;
  auto &maps = r->second.mappings;
  auto it = maps.upper_bound(addr);
  if (it == maps.begin()) return 0;
  --it;
  if (addr - it->first >= it->second.size) return 0;
  *device = it->second.phys->device;
  // Walk adjacent mappings until the range is covered.
  uintptr_t covered = it->first + it->second.size;
  const uintptr_t end = addr + len;
  while (covered < end) {
    ++it;
    if (it == maps.end() || it->first != covered) {
      char buf[160];
      snprintf(buf, sizeof(buf), "[0x%" PRIxPTR ", +%zu) runs past the mapped memory (unmapped at 0x%" PRIxPTR ")",
               addr, len, covered);
      *why = buf;
      return -1;
    }
    covered = it->first + it->second.size;
  }
  return 1;
}

bool HostRegistered(uintptr_t addr) {
  Vmm &v = Vmm::Get();
  adxl::MutexLock l(&v.mu);
  auto it = v.host_registered.upper_bound(addr);
  if (it == v.host_registered.begin()) return false;
  --it;
  return addr - it->first < it->second;
}

}  // namespace acl_host

extern "C" {

aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size, const aclrtPhysicalMemProp *prop,
                             uint64_t flags) {
  if (handle == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocPhysical: handle is NULL");
  if (prop == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocPhysical: prop is NULL");
  if (size == 0) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocPhysical: size is 0");
  if (flags != 0) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocPhysical: flags must be 0");
  int32_t device = 0;
  if (prop->location.type == ACL_MEM_LOCATION_TYPE_DEVICE) {
    if (prop->location.id >= acl_host::DeviceCount()) {
      return Fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtMallocPhysical: no device %u", prop->location.id);
    }
    device = static_cast<int32_t>(prop->location.id);
  } else if (prop->location.type != ACL_MEM_LOCATION_TYPE_HOST &&
             prop->location.type != ACL_MEM_LOCATION_TYPE_HOST_NUMA) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocPhysical: unknown location type %d",
                static_cast<int>(prop->location.type));
  }
  const size_t page = PageSize();
  if (size > SIZE_MAX - page) return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMallocPhysical(%zu): too large", size);
  const size_t len = (size + page - 1) / page * page;
  const int fd = memfd_create("adxl-acl-physical", MFD_CLOEXEC);
  if (fd < 0) return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMallocPhysical: memfd_create: %s", strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(len)) != 0) {
    const int e = errno;
    close(fd);
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMallocPhysical(%zu): %s", size, strerror(e));
  }
  try {
    return NewPhysical("aclrtMallocPhysical", fd, len, device, handle);
  } catch (...) {  // no exception leaves a C call
    close(fd);
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMallocPhysical: out of memory");
  }
}

aclError aclrtFreePhysical(aclrtDrvMemHandle handle) {
  Vmm &v = Vmm::Get();
  adxl::MutexLock l(&v.mu);
  Physical *p = v.FindPhysical(handle);
  if (p == nullptr) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtFreePhysical(%p): unknown physical memory handle (or freed)", handle);
  }
  p->freed = true;
  v.Drop(p);  // the memory lives on while mapped, as the vendor's
  return ACL_SUCCESS;
}

aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp *prop, aclrtMemGranularityOptions option,
                                          size_t *granularity) {
  if (prop == nullptr || granularity == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemGetAllocationGranularity: %s is NULL", prop ? "granularity" : "prop");
  }
  if (option != ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM && option != ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemGetAllocationGranularity: unknown option %d", static_cast<int>(option));
  }
  *granularity = kGranularity;
  return ACL_SUCCESS;
}

aclError aclrtReserveMemAddress(void **virPtr, size_t size, size_t alignment, void *expectPtr, uint64_t flags) {
  (void)flags;  // page type: every page is a host page here
  return Reserve("aclrtReserveMemAddress", virPtr, size, alignment, expectPtr);
}

aclError aclrtReserveMemAddressNoUCMemory(void **virPtr, size_t size, size_t alignment, void *expectPtr,
                                          uint64_t flags) {
  (void)flags;
  return Reserve("aclrtReserveMemAddressNoUCMemory", virPtr, size, alignment, expectPtr);
}

aclError aclrtReleaseMemAddress(void *virPtr) {
  Vmm &v = Vmm::Get();
  adxl::MutexLock l(&v.mu);
  auto it = v.reservations.find(reinterpret_cast<uintptr_t>(virPtr));
  if (it == v.reservations.end()) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtReleaseMemAddress(%p): not the start of a reservation", virPtr);
  }
  if (!it->second.mappings.empty()) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtReleaseMemAddress(%p): %zu mapping(s) still inside (aclrtUnmapMem "
                "them first)", virPtr, it->second.mappings.size());
  }
  munmap(virPtr, it->second.size);
  v.reservations.erase(it);
  return ACL_SUCCESS;
}

aclError aclrtMapMem(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle, uint64_t flags) {
  if (flags != 0) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMapMem: flags must be 0");
  const uintptr_t a = reinterpret_cast<uintptr_t>(virPtr);
  if (size == 0 || !PageAligned(a) || !PageAligned(size) || !PageAligned(offset)) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMapMem(%p, %zu, offset %zu): address, size and offset must be whole "
                "pages and size > 0", virPtr, size, offset);
  }
  Vmm &v = Vmm::Get();
  adxl::MutexLock l(&v.mu);
  Physical *p = v.FindPhysical(handle);
  if (p == nullptr) return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtMapMem: unknown physical memory handle %p", handle);
  if (offset > p->size || size > p->size - offset) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMapMem: [%zu, +%zu) is outside the physical allocation (%zu bytes)",
                offset, size, p->size);
  }
  auto *r = v.ReservationOf(a);
  if (r == nullptr || size > r->second.size - (a - r->first)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtMapMem(%p, %zu): not inside one reservation (aclrtReserveMemAddress)",
                virPtr, size);
  }
  auto &maps = r->second.mappings;
  auto next = maps.lower_bound(a);
  if (next != maps.end() && next->first < a + size) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtMapMem(%p, %zu): overlaps the mapping at 0x%" PRIxPTR, virPtr, size,
                next->first);
  }
  if (next != maps.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > a) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtMapMem(%p, %zu): overlaps the mapping at 0x%" PRIxPTR, virPtr,
                  size, prev->first);
    }
  }
  void *m = mmap(virPtr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, p->fd, static_cast<off_t>(offset));
  if (m == MAP_FAILED) return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMapMem: mmap: %s", strerror(errno));
  try {
    maps[a] = Mapping{size, p};
  } catch (...) {  // no exception leaves a C call
    mmap(virPtr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMapMem: out of memory");
  }
  ++p->mappings;
  return ACL_SUCCESS;
}

aclError aclrtUnmapMem(void *virPtr) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(virPtr);
  Vmm &v = Vmm::Get();
  adxl::MutexLock l(&v.mu);
  auto *r = v.ReservationOf(a);
  if (r == nullptr || r->second.mappings.count(a) == 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtUnmapMem(%p): not the start of a mapping (aclrtMapMem)", virPtr);
  }
  auto it = r->second.mappings.find(a);
  // Back to reserved, inaccessible address space.
  mmap(virPtr, it->second.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  Physical *p = it->second.phys;
  r->second.mappings.erase(it);
  --p->mappings;
  v.Drop(p);
  return ACL_SUCCESS;
}

aclError aclrtMemSetAccess(void *virPtr, size_t size, aclrtMemAccessDesc *desc, size_t count) {
  if (desc == nullptr || count == 0) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemSetAccess: no access descriptor");
  int32_t device = 0;
  std::string why;
  if (acl_host::VmmDeviceRange(reinterpret_cast<uintptr_t>(virPtr), size, &device, &why) != 1 || size == 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtMemSetAccess(%p, %zu): not mapped memory%s%s", virPtr, size,
                why.empty() ? "" : ": ", why.c_str());
  }
  int prot = PROT_READ | PROT_WRITE;
  for (size_t i = 0; i < count; ++i) {
    switch (desc[i].flags) {
      case ACL_RT_MEM_ACCESS_FLAGS_NONE: prot = PROT_NONE; break;
      case ACL_RT_MEM_ACCESS_FLAGS_READ: prot = PROT_READ; break;
      case ACL_RT_MEM_ACCESS_FLAGS_READWRITE: prot = PROT_READ | PROT_WRITE; break;
      default:
        return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemSetAccess: unknown access flags 0x%x",
                    static_cast<unsigned>(desc[i].flags));
    }
  }
  if (mprotect(virPtr, size, prot) != 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtMemSetAccess(%p, %zu): %s", virPtr, size, strerror(errno));
  }
  return ACL_SUCCESS;
}

aclError aclrtMemExportToShareableHandle(aclrtDrvMemHandle handle, aclrtMemHandleType handleType, uint64_t flags,
                                         uint64_t *shareableHandle) {
  (void)handleType;
  (void)flags;
  if (shareableHandle == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemExportToShareableHandle: shareableHandle is NULL");
  }
  FabricHandle h;
  const aclError e = ExportOf("aclrtMemExportToShareableHandle", handle, &h);
  if (e != ACL_SUCCESS) return e;
  *shareableHandle = Pack(h.pid, h.fd);
  return ACL_SUCCESS;
}

aclError aclrtMemImportFromShareableHandle(uint64_t shareableHandle, int32_t deviceId, aclrtDrvMemHandle *handle) {
  if (deviceId < 0 || static_cast<uint32_t>(deviceId) >= acl_host::DeviceCount()) {
    return Fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtMemImportFromShareableHandle: no device %d", deviceId);
  }
  return Import("aclrtMemImportFromShareableHandle", static_cast<int32_t>(shareableHandle >> 32),
                static_cast<int32_t>(shareableHandle & 0xffffffffu), deviceId, handle);
}

aclError aclrtMemSetPidToShareableHandle(uint64_t shareableHandle, int32_t *pid, size_t pidNum) {
  (void)shareableHandle;
  if (pid == nullptr || pidNum == 0) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemSetPidToShareableHandle: no pid");
  return ACL_SUCCESS;  // every process of the same user may import here
}

aclError aclrtMemExportToShareableHandleV2(aclrtDrvMemHandle handle, uint64_t flags, aclrtMemSharedHandleType shareType,
                                           void *shareableHandle) {
  (void)flags;
  if (shareableHandle == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemExportToShareableHandleV2: shareableHandle is NULL");
  }
  FabricHandle h;
  const aclError e = ExportOf("aclrtMemExportToShareableHandleV2", handle, &h);
  if (e != ACL_SUCCESS) return e;
  if (shareType == ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT) {
    const uint64_t packed = Pack(h.pid, h.fd);
    memcpy(shareableHandle, &packed, sizeof packed);
  } else if (shareType == ACL_MEM_SHARE_HANDLE_TYPE_FABRIC) {
    aclrtMemFabricHandle out;
    memset(&out, 0, sizeof out);
    memcpy(out.data, &h, sizeof h);
    memcpy(shareableHandle, &out, sizeof out);
  } else {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemExportToShareableHandleV2: unknown share type %d",
                static_cast<int>(shareType));
  }
  return ACL_SUCCESS;
}

aclError aclrtMemImportFromShareableHandleV2(void *shareableHandle, aclrtMemSharedHandleType shareType, uint64_t flags,
                                             aclrtDrvMemHandle *handle) {
  (void)flags;
  if (shareableHandle == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemImportFromShareableHandleV2: shareableHandle is NULL");
  }
  const int32_t device = acl_host::ThreadDevice() >= 0 ? acl_host::ThreadDevice() : 0;
  if (shareType == ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT) {
    uint64_t packed = 0;
    memcpy(&packed, shareableHandle, sizeof packed);
    return Import("aclrtMemImportFromShareableHandleV2", static_cast<int32_t>(packed >> 32),
                  static_cast<int32_t>(packed & 0xffffffffu), device, handle);
  }
  if (shareType != ACL_MEM_SHARE_HANDLE_TYPE_FABRIC) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemImportFromShareableHandleV2: unknown share type %d",
                static_cast<int>(shareType));
  }
  FabricHandle h;
  memcpy(&h, shareableHandle, sizeof h);
  if (h.magic != kFabricMagic || h.version != kFabricVersion) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtMemImportFromShareableHandleV2: not a fabric handle of this runtime");
  }
  return Import("aclrtMemImportFromShareableHandleV2", h.pid, h.fd, device, handle);
}

aclError aclrtMemSetPidToShareableHandleV2(void *shareableHandle, aclrtMemSharedHandleType shareType, int32_t *pid,
                                           size_t pidNum) {
  (void)shareType;
  if (shareableHandle == nullptr || pid == nullptr || pidNum == 0) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemSetPidToShareableHandleV2: no handle or no pid");
  }
  return ACL_SUCCESS;
}

aclError aclrtHostRegister(void *ptr, uint64_t size, aclrtHostRegisterType type, void **devPtr) {
  if (ptr == nullptr || devPtr == nullptr || size == 0) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtHostRegister: %s", size == 0 ? "size is 0" : "a pointer is NULL");
  }
  if (type != ACL_HOST_REGISTER_MAPPED) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtHostRegister: unknown type %d", static_cast<int>(type));
  }
  const uintptr_t a = reinterpret_cast<uintptr_t>(ptr);
  Vmm &v = Vmm::Get();
  adxl::MutexLock l(&v.mu);
  auto next = v.host_registered.lower_bound(a);
  const bool overlaps = (next != v.host_registered.end() && next->first < a + size) ||
                        (next != v.host_registered.begin() && std::prev(next)->first + std::prev(next)->second > a);
  if (overlaps) return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtHostRegister(%p): overlaps a registered range", ptr);
  try {
    v.host_registered[a] = static_cast<size_t>(size);
  } catch (...) {  // no exception leaves a C call
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtHostRegister: out of memory");
  }
  *devPtr = ptr;
  return ACL_SUCCESS;
}

aclError aclrtHostUnregister(void *ptr) {
  Vmm &v = Vmm::Get();
  adxl::MutexLock l(&v.mu);
  if (v.host_registered.erase(reinterpret_cast<uintptr_t>(ptr)) == 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtHostUnregister(%p): not a registered range", ptr);
  }
  return ACL_SUCCESS;
}

}  // extern "C"
