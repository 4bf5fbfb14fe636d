#include "acl_state.h"

#include <dlfcn.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace acl_host {
namespace {

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

struct ThreadError {
  char msg[1024] = {};
  uint64_t stamp_ns = 0;  // 0: none
};
thread_local ThreadError t_error;
// What aclGetRecentErrMsg handed out last: valid until the thread's next call.
thread_local char t_taken[1024];

// libadxl's per-thread record of its ERROR lines (src/common/recent_error.h).
// Looked up, not linked: the emulation works without the engine.
using EngineTakeFn = int (*)(char *, size_t, uint64_t *);
EngineTakeFn EngineTake() {
  static const EngineTakeFn fn = reinterpret_cast<EngineTakeFn>(dlsym(RTLD_DEFAULT, "adxl_recent_error_take"));
  return fn;
}

}  // namespace

Blocks &Blocks::Get() {
  static Blocks *b = new Blocks();
  return *b;
}

void Blocks::Add(const Block &b) {
  adxl::MutexLock l(&mu_);
  blocks_[b.base] = b;
}

Blocks::TakeResult Blocks::Take(uintptr_t addr, BlockKind kind, Block *out) {
  adxl::MutexLock l(&mu_);
  auto it = blocks_.find(addr);
  if (it == blocks_.end()) return TakeResult::kNoBlock;
  *out = it->second;
  if (it->second.kind != kind) return TakeResult::kOtherKind;
  blocks_.erase(it);
  return TakeResult::kTaken;
}

Streams &Streams::Get() {
  static Streams *s = new Streams();
  return *s;
}

void *Streams::Create() {
  // The handle is the address of a heap byte: unique while it lives.
  void *s = new char(0);
  adxl::MutexLock l(&mu_);
  live_[s] = 0;
  return s;
}

bool Streams::Destroy(void *s) {
  {
    adxl::MutexLock l(&mu_);
    if (live_.erase(s) == 0) return false;
  }
  delete static_cast<char *>(s);
  return true;
}

bool Streams::Has(void *s) {
  adxl::MutexLock l(&mu_);
  return live_.count(s) != 0;
}

bool Blocks::Find(uintptr_t addr, Block *out) {
  adxl::MutexLock l(&mu_);
  auto it = blocks_.upper_bound(addr);
  if (it == blocks_.begin()) return false;
  --it;
  if (addr - it->first >= it->second.size) return false;
  *out = it->second;
  return true;
}

uint32_t DeviceCount() {
  static const uint32_t n = [] {
    const char *v = getenv("ADXL_ACL_HOST_DEVICES");
    if (v == nullptr || *v == '\0') return 8u;
    char *end = nullptr;
    unsigned long x = strtoul(v, &end, 10);
    return (*end == '\0' && x >= 1 && x <= 1024) ? static_cast<uint32_t>(x) : 8u;
  }();
  return n;
}

int32_t &ThreadDevice() {
  thread_local int32_t device = -1;
  return device;
}

aclError Fail(aclError code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_error.msg, sizeof(t_error.msg), fmt, ap);
  va_end(ap);
  t_error.stamp_ns = NowNs();
  static const bool quiet = [] {
    const char *v = getenv("ADXL_LOG_LEVEL");
    return v != nullptr && strcasecmp(v, "off") == 0;
  }();
  if (!quiet) fprintf(stderr, "[acl-host ERROR %d] %s\n", static_cast<int>(getpid()), t_error.msg);
  return code;
}

const char *TakeRecentError() {
  char engine[sizeof(t_taken)];
  uint64_t engine_stamp = 0;
  EngineTakeFn take = EngineTake();
  const bool have_engine = take != nullptr && take(engine, sizeof(engine), &engine_stamp) == 1;
  const bool have_own = t_error.stamp_ns != 0;
  if (!have_engine && !have_own) return nullptr;
  if (have_engine && (!have_own || engine_stamp >= t_error.stamp_ns)) {
    memcpy(t_taken, engine, sizeof(t_taken));
  } else {
    memcpy(t_taken, t_error.msg, sizeof(t_taken));
  }
  t_taken[sizeof(t_taken) - 1] = '\0';
  t_error.stamp_ns = 0;
  return t_taken;
}

}  // namespace acl_host
