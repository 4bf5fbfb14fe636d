// Engine: the engine core behind both public facades (AdxlEngine, hixl::Hixl).
//
// Owns the transport (plugin), the registry, the links this engine opened,
// the server ends of links peers opened to it, async requests and received
// notifies.  Locks, in the order they may nest:
//   life_mu_ (shared by every API call, exclusive in Initialize/Finalize)
//   reg_op_mu_ (serialises RegisterMem/DeregisterMem, held while peers ack)
//   reg_mu_ (registry_, subscribers_)
//     -> link->regions_mu (Prepare plans under both, shared)
//     -> a ControlConn's out_mu_ (the handshake queues its answer, control.h)
//   links_mu_, req_mu_, notify_mu_, pool_mu_ (leaves)
// The control thread never takes life_mu_ or reg_op_mu_, so it never waits
// on an API call.  No socket I/O and no wait on a peer happens under reg_mu_
// or a link's regions_mu.
//
// Handshake and region pushes.  A peer must see every region change exactly
// in order, and must not miss one that happens while it is handshaking:
//  - The server side of the handshake takes reg_mu_ exclusively, snapshots
//    the registry into the HelloAck, queues the HelloAck on the connection
//    (ControlConn::StartQueued: no I/O) and adds the connection to
//    subscribers_, then releases reg_mu_.  The control loop writes the queue
//    as the client reads it.
//  - RegisterMem / DeregisterMem change the registry and copy subscribers_
//    under reg_mu_ exclusively, then push outside it, one call at a time
//    (reg_op_mu_).  So a change is either in the snapshot (made before it,
//    and the connection not among that change's receivers) or pushed to the
//    connection (made after it); the push goes through the connection's
//    queue while the HelloAck is still there, so it lands behind it, and
//    pushes keep the order of reg_op_mu_.
//  - A deregistration waits for the peer's acknowledgement (or closes it),
//    also for a peer whose HelloAck is still queued: that peer learned the
//    region from the snapshot.  A registration waits for the acknowledgement
//    of peers whose HelloAck was written, but not of those whose HelloAck is
//    still queued: their Connect has not returned, so no caller of theirs
//    has used our table yet; the addition reaches them right behind the
//    HelloAck.  The one thing this gives up: such a peer's caller may, right
//    after its Connect returns, name the new region before the peer's
//    control thread applied the addition (the transfer is refused).  A
//    refresh-on-miss (issue 12) would close that; it is not implemented.
//  - A client that never reads its HelloAck is closed when the answer is
//    overdue (kHandshakeAnswerDeadline, checked each heartbeat tick), which
//    ends any deregistration waiting on it.
#ifndef ADXL_SRC_CORE_ENGINE_H_
#define ADXL_SRC_CORE_ENGINE_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"
#include "memory/buffer_pool.h"
#include "control/control.h"
#include "common/engine_name.h"
#include "core/link.h"
#include "config/options.h"
#include "memory/registry.h"
#include "core/transfer_plan.h"
#include "transport/transport.h"

namespace adxl {

// An async transfer (TransferAsync) until its final status was reported.
struct AsyncRequest {
  std::shared_ptr<Link> link;
  std::unique_ptr<Batch> batch;
  TransferPlan plan;
  TransferOp op = READ;
  const void *user_data = nullptr;  // HIXL TransferArgs::user_data, returned by the batch status
};

class Engine : public ControlHandler {
 public:
  Engine() = default;
  ~Engine() override { Finalize(); }

  Status Initialize(const AscendString &local_engine, const std::map<AscendString, AscendString> &options);
  void Finalize();
  Status RegisterMem(const MemDesc &mem, MemType type, MemHandle &handle);
  Status DeregisterMem(MemHandle handle);
  Status Connect(const AscendString &remote, int32_t timeout_ms);
  Status Disconnect(const AscendString &remote, int32_t timeout_ms);
  Status TransferSync(const AscendString &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                      int32_t timeout_ms);
  Status TransferAsync(const AscendString &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                       TransferReq &req, const void *user_data = nullptr);
  Status GetTransferStatus(const TransferReq &req, TransferStatus &status);
  // HIXL batch status (engine_batch_status.cc): outstanding requests in
  // submission order; at most max_count results; with skip_waiting, running
  // requests are left out.  Finished requests are reported once and leave
  // the index.  Replaces *results.
  struct RequestResult {
    TransferReq req;
    const void *user_data;
    TransferStatus status;
  };
  Status GetTransferStatuses(uint32_t max_count, bool skip_waiting, std::vector<RequestResult> *results);
  bool initialized() const { return initialized_.load(); }
  // Valid after a successful Initialize.
  const EngineOptions &options() const { return options_; }
  Status SendNotify(const AscendString &remote, const NotifyDesc &notify, int32_t timeout_ms);
  Status GetNotifies(std::vector<NotifyDesc> &notifies);
  Status GetLinkInfo(const AscendString &remote, ext::LinkInfo &info);

  // ControlHandler (control thread).
  void OnMessage(const std::shared_ptr<ControlConn> &conn, wire::Message &msg) override;
  void OnClosed(const std::shared_ptr<ControlConn> &conn) override;
  void OnTick() override;

 private:
  // Connect after the lifecycle check; the caller holds life_mu_ (shared).
  Status DoConnect(const std::string &remote, int32_t timeout_ms);
  Status ConnectOnce(const std::shared_ptr<Link> &link, const EngineName &peer, Clock::time_point deadline);
  // The link a transfer or notify uses (engine_auto_connect.cc).  Without
  // AutoConnect: NOT_CONNECTED when there is none, FAILED when it failed.
  // With AutoConnect: a missing link is connected, a failed one dropped and
  // connected again, before `deadline`.  Logs one ERROR line on failure.
  Status AcquireLink(const char *api, const std::string &remote, Clock::time_point deadline,
                     std::shared_ptr<Link> *link);
  // Removes a failed link from the tables and closes its control connection
  // (AutoConnect: the next call reconnects).  Idempotent; leaf locks only.
  void DropLink(const std::shared_ptr<Link> &link);
  // Buffer-pool staging of TransferSync (engine_staging.cc).  *handled false:
  // not a staged call, continue normally.  Otherwise the call's status.
  Status TransferStaged(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                        Clock::time_point deadline, int32_t timeout_ms, bool *handled);
  // One async request's status (both GetTransferStatus overloads).
  Status PollRequest(uint64_t id, TransferStatus &status);
  std::shared_ptr<Link> FindLink(const std::string &remote);
  // Validation and planning shared by sync and async transfers.
  Status Prepare(const char *api, const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                 Clock::time_point connect_deadline, std::shared_ptr<Link> *link, TransferPlan *plan);
  Status Post(const std::shared_ptr<Link> &link, TransferOp op, const adxl_plugin_iov_t *iov, size_t count,
              std::unique_ptr<Batch> *batch);
  // Pushes a region change to every subscribed peer and waits for acks
  // (not for a registration's, from peers still handshaking); a peer that
  // does not confirm in time is closed.  Under reg_op_mu_, no other lock.
  void PushToPeers(const wire::Body &body, const std::vector<std::shared_ptr<ControlConn>> &peers);
  void FenceAfterTimeout(const std::shared_ptr<Link> &link);
  wire::Region ToWire(const LocalRegion &r) const;

  void HandleServer(const std::shared_ptr<ControlConn> &conn, wire::Message &msg);
  void HandleClient(const std::shared_ptr<ControlConn> &conn, wire::Message &msg);
  std::shared_ptr<Link> LinkOf(const std::shared_ptr<ControlConn> &conn);
  Status AddRemoteRegion(const std::shared_ptr<Link> &link, const wire::Region &r);

  std::shared_mutex life_mu_;
  std::atomic<bool> initialized_{false};
  EngineName name_;
  EngineOptions options_;
  std::string node_id_;
  std::shared_ptr<Transport> transport_;
  ControlLoop loop_;

  std::mutex reg_op_mu_;
  std::shared_mutex reg_mu_;
  std::unique_ptr<Registry> registry_;
  // Server ends past Hello, their HelloAck queued or written; under reg_mu_.
  std::set<std::shared_ptr<ControlConn>> subscribers_;

  std::mutex links_mu_;
  std::map<std::string, std::shared_ptr<Link>> links_;
  std::map<ControlConn *, std::weak_ptr<Link>> link_by_conn_;

  std::mutex req_mu_;
  std::unordered_map<uint64_t, std::unique_ptr<AsyncRequest>> requests_;  // under req_mu_
  // Slots of TransferAsync calls between their limit check and their insert
  // (posting); counted against the request limit.  Under req_mu_.
  size_t reserved_requests_ = 0;
  uint64_t next_req_ = 1;  // under req_mu_

  std::mutex notify_mu_;
  std::vector<NotifyDesc> notifies_;

  std::mutex pool_mu_;                // leaf; guards creating / releasing pool_
  std::unique_ptr<BufferPool> pool_;  // staging buffers, made on first use
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_ENGINE_H_
