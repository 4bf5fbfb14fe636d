// Public HIXL types: the newer facade's statuses, descriptors and options.
//
// Source- and binary-compatible with the vendor's hixl_types.h (names,
// values, layouts; docs/contract.md §1): as the vendor's, the enums and
// structs are types of namespace hixl, distinct from adxl's of the same
// shape, so hixl::Hixl's members have the vendor's mangled names
// (tests/abi checks them).  Status, AscendString, TransferReq and MemHandle
// are the same types as adxl's (plain aliases in the vendor's headers too).
// hixl/hixl.h adds inline overloads taking the adxl:: types, so programs
// that passed adxl values to Hixl still build.
#ifndef HIXL_HIXL_TYPES_H_
#define HIXL_HIXL_TYPES_H_

#include <cstddef>
#include <cstdint>

#include "adxl/adxl_types.h"
// As in the vendor's hixl_types.h (what programs receive through it).
#include "external/ge_common/ge_api_error_codes.h"

namespace hixl {

using Status = uint32_t;
using AscendString = ge::AscendString;
using TransferReq = void *;
using MemHandle = void *;

// Options understood by Hixl::Initialize (docs/contract.md §3.5 lists the values).
constexpr const char OPTION_ENABLE_USE_FABRIC_MEM[] = "EnableUseFabricMem";
constexpr const char OPTION_RDMA_TRAFFIC_CLASS[] = "RdmaTrafficClass";
constexpr const char OPTION_RDMA_SERVICE_LEVEL[] = "RdmaServiceLevel";
constexpr const char OPTION_BUFFER_POOL[] = "BufferPool";
constexpr const char OPTION_GLOBAL_RESOURCE_CONFIG[] = "GlobalResourceConfig";
constexpr const char OPTION_AUTO_CONNECT[] = "AutoConnect";
constexpr const char OPTION_LOCAL_COMM_RES[] = "LocalCommRes";

// Statuses: the same values as adxl's (one table, adxl_types.h).
using adxl::SUCCESS;
using adxl::PARAM_INVALID;
using adxl::TIMEOUT;
using adxl::NOT_CONNECTED;
using adxl::ALREADY_CONNECTED;
using adxl::NOTIFY_FAILED;
using adxl::UNSUPPORTED;
using adxl::FAILED;
using adxl::RESOURCE_EXHAUSTED;

// Values are fixed; new capabilities are only appended.
enum FeatureType : int32_t {
  AUTO_CONNECT = 0,
  CLIENT_SERVER_COMM = 1,
};
constexpr int32_t FEATURE_SUPPORTED = 1;
constexpr int32_t FEATURE_NOT_SUPPORTED = 0;

// A fixed underlying type, as adxl's (adxl_types.h says why); the size and
// the mangled names are the vendor's either way.
enum MemType : int32_t { MEM_DEVICE = 0, MEM_HOST = 1 };

// READ: remote -> local.  WRITE: local -> remote.
enum TransferOp : int32_t { READ = 0, WRITE = 1 };

struct MemDesc {
  uintptr_t addr;
  size_t len;
  // For this engine's own use (the local side of its transfers): not
  // advertised to peers, so no peer can reach it.
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
  // Returned with the request's result by the batch GetTransferStatus.
  const void *user_data = nullptr;
  uint8_t reserved[120] = {};
};

// Batch status query: at most max_query_count results (0: none); with
// skip_waiting, requests still running are left out of the results.
struct GetTransferStatusArgs {
  uint32_t max_query_count = UINT32_MAX;
  bool skip_waiting = false;
  uint8_t reserved[123] = {};
};

struct TransferResult {
  TransferReq req = nullptr;
  const void *user_data = nullptr;  // as given to TransferAsync
  TransferStatus status = TransferStatus::WAITING;
  uint8_t reserved[108] = {};
};

struct NotifyDesc {
  AscendString name;
  AscendString notify_msg;
};

// State of a remote as seen by ConnectAsync / DisconnectAsync.
enum class AsyncConnectStatus {
  NOT_CONNECT,         // unknown, or disconnected
  CONNECT_PENDING,     // ConnectAsync queued
  CONNECTING,          // a worker is connecting
  CONNECTED,
  CONNECT_FAILED,      // the connect attempt failed (or the link failed since)
  DISCONNECT_PENDING,  // DisconnectAsync queued
  DISCONNECTING        // a worker is disconnecting
};

}  // namespace hixl

#endif  // HIXL_HIXL_TYPES_H_
