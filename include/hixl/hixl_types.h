// Public HIXL types: the newer facade's statuses, descriptors and options.
//
// Source-compatible with the vendor's hixl_types.h (names, values, layouts);
// see docs/contract.md §1.  The types that HIXL shares unchanged with
// ADXL (statuses, enums, TransferOpDesc, NotifyDesc, AscendString) are the
// ADXL ones under their HIXL names, so one engine serves both facades and a
// program may pass values between them.  Declared here: MemDesc (as the
// vendor declares it for HIXL; the same layout as ADXL's), TransferArgs
// (user_data), the batch status query and the async connect states, and the
// option keys (no "adxl." prefix).
#ifndef HIXL_HIXL_TYPES_H_
#define HIXL_HIXL_TYPES_H_

#include <cstddef>
#include <cstdint>

#include "adxl/adxl_types.h"
// As in the vendor's hixl_types.h (what programs receive through it).
#include "external/ge_common/ge_api_error_codes.h"

namespace hixl {

using Status = adxl::Status;
using AscendString = adxl::AscendString;
using TransferReq = adxl::TransferReq;
using MemHandle = adxl::MemHandle;

// Options understood by Hixl::Initialize (docs/contract.md §3.5 lists the values).
constexpr const char OPTION_ENABLE_USE_FABRIC_MEM[] = "EnableUseFabricMem";
constexpr const char OPTION_RDMA_TRAFFIC_CLASS[] = "RdmaTrafficClass";
constexpr const char OPTION_RDMA_SERVICE_LEVEL[] = "RdmaServiceLevel";
constexpr const char OPTION_BUFFER_POOL[] = "BufferPool";
constexpr const char OPTION_GLOBAL_RESOURCE_CONFIG[] = "GlobalResourceConfig";
constexpr const char OPTION_AUTO_CONNECT[] = "AutoConnect";
constexpr const char OPTION_LOCAL_COMM_RES[] = "LocalCommRes";

using adxl::SUCCESS;
using adxl::PARAM_INVALID;
using adxl::TIMEOUT;
using adxl::NOT_CONNECTED;
using adxl::ALREADY_CONNECTED;
using adxl::NOTIFY_FAILED;
using adxl::UNSUPPORTED;
using adxl::FAILED;
using adxl::RESOURCE_EXHAUSTED;

using FeatureType = adxl::FeatureType;
using adxl::AUTO_CONNECT;
using adxl::CLIENT_SERVER_COMM;
using adxl::FEATURE_SUPPORTED;
using adxl::FEATURE_NOT_SUPPORTED;

using MemType = adxl::MemType;
using adxl::MEM_DEVICE;
using adxl::MEM_HOST;

// READ: remote -> local.  WRITE: local -> remote.
using TransferOp = adxl::TransferOp;
using adxl::READ;
using adxl::WRITE;

using TransferOpDesc = adxl::TransferOpDesc;
using TransferStatus = adxl::TransferStatus;
using NotifyDesc = adxl::NotifyDesc;

struct MemDesc {
  uintptr_t addr;
  size_t len;
  // For this engine's own use (the local side of its transfers): not
  // advertised to peers, so no peer can reach it.
  bool local_only = false;
  uint8_t reserved[127] = {};
};

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
