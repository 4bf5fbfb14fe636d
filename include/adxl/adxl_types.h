// Public ADXL types: statuses, memory and transfer descriptors, option keys.
//
// Source-compatible with the vendor's adxl_types.h (names, values, layouts);
// see docs/contract.md §1.  Plain C++17.
#ifndef ADXL_ADXL_TYPES_H_
#define ADXL_ADXL_TYPES_H_

#include <cstddef>
#include <cstdint>

#include "adxl/ascend_string.h"
// As in the vendor's adxl_types.h: ge::Status and the standard headers
// (<iostream>, <map>, <string>, <vector>, ...) that programs written for the
// vendor's stack receive through it, and the ACL runtime's types where an
// ACL runtime's headers are on the include path (the host emulation,
// emulation/acl, is an opt-in component, so it is not required).
#include "external/ge_common/ge_api_error_codes.h"
#if defined(__has_include)
#if __has_include("acl/acl_rt.h")
#include "acl/acl_rt.h"
#define ADXL_ACL_RT_H_INCLUDED_ 1
#endif
#endif
#ifndef ADXL_ACL_RT_H_INCLUDED_
// Without an ACL runtime's headers: the runtime's fabric memory handle, as
// the vendor's acl/acl_rt.h declares it (adxl::ShareableHandle is this type,
// so AdxlEngine::ExportToShareableHandle has the vendor's signature and
// mangled name either way).
extern "C" {
typedef struct aclrtMemFabricHandle {
  uint8_t data[128];
} aclrtMemFabricHandle;
}
#endif
#undef ADXL_ACL_RT_H_INCLUDED_

#ifndef ASCEND_FUNC_VISIBILITY
#define ASCEND_FUNC_VISIBILITY __attribute__((visibility("default")))
#endif

namespace adxl {

using Status = uint32_t;
using TransferReq = void *;
using MemHandle = void *;

// Options understood by AdxlEngine::Initialize.  The un-prefixed spellings
// ("RdmaTrafficClass", ...) are accepted too and win when both are given.
constexpr const char OPTION_RDMA_TRAFFIC_CLASS[] = "adxl.RdmaTrafficClass";
constexpr const char OPTION_RDMA_SERVICE_LEVEL[] = "adxl.RdmaServiceLevel";
constexpr const char OPTION_BUFFER_POOL[] = "adxl.BufferPool";
constexpr const char OPTION_LOCAL_COMM_RES[] = "adxl.LocalCommRes";
constexpr const char OPTION_AUTO_CONNECT[] = "AutoConnect";

// Statuses: the one table, X(name, value, description).  The constants
// below (adxl::SUCCESS, adxl::PARAM_INVALID, ...), kStatusTable, StatusName
// and the Python package's statuses (adxl.Status, adxl.SUCCESS, ...) all come
// from it.  Names and values are the vendor's (docs/contract.md §1.2).
#define ADXL_STATUS_TABLE(X)                                                          \
  X(SUCCESS, 0U, "success")                                                           \
  X(PARAM_INVALID, 103900U, "invalid parameter")                                      \
  X(TIMEOUT, 103901U, "timed out")                                                    \
  X(NOT_CONNECTED, 103902U, "not connected to that engine")                           \
  X(ALREADY_CONNECTED, 103903U, "already connected to that engine")                   \
  X(NOTIFY_FAILED, 103904U, "the notify could not be delivered")                      \
  X(UNSUPPORTED, 103905U, "unsupported parameter or operation")                       \
  X(FAILED, 503900U, "failed")                                                        \
  X(RESOURCE_EXHAUSTED, 203900U, "a resource or limit is exhausted")

#define ADXL_STATUS_CONSTANT_(name, value, description) constexpr Status name = value;
ADXL_STATUS_TABLE(ADXL_STATUS_CONSTANT_)
#undef ADXL_STATUS_CONSTANT_

// One row of a status table.
struct StatusInfo {
  const char *name;         // "PARAM_INVALID"
  Status value;             // 103900
  const char *description;  // "invalid parameter"
};
#define ADXL_STATUS_INFO_(name, value, description) StatusInfo{#name, value, description},
inline constexpr StatusInfo kStatusTable[] = {ADXL_STATUS_TABLE(ADXL_STATUS_INFO_)};
#undef ADXL_STATUS_INFO_

// "SUCCESS", "PARAM_INVALID", ...; "UNKNOWN" for a value not in the table.
constexpr const char *StatusName(Status status) {
  for (const StatusInfo &s : kStatusTable) {
    if (s.value == status) return s.name;
  }
  return "UNKNOWN";
}

// Values are fixed; new capabilities are only appended.
enum FeatureType : int32_t {
  AUTO_CONNECT = 0,
  CLIENT_SERVER_COMM = 1,
};
constexpr int32_t FEATURE_SUPPORTED = 1;
constexpr int32_t FEATURE_NOT_SUPPORTED = 0;

// A fixed underlying type (as FeatureType): callers may pass any value, and
// one that is not an enumerator is PARAM_INVALID, not undefined behaviour
// (without it the valid values of these enums are only 0 and 1, and UBSan
// flags the engine's check of an out-of-range value).  Size and mangling are
// unchanged, so this is source and binary compatible.
enum MemType : int32_t { MEM_DEVICE = 0, MEM_HOST = 1 };

// READ: remote -> local.  WRITE: local -> remote.
enum TransferOp : int32_t { READ = 0, WRITE = 1 };

// local_only: the region is for this engine's own use, as the local side of
// its transfers; it is not advertised to peers, so no peer can reach it.
struct MemDesc {
  uintptr_t addr;
  size_t len;
  bool local_only = false;
  uint8_t reserved[127] = {};
};

struct TransferOpDesc {
  uintptr_t local_addr;
  uintptr_t remote_addr;
  size_t len;
};

enum class TransferStatus { WAITING, COMPLETED, TIMEOUT, FAILED };

struct TransferArgs {
  uint8_t reserved[128] = {};
};

struct NotifyDesc {
  AscendString name;
  AscendString notify_msg;
};

// What ExportToShareableHandle returns for a MallocMem block: enough for a
// process on the same node to map the same physical pages.  Opaque to users.
// The ACL runtime's aclrtMemFabricHandle ({uint8_t data[128]}), as the
// vendor's adxl_types.h declares it.
using ShareableHandle = aclrtMemFabricHandle;

}  // namespace adxl

#endif  // ADXL_ADXL_TYPES_H_
