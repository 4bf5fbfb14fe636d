// The device runtime seen by the engine; see device_memory.h.
#include "memory/device_memory.h"
#include "common/thread_annotations.h"

#ifdef ADXL_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <mutex>
#include <new>
#include <utility>

namespace adxl {
namespace {

std::string CudaError(const char *call, cudaError_t e) {
  return std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

// Asked once: the driver and the devices a process sees do not change during
// its life (CUDA_VISIBLE_DEVICES is read when the runtime initializes).
bool HaveDevice(std::string *why) {
  static const std::pair<bool, std::string> answer = [] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();  // not sticky, but leave no error behind
      std::string w = "no usable CUDA device: " + CudaError("cudaGetDeviceCount", e);
      if (e == cudaErrorInsufficientDriver) w += "; no NVIDIA driver, or one older than this CUDA runtime";
      return std::make_pair(false, w);
    }
    if (n <= 0) return std::make_pair(false, std::string("no CUDA device (cudaGetDeviceCount: 0)"));
    return std::make_pair(true, std::string());
  }();
  if (!answer.first && why != nullptr) *why = answer.second;
  return answer.first;
}

// The live blocks of DeviceAlloc, by start address.
class Blocks {
 public:
  static Blocks &Get() {
    static Blocks *b = new Blocks();  // never destroyed: FreeMem may run in static destructors
    return *b;
  }
  void Add(void *p, size_t size) {
    MutexLock l(&mu_);
    blocks_[p] = size;
  }
  bool Remove(void *p) {
    MutexLock l(&mu_);
    return blocks_.erase(p) != 0;
  }
  bool Has(const void *p) {
    MutexLock l(&mu_);
    return blocks_.count(const_cast<void *>(p)) != 0;
  }

 private:
  Mutex mu_;  // a leaf
  std::map<void *, size_t> blocks_ ADXL_GUARDED_BY(mu_);
};

const char *TypeName(cudaMemoryType t) {
  switch (t) {
    case cudaMemoryTypeUnregistered: return "host memory unknown to CUDA";
    case cudaMemoryTypeHost: return "host memory (pinned or registered with CUDA)";
    case cudaMemoryTypeDevice: return "device memory";
    case cudaMemoryTypeManaged: return "managed memory (cudaMallocManaged)";
    default: return "memory of an unknown CUDA type";
  }
}

}  // namespace

const char *DeviceRuntimeName() {
  static const std::string name =
      "CUDA runtime " + std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
  return name.c_str();
}

Status DeviceAlloc(size_t size, void **ptr, std::string *why) {
  if (!HaveDevice(why)) return UNSUPPORTED;
  void *p = nullptr;
  cudaError_t e = cudaMalloc(&p, size);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = CudaError("cudaMalloc", e);
    return e == cudaErrorMemoryAllocation ? RESOURCE_EXHAUSTED : FAILED;
  }
  try {
    Blocks::Get().Add(p, size);
  } catch (const std::bad_alloc &) {
    cudaFree(p);
    *why = "out of host memory for the block table";
    return RESOURCE_EXHAUSTED;
  }
  *ptr = p;
  return SUCCESS;
}

bool DeviceFree(void *ptr, Status *status, std::string *why) {
  if (ptr == nullptr || !Blocks::Get().Remove(ptr)) return false;
  cudaError_t e = cudaFree(ptr);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = CudaError("cudaFree", e);
    *status = FAILED;
  } else {
    *status = SUCCESS;
  }
  return true;
}

bool IsDeviceBlock(const void *ptr) { return ptr != nullptr && Blocks::Get().Has(ptr); }

Status CheckDeviceRange(uintptr_t addr, size_t len, bool *checked, std::string *why) {
  *checked = false;
  if (!HaveDevice(nullptr)) return SUCCESS;
  *checked = true;
  // Both ends: cudaPointerGetAttributes tells the kind of one address, and a
  // range that starts in device memory may run past its allocation.
  const uintptr_t ends[2] = {addr, addr + len - 1};
  cudaPointerAttributes attr[2] = {};
  for (int i = 0; i < 2; ++i) {
    cudaError_t e = cudaPointerGetAttributes(&attr[i], reinterpret_cast<const void *>(ends[i]));
    if (e != cudaSuccess) {
      cudaGetLastError();
      char buf[64];
      snprintf(buf, sizeof(buf), "0x%" PRIxPTR, ends[i]);
      *why = std::string("cannot tell what ") + buf + " is: " + CudaError("cudaPointerGetAttributes", e);
      return PARAM_INVALID;
    }
    if (attr[i].type != cudaMemoryTypeDevice) {
      char buf[64];
      snprintf(buf, sizeof(buf), "0x%" PRIxPTR, ends[i]);
      *why = std::string(i == 0 ? "the start " : "the last byte ") + buf + " is " + TypeName(attr[i].type) +
             ", not CUDA device memory" +
             (attr[i].type == cudaMemoryTypeManaged ? "" : i == 0 ? " (register host memory as MEM_HOST)"
                                                                  : " (the range runs past its allocation)");
      return PARAM_INVALID;
    }
  }
  if (attr[0].device != attr[1].device) {
    *why = "the range spans device " + std::to_string(attr[0].device) + " and device " +
           std::to_string(attr[1].device);
    return PARAM_INVALID;
  }
  return SUCCESS;
}

bool IsDeviceAddress(uintptr_t addr) {
  if (IsDeviceBlock(reinterpret_cast<const void *>(addr))) return true;
  if (!HaveDevice(nullptr)) return false;
  cudaPointerAttributes attr = {};
  if (cudaPointerGetAttributes(&attr, reinterpret_cast<const void *>(addr)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice;
}

}  // namespace adxl

#else  // !ADXL_HAVE_CUDA

namespace adxl {

const char *DeviceRuntimeName() { return "none"; }

Status DeviceAlloc(size_t, void **, std::string *why) {
  *why = "this libadxl was built without a device runtime (device memory needs the CUDA toolkit at build time: "
         "cmake -DADXL_WITH_CUDA=ON)";
  return UNSUPPORTED;
}

bool DeviceFree(void *, Status *, std::string *) { return false; }

bool IsDeviceBlock(const void *) { return false; }

Status CheckDeviceRange(uintptr_t, size_t, bool *checked, std::string *) {
  *checked = false;
  return SUCCESS;
}

bool IsDeviceAddress(uintptr_t) { return false; }

}  // namespace adxl

#endif  // ADXL_HAVE_CUDA
