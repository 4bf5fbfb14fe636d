// Public ADXL types: statuses, memory and transfer descriptors, option keys.
//
// Source-compatible with the vendor's adxl_types.h (names, values, layouts);
// see docs/contract.md §1.  Plain C++17, no dependencies.
#ifndef ADXL_ADXL_TYPES_H_
#define ADXL_ADXL_TYPES_H_

#include <cstddef>
#include <cstdint>

#include "adxl/ascend_string.h"

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

constexpr Status SUCCESS = 0U;
constexpr Status PARAM_INVALID = 103900U;
constexpr Status TIMEOUT = 103901U;
constexpr Status NOT_CONNECTED = 103902U;
constexpr Status ALREADY_CONNECTED = 103903U;
constexpr Status NOTIFY_FAILED = 103904U;
constexpr Status UNSUPPORTED = 103905U;
constexpr Status FAILED = 503900U;
constexpr Status RESOURCE_EXHAUSTED = 203900U;

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

struct MemDesc {
  uintptr_t addr;
  size_t len;
  uint8_t reserved[128] = {};
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
struct ShareableHandle {
  uint8_t data[128] = {};
};

}  // namespace adxl

#endif  // ADXL_ADXL_TYPES_H_
