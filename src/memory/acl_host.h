// Memory of the host ACL runtime emulation (emulation/acl: libascendcl.so
// built by this project), as the engine sees it.  One job: asking the
// emulation whether a range is its "device" memory.
//
// aclrtMalloc of the emulation returns host memory that programs written for
// the vendor's stack register as MEM_DEVICE.  The engine accepts such a range
// as MEM_DEVICE (it counts against the device-memory limit and is advertised
// as device memory) and hands it to the transport as host memory, so it moves
// on the host lanes (cma or mapped on one node, the network lane otherwise).
//
// The emulation is recognised by a C function that only it exports,
// adxl_acl_host_query, looked up with dlsym(RTLD_DEFAULT): a real ACL runtime
// has no such function and is never mistaken for the emulation, and libadxl
// does not link libascendcl.
#ifndef ADXL_SRC_MEMORY_ACL_HOST_H_
#define ADXL_SRC_MEMORY_ACL_HOST_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "adxl/adxl_types.h"

namespace adxl {

enum class AclHostRange {
  kNoEmulation,  // the process has no host ACL emulation loaded
  kInside,       // the range lies inside one live aclrtMalloc block
  kNotInside,    // the emulation is loaded and the range is not inside one of its blocks (*why says what it is)
};

// Thread-safe.
AclHostRange QueryAclHostRange(uintptr_t addr, size_t len, std::string *why);

// MallocMem(MEM_DEVICE) / FreeMem on the emulation, for a process that has it
// and no CUDA device.  aclrtMalloc / aclrtFree are taken from the library
// that exports adxl_acl_host_query (dladdr, then dlsym on that library's own
// handle), never from whatever libascendcl the symbol search finds first, so
// a real ACL runtime loaded beside it is never called.  All thread-safe.
//  - AclHostAlloc: aclrtMalloc on the calling thread's device.  UNSUPPORTED
//    when the emulation is not loaded, RESOURCE_EXHAUSTED when it is out of
//    memory (*why says which).  The block is remembered as the engine's.
//  - AclHostFree: false when ptr is not the start of a live AclHostAlloc
//    block (nothing done); else aclrtFree, *status saying how it went.
//  - IsAclHostBlock: ptr is the start of a live AclHostAlloc block.
Status AclHostAlloc(size_t size, void **ptr, std::string *why);
bool AclHostFree(void *ptr, Status *status, std::string *why);
bool IsAclHostBlock(const void *ptr);

}  // namespace adxl

#endif  // ADXL_SRC_MEMORY_ACL_HOST_H_
