#include "memory/acl_host.h"

#include <dlfcn.h>

#include <cstring>

#include <atomic>
#include <set>

#include "common/thread_annotations.h"

namespace adxl {
namespace {

using QueryFn = int (*)(uintptr_t, size_t, int32_t *, char *, size_t);
// The vendor's signatures (acl/acl_rt.h): aclError is int, the policy an enum (int-sized).
using MallocFn = int (*)(void **, size_t, int);
using FreeFn = int (*)(void *);

// Looked up until found, then kept: a program may dlopen the emulation after
// the engine started, and a library once loaded by the emulation's users
// stays (libascendcl is not unloaded while its memory is registered).
QueryFn Query() {
  static std::atomic<QueryFn> cached{nullptr};
  QueryFn fn = cached.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = reinterpret_cast<QueryFn>(dlsym(RTLD_DEFAULT, "adxl_acl_host_query"));
    if (fn != nullptr) cached.store(fn, std::memory_order_release);
  }
  return fn;
}

struct Calls {
  MallocFn malloc_fn = nullptr;
  FreeFn free_fn = nullptr;
};

// aclrtMalloc / aclrtFree of the very library that exports the query: a real
// libascendcl earlier in the search order must not answer for it.  Resolved
// once found, then kept.
class EmulationCalls {
 public:
  static EmulationCalls &Get() {
    static EmulationCalls *c = new EmulationCalls();  // never destroyed: FreeMem may run in static destructors
    return *c;
  }
  bool Resolve(Calls *out, std::string *why) ADXL_EXCLUDES(mu_) {
    adxl::MutexLock lock(&mu_);
    if (cached_.malloc_fn == nullptr && !Find(&cached_, why)) return false;
    *out = cached_;
    return true;
  }

 private:
  // Whether the function at `fn` lives in the library file `file`.
  template <typename Fn>
  static bool SameFile(Fn fn, const char *file) {
    Dl_info info{};
    return dladdr(reinterpret_cast<void *>(fn), &info) != 0 && info.dli_fname != nullptr &&
           std::strcmp(info.dli_fname, file) == 0;
  }

  static bool Find(Calls *c, std::string *why) {
    QueryFn q = Query();
    if (q == nullptr) {
      *why = "no device runtime: neither a CUDA device nor the host ACL emulation (libascendcl.so of "
             "emulation/acl) is in this process";
      return false;
    }
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(q), &info) == 0 || info.dli_fname == nullptr) {
      *why = "the host ACL emulation is loaded but its library file cannot be found (dladdr)";
      return false;
    }
    // The process's aclrtMalloc / aclrtFree, accepted only when they are the
    // emulation's own (the same library file as the query), so a real
    // libascendcl is never called.  No dlopen, not even RTLD_NOLOAD: glibc
    // allocates for every handle, and a handle kept for the life of the
    // process is reported by LeakSanitizer.
    Calls found;
    found.malloc_fn = reinterpret_cast<MallocFn>(dlsym(RTLD_DEFAULT, "aclrtMalloc"));
    found.free_fn = reinterpret_cast<FreeFn>(dlsym(RTLD_DEFAULT, "aclrtFree"));
    if (found.malloc_fn == nullptr || found.free_fn == nullptr || !SameFile(found.malloc_fn, info.dli_fname) ||
        !SameFile(found.free_fn, info.dli_fname)) {
      *why = std::string("the process's aclrtMalloc / aclrtFree are not those of the host ACL emulation ") +
             info.dli_fname;
      return false;
    }
    *c = found;
    return true;
  }

  adxl::Mutex mu_;  // a leaf
  Calls cached_ ADXL_GUARDED_BY(mu_);
};

// The blocks AclHostAlloc handed out, so that FreeMem frees only those
// (a program's own aclrtMalloc memory is the program's to free).
class OurBlocks {
 public:
  static OurBlocks &Get() {
    static OurBlocks *b = new OurBlocks();  // never destroyed: FreeMem may run in static destructors
    return *b;
  }
  void Add(const void *p) ADXL_EXCLUDES(mu_) {
    adxl::MutexLock lock(&mu_);
    live_.insert(p);
  }
  bool Take(const void *p) ADXL_EXCLUDES(mu_) {
    adxl::MutexLock lock(&mu_);
    return live_.erase(p) != 0;
  }
  bool Has(const void *p) ADXL_EXCLUDES(mu_) {
    adxl::MutexLock lock(&mu_);
    return live_.count(p) != 0;
  }

 private:
  adxl::Mutex mu_;  // a leaf
  std::set<const void *> live_ ADXL_GUARDED_BY(mu_);
};

constexpr int kAclErrorMemoryAllocation = 207001;  // ACL_ERROR_RT_MEMORY_ALLOCATION
constexpr int kAclMemMallocHugeFirst = 0;          // ACL_MEM_MALLOC_HUGE_FIRST

}  // namespace

AclHostRange QueryAclHostRange(uintptr_t addr, size_t len, std::string *why) {
  QueryFn fn = Query();
  if (fn == nullptr) return AclHostRange::kNoEmulation;
  char buf[256] = {};
  int32_t device = 0;
  if (fn(addr, len, &device, buf, sizeof(buf)) == 1) return AclHostRange::kInside;
  if (why != nullptr) *why = buf;
  return AclHostRange::kNotInside;
}

Status AclHostAlloc(size_t size, void **ptr, std::string *why) {
  Calls c;
  if (!EmulationCalls::Get().Resolve(&c, why)) return UNSUPPORTED;
  void *p = nullptr;
  const int e = c.malloc_fn(&p, size, kAclMemMallocHugeFirst);
  if (e != 0 || p == nullptr) {
    *why = "aclrtMalloc of the host ACL emulation failed with " + std::to_string(e);
    return e == kAclErrorMemoryAllocation ? RESOURCE_EXHAUSTED : FAILED;
  }
  try {
    OurBlocks::Get().Add(p);
  } catch (...) {  // no exception leaves the engine
    (void)c.free_fn(p);
    *why = "out of memory for the block table";
    return RESOURCE_EXHAUSTED;
  }
  *ptr = p;
  return SUCCESS;
}

bool AclHostFree(void *ptr, Status *status, std::string *why) {
  if (!OurBlocks::Get().Take(ptr)) return false;
  Calls c;
  if (!EmulationCalls::Get().Resolve(&c, why)) {  // cannot happen: it allocated the block
    *status = FAILED;
    return true;
  }
  const int e = c.free_fn(ptr);
  *status = e == 0 ? SUCCESS : FAILED;
  if (e != 0) *why = "aclrtFree of the host ACL emulation failed with " + std::to_string(e);
  return true;
}

bool IsAclHostBlock(const void *ptr) { return OurBlocks::Get().Has(ptr); }

}  // namespace adxl
