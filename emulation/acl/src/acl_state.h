// The host ACL emulation's state: its blocks of memory, the calling thread's
// current device, and the thread's most recent error.  One job: what the
// runtime calls (acl_memory.cc, acl_runtime.cc) share.
#ifndef ADXL_EMULATION_ACL_STATE_H_
#define ADXL_EMULATION_ACL_STATE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "acl/acl_base.h"
#include "common/thread_annotations.h"

namespace acl_host {

enum class BlockKind { kDevice, kHost };

struct Block {
  uintptr_t base = 0;
  size_t size = 0;    // what the caller asked for
  size_t mapped = 0;  // what was mmap'ed (whole pages)
  BlockKind kind = BlockKind::kDevice;
  int32_t device = 0;
};

// The live blocks of aclrtMalloc and aclrtMallocHost, by start address.
// Thread-safe; never destroyed (programs free memory from static destructors).
class Blocks {
 public:
  static Blocks &Get();
  void Add(const Block &b) ADXL_EXCLUDES(mu_);
  enum class TakeResult { kTaken, kNoBlock, kOtherKind };
  // Removes the block of `kind` that starts exactly at addr.  kOtherKind: a
  // block of the other kind starts there (left in place, *out says which).
  TakeResult Take(uintptr_t addr, BlockKind kind, Block *out) ADXL_EXCLUDES(mu_);
  // The block that holds addr; false when none does.
  bool Find(uintptr_t addr, Block *out) ADXL_EXCLUDES(mu_);

 private:
  adxl::Mutex mu_;  // a leaf
  std::map<uintptr_t, Block> blocks_ ADXL_GUARDED_BY(mu_);
};

// Live streams (aclrtCreateStream), for telling a stream from garbage.
class Streams {
 public:
  static Streams &Get();
  void *Create() ADXL_EXCLUDES(mu_);
  bool Destroy(void *s) ADXL_EXCLUDES(mu_);
  bool Has(void *s) ADXL_EXCLUDES(mu_);

 private:
  adxl::Mutex mu_;  // a leaf
  std::map<void *, int> live_ ADXL_GUARDED_BY(mu_);
};

// Virtual memory management (acl_vmm.cc): physical allocations
// (aclrtMallocPhysical: a memfd each, so they are shareable and the engine's
// mapped lane maps them), address reservations and the mappings inside them,
// and ranges registered with aclrtHostRegister.  The range queries of the
// copies and of the engine see mapped ranges as device memory.
// 1 when [addr, addr+len) lies in mapped memory of one reservation with no
// gap (*device: the device of its first mapping), 0 when addr is in no
// mapping, -1 when it starts in one and runs past the mapped memory (*why).
int VmmDeviceRange(uintptr_t addr, size_t len, int32_t *device, std::string *why);
// aclrtHostRegister'ed range holding addr.
bool HostRegistered(uintptr_t addr);

// Emulated devices: ADXL_ACL_HOST_DEVICES (1..1024, default 8).
uint32_t DeviceCount();
// The calling thread's device (aclrtSetDevice), -1 when none was set.
int32_t &ThreadDevice();

// Records `msg` as the calling thread's most recent error, writes it as one
// ERROR line on stderr (unless ADXL_LOG_LEVEL=off) and returns `code`.
aclError Fail(aclError code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The thread's most recent error, this runtime's or the engine's (whichever
// came last), taken (cleared); NULL when there is none.
const char *TakeRecentError();

}  // namespace acl_host

#endif  // ADXL_EMULATION_ACL_STATE_H_
