// Engine: the engine core behind both public facades (adxl::AdxlEngine and
// hixl::Hixl, src/facade/), which each own one.
//
// It holds the lifecycle and ties the modules together; each API call checks
// the lifecycle and hands over to the module whose job it is:
//   registrar_   RegisterMem / DeregisterMem and the region pushes (registrar.h)
//   connector_   Connect / Disconnect / AutoConnect (connector.h, over links_)
//   transfers_   TransferSync / TransferAsync / statuses (transfers.h)
//   notifier_    SendNotify / GetNotifies (notifier.h)
//   handshake_   the server side of handshakes (control/handshake.h)
//   heartbeat_   liveness (heartbeat.h)
//   fences_      peers' fences: a drain of the transport, then the answers
//                (fence_drains.h)
//   admission_   how many clients wire up to us at once (admission.h)
//   stats_log_   the periodic statistics line (stats_log.h); the counters
//                live in links_ (link_stats.h)
// The ControlLoop's thread (control/control.h) delivers every message; the
// engine dispatches it to the module and never waits on it: answers are
// queued, and work that may wait (draining the transport for a Fence,
// failing a link, which cancels its endpoint) goes to worker_.
//
// Calls and locks.  Every API call holds a pass of gate_ (call_gate.h) for
// its whole length, which is no lock: the modules exist while a pass is out,
// and Finalize closes the gate, ends the calls in flight and waits for their
// passes before it destroys them.  Locks, in the order they may nest:
//   lifecycle_mu_ (Initialize and Finalize only, one at a time; never taken
//             by an API call, the control thread or the worker)
//   -> Registrar::op_mu_ -> Registrar::mu_ -> Link::regions_mu_
//   A transfer's plan holds the last two shared, as read-only views
//   (Registrar::RegistryView, then Link::RegionsView; transfers.h; the order
//   of these two is declared in link.h, so clang's analysis checks it), for the
//   plan alone: never across a post, a refresh from the peer or the wait for
//   a batch (batch_wait.h), which hold no engine lock.
//   Registrar::withdrawing_mu_ (after op_mu_ or alone), LinkTable,
//   AsyncRequests, Notifier, StagedTransfers::pool_mu_,
//   BufferPool::mu_, BackgroundWorker, WireupReaper, Link::state_mu_ and
//   ControlConn locks are leaves; FenceDrains::mu_ nests only
//   BackgroundWorker::mu_ (fence_drains.h).  UCP's worker lock lives
//   inside the plugin, below all of them: the plugin never calls back into
//   the engine (WireupReaper tests and closes endpoints outside its own
//   lock all the same).  Endpoint::mu_ (transport/transport.h) is a leaf
//   held across no plugin call: an endpoint teardown runs outside it, so the
//   control thread (key unpacks on region updates) never waits for one.
// The modules exist between a successful Initialize and Finalize; they are
// reached only with a pass of gate_ (API calls) or from the loop and worker
// threads, which Finalize stops before it destroys them.
#ifndef ADXL_SRC_CORE_ENGINE_H_
#define ADXL_SRC_CORE_ENGINE_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"
#include "common/background_worker.h"
#include "common/engine_name.h"
#include "common/thread_annotations.h"
#include "config/options.h"
#include "control/control.h"
#include "control/handshake.h"
#include "core/admission.h"
#include "core/call_gate.h"
#include "core/connector.h"
#include "core/fence_drains.h"
#include "core/heartbeat.h"
#include "core/link_table.h"
#include "core/notifier.h"
#include "core/registrar.h"
#include "core/stats_export.h"
#include "core/stats_log.h"
#include "core/transfers.h"
#include "transport/transport.h"

namespace adxl {

class Engine : public ControlHandler {
 public:
  Engine() = default;
  ~Engine() override { Finalize(); }

  Status Initialize(const AscendString &local_engine, const std::map<AscendString, AscendString> &options)
      ADXL_EXCLUDES(lifecycle_mu_);
  void Finalize() ADXL_EXCLUDES(lifecycle_mu_);
  Status RegisterMem(const MemDesc &mem, MemType type, MemHandle &handle);
  Status DeregisterMem(MemHandle handle);
  Status Connect(const AscendString &remote, int32_t timeout_ms);
  Status Disconnect(const AscendString &remote, int32_t timeout_ms);
  Status TransferSync(const AscendString &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                      int32_t timeout_ms);
  Status TransferAsync(const AscendString &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                       TransferReq &req, const void *user_data = nullptr);
  Status GetTransferStatus(const TransferReq &req, TransferStatus &status);
  // HIXL batch status: outstanding requests in submission order; at most
  // max_count results; with skip_waiting, running requests are left out.
  // Finished requests are reported once and leave the index.  Replaces
  // *results.
  struct RequestResult {
    TransferReq req;
    const void *user_data;
    TransferStatus status;
  };
  Status GetTransferStatuses(uint32_t max_count, bool skip_waiting, std::vector<RequestResult> *results)
     ;
  Status SendNotify(const AscendString &remote, const NotifyDesc &notify, int32_t timeout_ms)
     ;
  Status GetNotifies(std::vector<NotifyDesc> &notifies);
  Status GetLinkInfo(const AscendString &remote, ext::LinkInfo &info);
  Status GetLinkRegions(const AscendString &remote, std::vector<ext::LinkRegion> &regions);
  // adxl_ext.h: published metadata.
  Status PublishMetadata(const std::string &name, const std::string &blob);
  Status AwaitMetadataDelivered(const std::string &name);
  Status GetPeerMetadata(const std::string &remote, const std::string &name, int32_t refresh_timeout_ms,
                         std::string *blob, uint64_t *version);

  // adxl_ext.h: per-link statistics (stats_export.h).
  Status GetLinkStats(const std::string &remote, ext::LinkStats *stats);
  Status GetAllLinkStats(std::vector<ext::LinkStats> *stats, ext::LinkStats *totals);
  Status RenderPrometheus(std::string *text);

  bool initialized() const { return initialized_.load(); }
  // Valid after a successful Initialize.
  const EngineOptions &options() const { return options_; }

  // ControlHandler (control thread).
  void OnMessage(const std::shared_ptr<ControlConn> &conn, wire::Message &msg) override;
  void OnClosed(const std::shared_ptr<ControlConn> &conn) override;
  void OnTick() override;

 private:
  // Messages on server ends (links peers opened to us) and client ends.
  void HandleServer(const std::shared_ptr<ControlConn> &conn, wire::Message &msg);
  // Answers a client that passed the handshake and subscribes it (Admission).
  void AdmitClient(const std::shared_ptr<ControlConn> &conn, HandshakeServer::Admitted admitted);
  // Closes older server ends of the client named `from` (a restarted peer).
  void ForgetEarlierIncarnations(const std::shared_ptr<ControlConn> &conn, const std::string &from);
  void HandleClient(const std::shared_ptr<ControlConn> &conn, wire::Message &msg);
  // The lifecycle check of API calls: whether `call` was admitted; logs when
  // not (not initialized, or Finalize running).
  bool Ready(const char *api, const CallGate::Pass &call) const;
  // Every peer's counters and which have a link now (no lock held after).
  StatsView ReadStats();

  // Initialize and Finalize, one at a time.
  Mutex lifecycle_mu_;
  // Admits API calls while the engine is up (call_gate.h).
  CallGate gate_;
  // The modules exist: set by Initialize before it opens gate_, cleared by
  // Finalize once the last call has left (for Ready's message).
  std::atomic<bool> initialized_{false};
  // Set by Initialize before initialized_ and constant until Finalize.
  EngineName name_;
  std::string node_id_;
  EngineOptions options_;
  std::shared_ptr<Transport> transport_;
  ControlLoop loop_;
  BackgroundWorker worker_;
  LinkTable links_;
  std::unique_ptr<Registrar> registrar_;
  std::unique_ptr<Connector> connector_;
  std::unique_ptr<Transfers> transfers_;
  std::unique_ptr<Notifier> notifier_;
  std::unique_ptr<HandshakeServer> handshake_;
  std::unique_ptr<Heartbeat> heartbeat_;
  std::unique_ptr<Admission> admission_;  // control thread only
  std::unique_ptr<StatsLog> stats_log_;  // control thread only (OnTick)
  std::unique_ptr<FenceDrains> fences_;  // peers' fences (control thread adds, worker_ drains)
  // Inbound cap (adxl.MaxInboundPeers): the server ends whose handshake
  // passed, with the client's name.  Control thread only; no lock.
  std::map<const ControlConn *, std::string> inbound_;
  // Whether admitting `from` on `conn` would exceed the inbound cap (its own
  // earlier connections under a listening name do not count: they go).
  bool InboundFull(const ControlConn *conn, const std::string &from) const;
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_ENGINE_H_
