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

namespace adxl {

enum class AclHostRange {
  kNoEmulation,  // the process has no host ACL emulation loaded
  kInside,       // the range lies inside one live aclrtMalloc block
  kNotInside,    // the emulation is loaded and the range is not inside one of its blocks (*why says what it is)
};

// Thread-safe.
AclHostRange QueryAclHostRange(uintptr_t addr, size_t len, std::string *why);

}  // namespace adxl

#endif  // ADXL_SRC_MEMORY_ACL_HOST_H_
