// The emulated runtime's memory calls: aclrtMalloc / aclrtFree (emulated
// device memory), aclrtMallocHost / aclrtFreeHost, aclrtMemcpy(Async),
// aclrtMemset, aclrtPointerGetAttributes, and the engine's range query.
//
// Blocks are whole pages from mmap: page-aligned like device allocations, and
// nothing else shares their pages, so a range check against a block is exact
// and a peer's cross-memory attach reads nothing but the block.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "acl/acl_rt.h"
#include "acl_state.h"

using acl_host::Block;
using acl_host::BlockKind;
using acl_host::Blocks;
using acl_host::Fail;

namespace {

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

aclError Allocate(const char *call, void **ptr, size_t size, BlockKind kind, int32_t device) {
  if (ptr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "%s: the output pointer is NULL", call);
  if (size == 0) return Fail(ACL_ERROR_INVALID_PARAM, "%s: size is 0", call);
  const size_t page = PageSize();
  if (size > SIZE_MAX - page) return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s(%zu): size too large", call, size);
  const size_t mapped = (size + page - 1) / page * page;
  void *p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s(%zu): out of memory (mmap: %s)", call, size, strerror(errno));
  }
  Block b;
  b.base = reinterpret_cast<uintptr_t>(p);
  b.size = size;
  b.mapped = mapped;
  b.kind = kind;
  b.device = device;
  try {
    Blocks::Get().Add(b);
  } catch (...) {  // no exception leaves a C call
    munmap(p, mapped);
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s(%zu): out of memory for the block table", call, size);
  }
  *ptr = p;
  return ACL_SUCCESS;
}

aclError Release(const char *call, void *ptr, BlockKind kind) {
  if (ptr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "%s: the pointer is NULL", call);
  Block b;
  switch (Blocks::Get().Take(reinterpret_cast<uintptr_t>(ptr), kind, &b)) {
    case Blocks::TakeResult::kTaken:
      munmap(reinterpret_cast<void *>(b.base), b.mapped);
      return ACL_SUCCESS;
    case Blocks::TakeResult::kOtherKind:
      return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s(%p): the block was allocated with %s; free it with %s", call, ptr,
                  b.kind == BlockKind::kDevice ? "aclrtMalloc" : "aclrtMallocHost",
                  b.kind == BlockKind::kDevice ? "aclrtFree" : "aclrtFreeHost");
    case Blocks::TakeResult::kNoBlock:
      break;
  }
  if (Blocks::Get().Find(reinterpret_cast<uintptr_t>(ptr), &b)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s(%p): not the start of a block (it lies %zu bytes into the block at 0x%" PRIxPTR ")",
                call, ptr, static_cast<size_t>(reinterpret_cast<uintptr_t>(ptr) - b.base), b.base);
  }
  return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s(%p): unknown pointer (never allocated by %s, or already freed)", call,
              ptr, kind == BlockKind::kDevice ? "aclrtMalloc" : "aclrtMallocHost");
}

// What [addr, addr+len) is: 1 inside one device block (*device), 0 in no
// device block at all, -1 device memory that runs past its block (*why).
// Mapped physical memory (aclrtMapMem) is device memory too.
int DeviceRange(uintptr_t addr, size_t len, int32_t *device, std::string *why) {
  Block b;
  if (!Blocks::Get().Find(addr, &b) || b.kind != BlockKind::kDevice) {
    return acl_host::VmmDeviceRange(addr, len, device, why);
  }
  if (len > b.size - (addr - b.base)) {
    char buf[192];
    snprintf(buf, sizeof(buf), "[0x%" PRIxPTR ", +%zu) runs %zu bytes past the end of the aclrtMalloc block at 0x%" PRIxPTR
             " (%zu bytes)", addr, len, len - (b.size - (addr - b.base)), b.base, b.size);
    *why = buf;
    return -1;
  }
  *device = b.device;
  return 1;
}

// One side of a copy: `want_device` says where the kind puts it.
aclError CheckSide(const char *call, const char *side, const void *p, size_t count, bool want_device) {
  int32_t device = 0;
  std::string why;
  const int r = DeviceRange(reinterpret_cast<uintptr_t>(p), count, &device, &why);
  if (r < 0) return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s: %s %s", call, side, why.c_str());
  if (want_device && r == 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s: %s %p is not device memory (not from aclrtMalloc), but the copy kind "
                "says it is", call, side, p);
  }
  if (!want_device && r == 1) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s: %s %p is device memory (from aclrtMalloc), but the copy kind says "
                "host memory", call, side, p);
  }
  return ACL_SUCCESS;
}

aclError Copy(const char *call, void *dst, size_t dest_max, const void *src, size_t count, aclrtMemcpyKind kind) {
  if (count > dest_max) return Fail(ACL_ERROR_INVALID_PARAM, "%s: count %zu is over destMax %zu", call, count, dest_max);
  if (count == 0) return ACL_SUCCESS;
  if (dst == nullptr || src == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "%s: %s is NULL", call, dst ? "src" : "dst");
  int dst_dev = -1, src_dev = -1;  // -1: either (ACL_MEMCPY_DEFAULT)
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: dst_dev = 0; src_dev = 0; break;
    case ACL_MEMCPY_HOST_TO_DEVICE:
    case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: dst_dev = 1; src_dev = 0; break;
    case ACL_MEMCPY_DEVICE_TO_HOST: dst_dev = 0; src_dev = 1; break;
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE: dst_dev = 1; src_dev = 1; break;
    case ACL_MEMCPY_DEFAULT: break;
    default: return Fail(ACL_ERROR_INVALID_PARAM, "%s: unknown aclrtMemcpyKind %d", call, static_cast<int>(kind));
  }
  int32_t device = 0;
  std::string why;
  for (int side = 0; side < 2; ++side) {
    const void *p = side == 0 ? dst : src;
    const int want = side == 0 ? dst_dev : src_dev;
    const char *name = side == 0 ? "dst" : "src";
    if (want >= 0) {
      aclError e = CheckSide(call, name, p, count, want == 1);
      if (e != ACL_SUCCESS) return e;
    } else if (DeviceRange(reinterpret_cast<uintptr_t>(p), count, &device, &why) < 0) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s: %s %s", call, name, why.c_str());
    }
  }
  memmove(dst, src, count);
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  const unsigned base = static_cast<unsigned>(policy) & 0xffu;
  if (base > ACL_MEM_MALLOC_HUGE1G_ONLY_P2P) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: unknown aclrtMemMallocPolicy 0x%x", static_cast<unsigned>(policy));
  }
  const int32_t device = acl_host::ThreadDevice() >= 0 ? acl_host::ThreadDevice() : 0;
  return Allocate("aclrtMalloc", devPtr, size, BlockKind::kDevice, device);
}

aclError aclrtFree(void *devPtr) { return Release("aclrtFree", devPtr, BlockKind::kDevice); }

aclError aclrtMallocHost(void **hostPtr, size_t size) {
  return Allocate("aclrtMallocHost", hostPtr, size, BlockKind::kHost, 0);
}

aclError aclrtFreeHost(void *hostPtr) { return Release("aclrtFreeHost", hostPtr, BlockKind::kHost); }

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
  return Copy("aclrtMemcpy", dst, destMax, src, count, kind);
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  if (stream != nullptr && !acl_host::Streams::Get().Has(stream)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtMemcpyAsync: unknown stream %p", stream);
  }
  return Copy("aclrtMemcpyAsync", dst, destMax, src, count, kind);
}

aclError aclrtMemcpyBatch(void **dsts, size_t *destMax, void **srcs, size_t *sizes, size_t numBatches,
                          aclrtMemcpyBatchAttr *attrs, size_t *attrsIndexes, size_t numAttrs, size_t *failIdx) {
  static const char kCall[] = "aclrtMemcpyBatch";
  if (failIdx != nullptr) *failIdx = SIZE_MAX;
  if (failIdx == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "%s: failIdx is NULL", kCall);
  if (numBatches == 0) return Fail(ACL_ERROR_INVALID_PARAM, "%s: numBatches is 0", kCall);
  if (dsts == nullptr || destMax == nullptr || srcs == nullptr || sizes == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "%s: dsts, destMax, srcs and sizes must not be NULL", kCall);
  }
  if (numAttrs == 0 || attrs == nullptr || attrsIndexes == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "%s: at least one attribute (attrs, attrsIndexes, numAttrs) is needed",
                kCall);
  }
  if (attrsIndexes[0] != 0) return Fail(ACL_ERROR_INVALID_PARAM, "%s: attrsIndexes[0] must be 0", kCall);
  for (size_t j = 1; j < numAttrs; ++j) {
    if (attrsIndexes[j] <= attrsIndexes[j - 1] || attrsIndexes[j] >= numBatches) {
      return Fail(ACL_ERROR_INVALID_PARAM, "%s: attrsIndexes must rise and stay below numBatches (entry %zu)", kCall,
                  j);
    }
  }
  size_t attr = 0;
  for (size_t i = 0; i < numBatches; ++i) {
    while (attr + 1 < numAttrs && attrsIndexes[attr + 1] <= i) ++attr;
    const aclrtMemcpyBatchAttr &a = attrs[attr];
    aclrtMemcpyKind kind = ACL_MEMCPY_DEFAULT;
    const bool dst_dev = a.dstLoc.type == ACL_MEM_LOCATION_TYPE_DEVICE;
    const bool src_dev = a.srcLoc.type == ACL_MEM_LOCATION_TYPE_DEVICE;
    kind = dst_dev ? (src_dev ? ACL_MEMCPY_DEVICE_TO_DEVICE : ACL_MEMCPY_HOST_TO_DEVICE)
                   : (src_dev ? ACL_MEMCPY_DEVICE_TO_HOST : ACL_MEMCPY_HOST_TO_HOST);
    const aclError e = Copy(kCall, dsts[i], destMax[i], srcs[i], sizes[i], kind);
    if (e != ACL_SUCCESS) {
      *failIdx = i;
      return e;
    }
  }
  return ACL_SUCCESS;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
  if (count > maxCount) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: count %zu is over maxCount %zu", count, maxCount);
  if (count == 0) return ACL_SUCCESS;
  if (devPtr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: the pointer is NULL");
  Block b;
  const uintptr_t a = reinterpret_cast<uintptr_t>(devPtr);
  if (!Blocks::Get().Find(a, &b)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtMemset(%p): not memory from aclrtMalloc or aclrtMallocHost", devPtr);
  }
  if (count > b.size - (a - b.base)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtMemset(%p, %zu): runs past the end of its block (0x%" PRIxPTR ", %zu bytes)",
                devPtr, count, b.base, b.size);
  }
  memset(devPtr, value, count);
  return ACL_SUCCESS;
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
  if (free == nullptr || total == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: %s is NULL", free == nullptr ? "free" : "total");
  }
  if (static_cast<int>(attr) < 0 || attr > ACL_MEM_P2P_HUGE1G) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: unknown aclrtMemAttr %d", static_cast<int>(attr));
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long avail = sysconf(_SC_AVPHYS_PAGES);
  if (pages <= 0 || avail < 0) return Fail(ACL_ERROR_INTERNAL_ERROR, "aclrtGetMemInfo: sysconf: %s", strerror(errno));
  *total = static_cast<size_t>(pages) * PageSize();
  *free = static_cast<size_t>(avail) * PageSize();
  return ACL_SUCCESS;
}

aclError aclrtPointerGetAttributes(const void *ptr, aclrtPtrAttributes *attributes) {
  if (attributes == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtPointerGetAttributes: attributes is NULL");
  if (ptr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtPointerGetAttributes: the pointer is NULL");
  memset(attributes, 0, sizeof(*attributes));
  attributes->pageSize = static_cast<uint32_t>(PageSize());
  Block b;
  int32_t vmm_device = 0;
  std::string why;
  if (!Blocks::Get().Find(reinterpret_cast<uintptr_t>(ptr), &b)) {
    if (acl_host::VmmDeviceRange(reinterpret_cast<uintptr_t>(ptr), 1, &vmm_device, &why) == 1) {
      attributes->location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
      attributes->location.id = static_cast<uint32_t>(vmm_device);
    } else if (acl_host::HostRegistered(reinterpret_cast<uintptr_t>(ptr))) {
      attributes->location.type = ACL_MEM_LOCATION_TYPE_HOST;
    } else {
      attributes->location.type = ACL_MEM_LOCATION_TYPE_UNREGISTERED;
    }
  } else if (b.kind == BlockKind::kDevice) {
    attributes->location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    attributes->location.id = static_cast<uint32_t>(b.device);
  } else {
    attributes->location.type = ACL_MEM_LOCATION_TYPE_HOST;
  }
  return ACL_SUCCESS;
}

// Only this emulation has it (declared in acl_state.h's sibling, not in the
// vendor's headers); see src/memory/acl_host.h of the engine.
__attribute__((visibility("default"))) int adxl_acl_host_query(uintptr_t addr, size_t len, int32_t *deviceId,
                                                                char *why, size_t whySize) {
  int32_t device = 0;
  std::string w;
  const int r = DeviceRange(addr, len, &device, &w);
  if (r == 1) {
    if (deviceId != nullptr) *deviceId = device;
    return 1;
  }
  if (why != nullptr && whySize > 0) {
    if (r == 0) {
      snprintf(why, whySize, "0x%" PRIxPTR " is not memory from aclrtMalloc (the host ACL runtime emulation has no "
               "device block there)", addr);
    } else {
      snprintf(why, whySize, "%s", w.c_str());
    }
  }
  return 0;
}

}  // extern "C"
