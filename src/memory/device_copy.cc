// Host <-> device copies; see device_copy.h.
#include "memory/device_copy.h"

#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "memory/acl_host.h"

#ifdef ADXL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace adxl {
namespace {

std::string Hex(uintptr_t a) {
  char buf[32];
  snprintf(buf, sizeof(buf), "0x%" PRIxPTR, a);
  return buf;
}

#ifdef ADXL_HAVE_CUDA
// Asked once: the devices a process sees do not change during its life.
bool HaveCudaDevice() {
  static const bool yes = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // leave no error behind for the application's next call
      return false;
    }
    return n > 0;
  }();
  return yes;
}

bool IsCudaDevice(uintptr_t addr) {
  if (!HaveCudaDevice()) return false;
  cudaPointerAttributes attr = {};
  if (cudaPointerGetAttributes(&attr, reinterpret_cast<const void *>(addr)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  // Managed memory too: cudaMemcpy reaches it as it reaches device memory.
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

Status CudaCopy(const CopyPiece &p, CopyKind kind, std::string *why) {
  const cudaError_t e = cudaMemcpy(reinterpret_cast<void *>(p.dst), reinterpret_cast<const void *>(p.src), p.len,
                                   kind == CopyKind::kHostToDevice ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) return SUCCESS;
  cudaGetLastError();
  *why = std::string("cudaMemcpy: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  return FAILED;
}
#endif

// Step 3 of device_copy.h: a runtime the application loaded.  Opened with
// RTLD_NOLOAD for the length of one DeviceCopy and closed after, never kept:
// glibc allocates for every handle, and one held for the life of the process
// is reported by LeakSanitizer.  Searched on first need only.
class LoadedRuntime {
 public:
  LoadedRuntime() = default;
  LoadedRuntime(const LoadedRuntime &) = delete;
  LoadedRuntime &operator=(const LoadedRuntime &) = delete;
  ~LoadedRuntime() {
    if (handle_ != nullptr) dlclose(handle_);
  }

  // UNSUPPORTED when no such runtime is loaded; acl_allowed: libascendcl may
  // be used (not when the host ACL emulation, which is one, is loaded).
  Status Copy(const CopyPiece &p, CopyKind kind, bool acl_allowed, std::string *why) {
    if (!searched_) Find(acl_allowed);
    const int k = static_cast<int>(kind);
    void *dst = reinterpret_cast<void *>(p.dst);
    const void *src = reinterpret_cast<const void *>(p.src);
    int e = 0;
    if (cuda_copy_ != nullptr) {
      e = cuda_copy_(dst, src, p.len, k);
    } else if (acl_copy_ != nullptr && acl_allowed) {
      e = acl_copy_(dst, p.len, src, p.len, k);
    } else {
      return UNSUPPORTED;
    }
    if (e == 0) return SUCCESS;
    *why = std::string(cuda_copy_ != nullptr ? "cudaMemcpy" : "aclrtMemcpy") + " of " + name_ + " failed with error " +
           std::to_string(e);
    if (cuda_copy_ != nullptr && cuda_error_ != nullptr) *why += std::string(" (") + cuda_error_(e) + ")";
    if (cuda_copy_ != nullptr && cuda_last_error_ != nullptr) cuda_last_error_();  // as CudaCopy does
    return FAILED;
  }

 private:
  using CudaCountFn = int (*)(int *);
  using CudaCopyFn = int (*)(void *, const void *, size_t, int);
  using CudaErrorFn = const char *(*)(int);
  using CudaLastErrorFn = int (*)();
  using AclCopyFn = int (*)(void *, size_t, const void *, size_t, int);

  void Find(bool acl_allowed) {
    searched_ = true;
#ifndef ADXL_HAVE_CUDA
    // The names the CUDA runtime's library goes by (the Python package's list, and CUDA 13's).
    for (const char *name : {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"}) {
      void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
      if (h == nullptr) continue;
      auto count = reinterpret_cast<CudaCountFn>(dlsym(h, "cudaGetDeviceCount"));
      auto copy = reinterpret_cast<CudaCopyFn>(dlsym(h, "cudaMemcpy"));
      auto last_error = reinterpret_cast<CudaLastErrorFn>(dlsym(h, "cudaGetLastError"));
      int n = 0;
      const bool usable = count != nullptr && copy != nullptr && count(&n) == 0 && n > 0;
      // Leave no error of ours behind for the application's next CUDA call.
      if (!usable && last_error != nullptr) last_error();
      if (usable) {
        handle_ = h;
        cuda_copy_ = copy;
        cuda_last_error_ = last_error;
        cuda_error_ = reinterpret_cast<CudaErrorFn>(dlsym(h, "cudaGetErrorString"));
        name_ = name;
        return;
      }
      dlclose(h);
    }
#endif
    if (!acl_allowed) return;
    void *h = dlopen("libascendcl.so", RTLD_LAZY | RTLD_NOLOAD);
    if (h == nullptr) return;
    auto copy = reinterpret_cast<AclCopyFn>(dlsym(h, "aclrtMemcpy"));
    if (copy == nullptr) {
      dlclose(h);
      return;
    }
    handle_ = h;
    acl_copy_ = copy;
    name_ = "libascendcl.so";
  }

  bool searched_ = false;
  void *handle_ = nullptr;
  CudaCopyFn cuda_copy_ = nullptr;
  CudaErrorFn cuda_error_ = nullptr;
  CudaLastErrorFn cuda_last_error_ = nullptr;
  AclCopyFn acl_copy_ = nullptr;
  std::string name_;
};

}  // namespace

Status DeviceCopy(const std::vector<CopyPiece> &pieces, CopyKind kind, std::string *why) {
  LoadedRuntime loaded;
  for (const CopyPiece &p : pieces) {
    const uintptr_t device = kind == CopyKind::kHostToDevice ? p.dst : p.src;
#ifdef ADXL_HAVE_CUDA
    if (IsCudaDevice(device)) {
      const Status s = CudaCopy(p, kind, why);
      if (s != SUCCESS) return s;
      continue;
    }
    const char *not_cuda = HaveCudaDevice() ? "it is not CUDA device memory, " : "no CUDA device is usable, ";
#else
    const char *not_cuda = "";
#endif
    std::string emulation;
    const AclHostRange range = QueryAclHostRange(device, p.len, &emulation);
    if (range == AclHostRange::kInside) {
      // The emulation's device memory is host memory (memory/acl_host.h).
      std::memmove(reinterpret_cast<void *>(p.dst), reinterpret_cast<const void *>(p.src), p.len);
      continue;
    }
    const bool no_emulation = range == AclHostRange::kNoEmulation;
    const Status s = loaded.Copy(p, kind, no_emulation, why);
    if (s == UNSUPPORTED) {
      // Step 3's runtimes, as looked for in this build and this process.
      std::string looked;
#ifndef ADXL_HAVE_CUDA
      looked = "libcudart with a usable device";
#endif
      if (no_emulation) looked += std::string(looked.empty() ? "" : ", ") + "libascendcl with aclrtMemcpy";
      *why = "no device runtime in this process copies the device memory at " + Hex(device) + ": " + not_cuda +
             (no_emulation ? "the host ACL emulation is not loaded"
                           : "it is not the host ACL emulation's (" + emulation + ")") +
             (looked.empty() ? "" : ", and no other runtime is loaded (looked for: " + looked + ")");
      return UNSUPPORTED;
    }
    if (s != SUCCESS) return s;
  }
  return SUCCESS;
}

}  // namespace adxl
