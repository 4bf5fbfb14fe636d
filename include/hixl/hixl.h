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

  // Not the vendor's: the same calls with the adxl:: types, for programs
  // written when hixl's types were adxl's.  Inline (they convert and call the
  // members above), so they add no symbol to the library.
  Status RegisterMem(const adxl::MemDesc &mem, adxl::MemType type, MemHandle &mem_handle) {
    return RegisterMem(ToHixl(mem), static_cast<MemType>(type), mem_handle);
  }
  Status RegisterMem(const MemDesc &mem, adxl::MemType type, MemHandle &mem_handle) {
    return RegisterMem(mem, static_cast<MemType>(type), mem_handle);
  }
  Status TransferSync(const AscendString &remote_engine, adxl::TransferOp operation,
                      const std::vector<adxl::TransferOpDesc> &op_descs, int32_t timeout_in_millis = 1000) {
    return TransferSync(remote_engine, static_cast<TransferOp>(operation), ToHixl(op_descs), timeout_in_millis);
  }
  Status TransferAsync(const AscendString &remote_engine, adxl::TransferOp operation,
                       const std::vector<adxl::TransferOpDesc> &op_descs, const TransferArgs &optional_args,
                       TransferReq &req) {
    return TransferAsync(remote_engine, static_cast<TransferOp>(operation), ToHixl(op_descs), optional_args, req);
  }
  Status GetTransferStatus(const TransferReq &req, adxl::TransferStatus &status) {
    TransferStatus s = TransferStatus::WAITING;
    const Status st = GetTransferStatus(req, s);
    status = static_cast<adxl::TransferStatus>(s);
    return st;
  }
  Status SendNotify(const AscendString &remote_engine, const adxl::NotifyDesc &notify,
                    int32_t timeout_in_millis = 1000) {
    return SendNotify(remote_engine, NotifyDesc{notify.name, notify.notify_msg}, timeout_in_millis);
  }
  Status GetNotifies(std::vector<adxl::NotifyDesc> &notifies) {
    std::vector<NotifyDesc> got;
    const Status st = GetNotifies(got);
    notifies.clear();
    for (const NotifyDesc &n : got) notifies.push_back(adxl::NotifyDesc{n.name, n.notify_msg});
    return st;
  }
  static Status GetCapability(adxl::FeatureType feature_type, int32_t &value) {
    return GetCapability(static_cast<FeatureType>(feature_type), value);
  }

 private:
  static MemDesc ToHixl(const adxl::MemDesc &m) {
    MemDesc d{};
    d.addr = m.addr;
    d.len = m.len;
    d.local_only = m.local_only;
    return d;
  }
  static std::vector<TransferOpDesc> ToHixl(const std::vector<adxl::TransferOpDesc> &descs) {
    std::vector<TransferOpDesc> out;
    out.reserve(descs.size());
    for (const adxl::TransferOpDesc &d : descs) out.push_back(TransferOpDesc{d.local_addr, d.remote_addr, d.len});
    return out;
  }

  class HixlImpl;
  std::unique_ptr<HixlImpl> impl_;
};

}  // namespace hixl

#endif  // HIXL_HIXL_H_
