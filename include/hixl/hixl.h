// Hixl: the newer HIXL facade over the same engine as adxl::AdxlEngine.
//
// Same methods and statuses as AdxlEngine (docs/contract.md §3-§7),
// minus the static memory helpers, plus:
//  - ConnectAsync / DisconnectAsync: queued on a bounded task queue
//    (GlobalResourceConfig connect_pool.task_queue_capacity, default 128; a
//    full queue is RESOURCE_EXHAUSTED) served by connect_pool.thread_num
//    worker threads (default 2).  Tasks for one remote run in submission
//    order, different remotes in parallel.
//  - GetAsyncConnectStatus: the state of the latest submission for a remote
//    (NOT_CONNECT for remotes never submitted or disconnected since); the map
//    overload lists every remote with a state other than NOT_CONNECT.
//  - GetTransferStatus(args, results): every outstanding TransferAsync
//    request in submission order, with the caller's user_data; finished
//    requests are reported once and leave the index.
// Option keys are the un-prefixed spellings (hixl_types.h).  Thread-safe;
// every method returns FAILED before Initialize and after Finalize.
// Source-compatible with the vendor's hixl.h.
#ifndef HIXL_HIXL_H_
#define HIXL_HIXL_H_

#include <map>
#include <memory>
#include <vector>

#include "hixl/hixl_types.h"

namespace hixl {

class ASCEND_FUNC_VISIBILITY Hixl {
 public:
  Hixl();
  ~Hixl();  // runs Finalize()
  Hixl(const Hixl &) = delete;
  Hixl &operator=(const Hixl &) = delete;

  // local_engine: "ipv4", "ipv4:port", "[ipv6]" or "[ipv6]:port".  A port > 0
  // makes the engine listen there; otherwise it is a client only.
  Status Initialize(const AscendString &local_engine, const std::map<AscendString, AscendString> &options);
  // Idempotent.  Drops queued async connect tasks, waits for running ones,
  // then finalizes the engine as AdxlEngine::Finalize does.
  void Finalize();

  Status RegisterMem(const MemDesc &mem, MemType type, MemHandle &mem_handle);
  Status DeregisterMem(MemHandle mem_handle);

  Status Connect(const AscendString &remote_engine, int32_t timeout_in_millis = 1000);
  Status Disconnect(const AscendString &remote_engine, int32_t timeout_in_millis = 1000);
  // SUCCESS when queued; PARAM_INVALID for a bad name, oneself or a timeout
  // <= 0; RESOURCE_EXHAUSTED when the queue is full.
  Status ConnectAsync(const AscendString &remote_engine, int32_t timeout_in_millis = 1000);
  Status DisconnectAsync(const AscendString &remote_engine, int32_t timeout_in_millis = 1000);
  Status GetAsyncConnectStatus(const AscendString &remote_engine, AsyncConnectStatus &status);
  Status GetAsyncConnectStatus(std::map<AscendString, AsyncConnectStatus> &statuses);

  Status TransferSync(const AscendString &remote_engine, TransferOp operation,
                      const std::vector<TransferOpDesc> &op_descs, int32_t timeout_in_millis = 1000);
  Status TransferAsync(const AscendString &remote_engine, TransferOp operation,
                       const std::vector<TransferOpDesc> &op_descs, const TransferArgs &optional_args,
                       TransferReq &req);
  Status GetTransferStatus(const TransferReq &req, TransferStatus &status);
  // Replaces *results.
  Status GetTransferStatus(const GetTransferStatusArgs &args, std::vector<TransferResult> &results);

  Status SendNotify(const AscendString &remote_engine, const NotifyDesc &notify, int32_t timeout_in_millis = 1000);
  Status GetNotifies(std::vector<NotifyDesc> &notifies);

  static Status GetCapability(FeatureType feature_type, int32_t &value);

 private:
  class HixlImpl;
  std::unique_ptr<HixlImpl> impl_;
};

}  // namespace hixl

#endif  // HIXL_HIXL_H_
