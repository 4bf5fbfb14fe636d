#include "memory/acl_host.h"

#include <dlfcn.h>

#include <atomic>

namespace adxl {
namespace {

using QueryFn = int (*)(uintptr_t, size_t, int32_t *, char *, size_t);

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

}  // namespace adxl
