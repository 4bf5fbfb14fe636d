// AdxlEngine: one-sided bulk memory transfer between processes (the ADXL API).
//
// Typical use:
//   adxl::AdxlEngine engine;
//   engine.Initialize("10.0.0.1:26000", {});        // listens on port 26000
//   engine.RegisterMem({addr, len}, adxl::MEM_HOST, handle);
//   engine.Connect("10.0.0.2:26000");               // directional link
//   engine.TransferSync("10.0.0.2:26000", adxl::WRITE, {{local, remote, len}});
//
// The full behavioural contract (every status of every call) is in
// docs/contract.md in the repository.  In short:
//  - every instance method is thread-safe and returns FAILED before
//    Initialize and after Finalize;
//  - a transfer is validated against local and peer registrations before any
//    byte moves; a descriptor may span adjacent registrations;
//  - when TransferSync returns SUCCESS every byte is in place; when it returns
//    TIMEOUT no byte of that call moves afterwards and the link is failed.
// Source-compatible with the vendor's adxl_engine.h.
#ifndef ADXL_ADXL_ENGINE_H_
#define ADXL_ADXL_ENGINE_H_

#include <map>
#include <memory>
#include <vector>

#include "adxl/adxl_types.h"

namespace adxl {

class AdxlEngine;
namespace ext {  // extensions of this implementation: include/adxl/adxl_ext.h
struct EngineAccess;  // how they reach the engine behind an AdxlEngine
}  // namespace ext

class ASCEND_FUNC_VISIBILITY AdxlEngine {
 public:
  AdxlEngine();
  ~AdxlEngine();  // runs Finalize()
  AdxlEngine(const AdxlEngine &) = delete;
  AdxlEngine &operator=(const AdxlEngine &) = delete;

  // local_engine: "ipv4", "ipv4:port", "[ipv6]" or "[ipv6]:port".  A port > 0
  // makes the engine listen there; otherwise it is a client only.
  Status Initialize(const AscendString &local_engine, const std::map<AscendString, AscendString> &options);
  // Idempotent.  Disconnects every link, fails outstanding requests,
  // deregisters all memory and stops all threads.
  void Finalize();

  Status RegisterMem(const MemDesc &mem, MemType type, MemHandle &mem_handle);
  Status DeregisterMem(MemHandle mem_handle);

  Status Connect(const AscendString &remote_engine, int32_t timeout_in_millis = 1000);
  Status Disconnect(const AscendString &remote_engine, int32_t timeout_in_millis = 1000);

  Status TransferSync(const AscendString &remote_engine, TransferOp operation,
                      const std::vector<TransferOpDesc> &op_descs, int32_t timeout_in_millis = 1000);
  Status TransferAsync(const AscendString &remote_engine, TransferOp operation,
                       const std::vector<TransferOpDesc> &op_descs, const TransferArgs &optional_args,
                       TransferReq &req);
  Status GetTransferStatus(const TransferReq &req, TransferStatus &status);

  Status SendNotify(const AscendString &remote_engine, const NotifyDesc &notify, int32_t timeout_in_millis = 1000);
  Status GetNotifies(std::vector<NotifyDesc> &notifies);

  static Status MallocMem(MemType type, size_t size, void **ptr);
  static Status ExportToShareableHandle(void *addr, ShareableHandle &handle);
  static Status FreeMem(void *ptr);
  static Status GetCapability(FeatureType feature_type, int32_t &value);

 private:
  friend struct ext::EngineAccess;
  class AdxlEngineImpl;
  std::unique_ptr<AdxlEngineImpl> impl_;
};

}  // namespace adxl

#endif  // ADXL_ADXL_ENGINE_H_
