#include "core/engine.h"

#include <algorithm>
#include <cinttypes>

#include "common/log.h"
#include "common/node_id.h"
#include "config/option_table.h"
#include "memory/numa_topology.h"
#include "transport/lane_select.h"
#include "transport/plugin_loader.h"

namespace adxl {
namespace {

// How long Finalize waits for Bye to leave, and for its clients to confirm
// they stopped copying into our memory.
constexpr auto kByeDeadline = std::chrono::milliseconds(200);
constexpr auto kFinalizeByeWait = std::chrono::milliseconds(1000);
// Answers sent from the control thread are queued; a peer that does not
// read them by then is closed (control.h).
constexpr auto kControlSendDeadline = std::chrono::milliseconds(50);
// A client reads its handshake answer (HelloAck) synchronously; one that has
// not read all of it by then is closed.
constexpr auto kHandshakeAnswerDeadline = std::chrono::seconds(1);

// The UCX plugin's parameters that users set through the environment.
struct UcxPluginSetting {
  const char *variable;  // a kEnvOnly entry of the option table
  const char *param;     // the plugin's open() parameter (plugin/ucx/core/ucx_params.h)
};
constexpr UcxPluginSetting kUcxPluginSettings[] = {
    {"ADXL_UCX_CMA_SPLIT_BYTES", "cma_split_bytes"}, {"ADXL_UCX_CMA_SPIN_US", "cma_spin_us"},
    {"ADXL_UCX_RDMA_PROTOCOL", "rdma_protocol"},     {"ADXL_UCX_RDMA_CONNECTIONS", "rdma_connections"},
    {"ADXL_UCX_RDMA_PATHS", "rdma_paths"},
};

// The parameters the plugin gets.  Progress threads run on the cores of the
// NUMA node that serves the transport (the node MallocMem places memory on);
// HCCS-lane copies are striped over that node's CPUs (a few are enough to
// reach memory bandwidth) unless adxl.HccsCopyThreads says otherwise.
std::map<std::string, std::string> PluginParams(const EngineOptions &o) {
  std::map<std::string, std::string> params = {{"rdma_traffic_class", std::to_string(o.traffic_class)},
                                               {"rdma_service_level", std::to_string(o.service_level)}};
  uint32_t copy_threads = o.hccs_copy_threads;
  if (hwloc_bitmap_t cpus = hwloc_bitmap_alloc()) {
    char *list = nullptr;
    if (PreferredCpuset(cpus) && hwloc_bitmap_list_asprintf(&list, cpus) >= 0 && list != nullptr) {
      params["progress_cpus"] = list;
      const int n = hwloc_bitmap_weight(cpus);
      if (copy_threads == 0 && n > 0) copy_threads = static_cast<uint32_t>(std::min(n, 4));
    }
    free(list);
    hwloc_bitmap_free(cpus);
  }
  params["hccs_copy_threads"] = std::to_string(copy_threads == 0 ? 1 : copy_threads);
  // The UCX plugin's settings, read from the environment here, through the
  // option table, and checked by the plugin (a value it does not accept
  // fails Initialize); other plugins ignore them.
  for (const auto &setting : kUcxPluginSettings) {
    if (const char *v = EnvOnlySetting(setting.variable)) params[setting.param] = v;
  }
  return params;
}

}  // namespace

// ---------------------------------------------------------------- lifecycle

Status Engine::Initialize(const AscendString &local_engine, const std::map<AscendString, AscendString> &options) {
  MutexLock lifecycle(&lifecycle_mu_);
  if (initialized_.load()) {
    ADXL_ERROR("Initialize: engine is already initialized as '%s'; Finalize it first", name_.text.c_str());
    return FAILED;
  }
  EngineName name;
  std::string why;
  if (!ParseEngineName(local_engine.GetString(), &name, &why)) {
    ADXL_ERROR("Initialize: invalid engine name %s", why.c_str());
    return PARAM_INVALID;
  }
  std::map<std::string, std::string> opts;
  for (const auto &kv : options) opts[kv.first.GetString()] = kv.second.GetString();
  EngineOptions o;
  if (!ParseOptions(opts, &o, &why)) {
    ADXL_ERROR("Initialize: %s", why.c_str());
    return PARAM_INVALID;
  }
  std::unique_ptr<PluginLibrary> lib = PluginLibrary::Load(o.plugin, o.plugin_path, &why);
  if (!lib) {
    ADXL_ERROR("Initialize: %s", why.c_str());
    return FAILED;
  }
  std::shared_ptr<Transport> transport = Transport::Open(std::move(lib), PluginParams(o), &why);
  if (!transport) {
    ADXL_ERROR("Initialize: %s", why.c_str());
    return FAILED;
  }
  Fd listen_fd;
  if (name.listens()) {
    listen_fd = ListenTcp(name.host, name.ipv6, name.port, &why);
    if (!listen_fd.valid()) {
      ADXL_ERROR("Initialize: %s", why.c_str());
      return FAILED;
    }
  }
  name_ = name;
  node_id_ = LocalNodeId();
  options_ = o;
  transport_ = transport;
  const HandshakeIdentity self{name.text, node_id_, o.auth_token, o.heartbeat_ms, DeadAfterMs(o)};
  registrar_ = std::make_unique<Registrar>(transport, o);
  connector_ = std::make_unique<Connector>(self, o, transport, &loop_, &links_);
  transfers_ = std::make_unique<Transfers>(transport, o, registrar_.get(), connector_.get());
  notifier_ = std::make_unique<Notifier>(connector_.get());
  handshake_ = std::make_unique<HandshakeServer>(self, transport->address());
  admission_ = std::make_unique<Admission>(
      [this](const std::shared_ptr<ControlConn> &conn, HandshakeServer::Admitted a) { AdmitClient(conn, std::move(a)); });
  heartbeat_ = std::make_unique<Heartbeat>(o.heartbeat_ms, DeadAfterMs(o), HeartbeatTickMs(o), &links_,
                                           registrar_.get(), connector_.get(), &worker_);
  stats_log_ = std::make_unique<StatsLog>(o.stats_interval_ms);
  fences_ = std::make_unique<FenceDrains>([transport](Clock::time_point d) { return transport->Drain(d); }, &worker_,
                                          Link::kFenceDrain);
  worker_.Start();
  // A Hello must come within 3 ticks (at least 1 s) of the connection.
  const uint32_t tick_ms = HeartbeatTickMs(o);
  const int hello_timeout_ms = static_cast<int>(std::max<uint32_t>(3 * tick_ms, 1000));
  if (!loop_.Start(std::move(listen_fd), this, static_cast<int>(tick_ms), hello_timeout_ms, &why)) {
    ADXL_ERROR("Initialize: %s", why.c_str());
    worker_.Stop();
    fences_.reset();
    heartbeat_.reset();
    admission_.reset();
    stats_log_.reset();
    handshake_.reset();
    notifier_.reset();
    transfers_.reset();
    connector_.reset();
    registrar_.reset();
    transport_.reset();
    return FAILED;
  }
  initialized_.store(true);
  gate_.Open();
  ADXL_INFO("engine '%s' initialized (%s, transport %s)", name_.text.c_str(),
            name_.listens() ? "listening" : "client only", transport_->name().c_str());
  return SUCCESS;
}

void Engine::Finalize() {
  MutexLock lifecycle(&lifecycle_mu_);
  // Calls that start from now on fail (call_gate.h), and those in flight end
  // now: every link is closed as Disconnect closes it (its endpoint
  // cancelled, which ends every request on it; its control connection
  // closed, which wakes a call waiting for the peer's answer), no Connect
  // or AutoConnect makes a new one, and one in flight ends at once, even in
  // its handshake with a peer that never answers (Connector::Stop).  The
  // modules go once the last call has left.
  if (!gate_.Close()) return;
  connector_->Stop(Clock::now() + kByeDeadline);
  // A DeregisterMem or AwaitMetadataDelivered waiting for a peer's
  // acknowledgement (up to the heartbeat period) ends now; the peers are
  // told below, by the Bye.
  registrar_->StopWaits();
  gate_.WaitEmpty();
  initialized_.store(false);
  std::vector<std::shared_ptr<Link>> links = links_.TakeAll();
  const Clock::time_point bye_deadline = Clock::now() + kByeDeadline;
  for (const auto &link : links) {
    if (link->conn) {
      link->conn->Send(wire::Bye{}, 0, bye_deadline);
      link->conn->Close();
    }
    link->Shutdown();
  }
  // Clients that linked to us may be copying into our memory right now (the
  // HCCS lane needs nothing from us to do so): tell each and wait, bounded,
  // until it has cancelled its endpoint, before the memory is deregistered.
  const Clock::time_point fence_deadline = Clock::now() + kFinalizeByeWait;
  for (const auto &c : registrar_->Subscribers()) {
    uint32_t status = 0;
    if (c->Request(wire::Bye{}, fence_deadline, &status) != ControlConn::Outcome::kAcked) {
      ADXL_WARN("client '%s' did not confirm the end of its link before Finalize", c->peer_name().c_str());
    }
  }
  loop_.Stop();     // closes the server ends: their clients see the link fail
  worker_.Stop();   // runs what the control thread left for it
  fences_.reset();
  heartbeat_.reset();
  admission_.reset();
  stats_log_.reset();
  handshake_.reset();
  transfers_.reset();  // async requests and the buffer pool
  links.clear();
  notifier_.reset();
  // Wire-ups that failed Connects left running end first (wireup_reaper.h):
  // a peer answers them within UCP's own failure detection; 10 s at most.
  connector_->reaper().Drain(std::chrono::milliseconds(10000));
  connector_.reset();
  registrar_.reset();
  transport_.reset();
  ADXL_INFO("engine '%s' finalized", name_.text.c_str());
}

bool Engine::Ready(const char *api, const CallGate::Pass &call) const {
  if (call) return true;
  ADXL_ERROR("%s: engine is not initialized%s", api, initialized_.load() ? " (Finalize is running)" : "");
  return false;
}

// ---------------------------------------------------------------- API calls

Status Engine::RegisterMem(const MemDesc &mem, MemType type, MemHandle &handle) {
  const CallGate::Pass call = gate_.Enter();
  if (!Ready("RegisterMem", call)) return FAILED;
  return registrar_->Register(mem, type, &handle);
}

Status Engine::DeregisterMem(MemHandle handle) {
  const CallGate::Pass call = gate_.Enter();
  if (!Ready("DeregisterMem", call)) return FAILED;
  return registrar_->Deregister(handle);
}

Status Engine::Connect(const AscendString &remote, int32_t timeout_ms) {
  const CallGate::Pass call = gate_.Enter();
  if (!Ready("Connect", call)) return FAILED;
  return connector_->Connect(remote.GetString(), timeout_ms);
}

Status Engine::Disconnect(const AscendString &remote, int32_t timeout_ms) {
  const CallGate::Pass call = gate_.Enter();
  if (!Ready("Disconnect", call)) return FAILED;
  return connector_->Disconnect(remote.GetString(), timeout_ms);
}

Status Engine::TransferSync(const AscendString &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                            int32_t timeout_ms) {
  const CallGate::Pass call = gate_.Enter();
  if (!Ready("TransferSync", call)) return FAILED;
  return transfers_->Sync(remote.GetString(), op, descs, timeout_ms);
}

Status Engine::TransferAsync(const AscendString &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                             TransferReq &req, const void *user_data) {
  const CallGate::Pass call = gate_.Enter();
  if (!Ready("TransferAsync", call)) return FAILED;
  return transfers_->Async(remote.GetString(), op, descs, user_data, &req);
}

Status Engine::GetTransferStatus(const TransferReq &req, TransferStatus &status) {
  const CallGate::Pass call = gate_.Enter();
  status = TransferStatus::FAILED;
  if (!Ready("GetTransferStatus", call)) return FAILED;
  return transfers_->GetStatus(req, &status);
}

Status Engine::GetTransferStatuses(uint32_t max_count, bool skip_waiting, std::vector<RequestResult> *results) {
  const CallGate::Pass call = gate_.Enter();
  results->clear();
  if (!Ready("GetTransferStatus", call)) return FAILED;
  std::vector<AsyncRequests::Result> got;
  transfers_->GetStatuses(max_count, skip_waiting, &got);
  for (const auto &r : got) {
    results->push_back(RequestResult{reinterpret_cast<TransferReq>(static_cast<uintptr_t>(r.id)), r.user_data, r.status});
  }
  return SUCCESS;
}

Status Engine::SendNotify(const AscendString &remote, const NotifyDesc &notify, int32_t timeout_ms) {
  const CallGate::Pass call = gate_.Enter();
  if (!Ready("SendNotify", call)) return FAILED;
  return notifier_->Send(remote.GetString(), notify, timeout_ms);
}

Status Engine::GetNotifies(std::vector<NotifyDesc> &notifies) {
  const CallGate::Pass call = gate_.Enter();
  if (!Ready("GetNotifies", call)) return FAILED;
  notifier_->Drain(&notifies);
  return SUCCESS;
}

Status Engine::GetLinkInfo(const AscendString &remote, ext::LinkInfo &info) {
  const CallGate::Pass call = gate_.Enter();
  if (!call) return FAILED;
  std::shared_ptr<Link> link = links_.Find(remote.GetString());
  if (!link || link->state() == LinkState::kConnecting) return NOT_CONNECTED;
  info.same_node = link->peer_node_id == node_id_;
  info.lane = LaneName(link->endpoint ? link->endpoint->lane() : 0);
  info.transports = link->transports;
  info.failed = link->state() == LinkState::kFailed;
  info.bytes_read = link->bytes_read.load();
  info.bytes_written = link->bytes_written.load();
  info.ops = link->ops.load();
  return SUCCESS;
}

StatsView Engine::ReadStats() {
  StatsView v;
  links_.stats().Read(&v.peers, &v.retired);
  for (const auto &link : links_.Connected()) v.linked.insert(link->remote());
  return v;
}

Status Engine::GetLinkStats(const std::string &remote, ext::LinkStats *stats) {
  const CallGate::Pass call = gate_.Enter();
  if (!call) return FAILED;
  const StatsView v = ReadStats();
  auto it = v.peers.find(remote);
  if (it == v.peers.end()) return NOT_CONNECTED;
  *stats = ToPublic(remote, v.linked.count(remote) != 0, it->second);
  return SUCCESS;
}

Status Engine::GetAllLinkStats(std::vector<ext::LinkStats> *stats, ext::LinkStats *totals) {
  const CallGate::Pass call = gate_.Enter();
  stats->clear();
  if (!call) return FAILED;
  const StatsView v = ReadStats();
  for (const auto &kv : v.peers) stats->push_back(ToPublic(kv.first, v.linked.count(kv.first) != 0, kv.second));
  if (totals != nullptr) *totals = ToPublic("", false, v.Totals());
  return SUCCESS;
}

Status Engine::RenderPrometheus(std::string *text) {
  const CallGate::Pass call = gate_.Enter();
  text->clear();
  if (!call) return FAILED;
  *text = RenderPrometheusText(ReadStats());
  return SUCCESS;
}

Status Engine::GetLinkRegions(const AscendString &remote, std::vector<ext::LinkRegion> &regions) {
  const CallGate::Pass call = gate_.Enter();
  regions.clear();
  if (!call) return FAILED;
  std::shared_ptr<Link> link = links_.Find(remote.GetString());
  if (!link || link->state() == LinkState::kConnecting) return NOT_CONNECTED;
  regions = link->Regions();
  return SUCCESS;
}

Status Engine::PublishMetadata(const std::string &name, const std::string &blob) {
  const CallGate::Pass call = gate_.Enter();
  if (!Ready("PublishMetadata", call)) return FAILED;
  return registrar_->Publish(name, blob);
}

Status Engine::AwaitMetadataDelivered(const std::string &name) {
  const CallGate::Pass call = gate_.Enter();
  if (!Ready("AwaitMetadataDelivered", call)) return FAILED;
  return registrar_->AwaitDelivered(name);
}

Status Engine::GetPeerMetadata(const std::string &remote, const std::string &name, int32_t refresh_timeout_ms,
                               std::string *blob, uint64_t *version) {
  const CallGate::Pass call = gate_.Enter();
  *version = 0;
  blob->clear();
  if (!Ready("GetPeerMetadata", call)) return FAILED;
  std::shared_ptr<Link> link = links_.Find(remote);
  if (!link || link->state() != LinkState::kConnected) {
    ADXL_ERROR("GetPeerMetadata from '%s': not connected", remote.c_str());
    return link ? FAILED : NOT_CONNECTED;
  }
  if (refresh_timeout_ms > 0 &&
      !link->RefreshRegions(Clock::now() + std::chrono::milliseconds(refresh_timeout_ms))) {
    ADXL_ERROR("GetPeerMetadata from '%s': no answer to the refresh within %d ms", remote.c_str(), refresh_timeout_ms);
    return TIMEOUT;
  }
  link->GetMetadata(name, blob, version);
  return SUCCESS;
}

// ---------------------------------------------------------------- control thread

void Engine::OnMessage(const std::shared_ptr<ControlConn> &conn, wire::Message &msg) {
  if (conn->role() == ControlConn::Role::kServer) {
    HandleServer(conn, msg);
  } else {
    HandleClient(conn, msg);
  }
}

void Engine::HandleServer(const std::shared_ptr<ControlConn> &conn, wire::Message &msg) {
  const Clock::time_point deadline = Clock::now() + kControlSendDeadline;
  if (!conn->hello_done()) {
    HandshakeServer::Admitted admitted;
    if (handshake_->OnMessage(*conn, msg, deadline, &admitted) != HandshakeServer::Step::kAdmitted) return;
    if (InboundFull(conn.get(), admitted.from)) {
      // Refused before any transport state exists on either side; the
      // client maps the status to RESOURCE_EXHAUSTED (handshake.cc).
      ADXL_WARN("'%s' (%s) refused: this engine accepts at most %u peers (adxl.MaxInboundPeers) and has %zu",
                admitted.from.c_str(), conn->desc().c_str(), options_.max_inbound_peers, inbound_.size());
      wire::HelloAck ack;
      ack.status = RESOURCE_EXHAUSTED;
      conn->Send(ack, admitted.seq, deadline);
      conn->Close();
      return;
    }
    inbound_[conn.get()] = admitted.from;
    conn->set_peer_name(admitted.from);
    // Judged by the client's own timeout (heartbeat.h), never less than
    // 2 of its periods.
    conn->peer_dead_after_ms.store(std::max(admitted.dead_after_ms, 2 * admitted.heartbeat_ms));
    conn->set_hello_done();
    // Answered now, or once fewer clients are wiring up (admission.h).
    admission_->Offer(conn, std::move(admitted));
    return;
  }
  // The client sends nothing between our answer and the end of its
  // transport wire-up: from its first frame on, its link is set up.
  if (!conn->peer_live.exchange(true)) admission_->Live(conn.get());
  if (auto *n = std::get_if<wire::Notify>(&msg.body)) {
    conn->Send(wire::Ack{notifier_->Receive(*n, conn->peer_name())}, msg.seq, deadline);
  } else if (std::holds_alternative<wire::Ping>(msg.body)) {
    conn->Send(wire::Pong{}, msg.seq, deadline);
  } else if (std::holds_alternative<wire::Fence>(msg.body)) {
    // Drain what the peers' transports already put in flight towards us,
    // off this thread (fence_drains.h); the peer waits for the Ack
    // (Link::kFenceWait), so the drain ends before that.  The Ack says
    // whether everything ended.
    const uint64_t seq = msg.seq;
    const bool added = fences_->Add(conn.get(), conn->peer_name(), [conn, seq](uint32_t status) {
      conn->Send(wire::Ack{status}, seq, Clock::now() + kControlSendDeadline);
    });
    if (!added) conn->Close();  // a flood (logged), or Finalize is under way
  } else if (std::holds_alternative<wire::TableRequest>(msg.body)) {
    registrar_->SendTable(conn, msg.seq, Clock::now() + kHandshakeAnswerDeadline);
  } else if (std::holds_alternative<wire::Bye>(msg.body)) {
    ADXL_INFO("'%s' disconnected", conn->peer_name().c_str());
    conn->Close();
  } else {
    ADXL_ERROR("control connection from '%s': unexpected %s; closing it", conn->peer_name().c_str(),
               wire::TypeName(wire::TypeOf(msg.body)));
    conn->Close();
  }
}

void Engine::AdmitClient(const std::shared_ptr<ControlConn> &conn, HandshakeServer::Admitted admitted) {
  // Snapshot, subscription and the queueing of the answer happen at once
  // (registrar.h); the loop writes the answer as the client reads it, and
  // closes a client that has not read it by the deadline.
  const bool proven = !admitted.proof.empty();
  size_t regions = 0;
  if (!registrar_->Subscribe(conn, handshake_->Answer(std::move(admitted.proof)), admitted.seq,
                             Clock::now() + kHandshakeAnswerDeadline, &regions)) {
    conn->Close();
    return;
  }
  // Admitted while the loop handled another client's frame (admission.h):
  // the loop is told to write this one's answer.
  conn->WakeWriter();
  ADXL_INFO("'%s' connected (%zu regions advertised%s)", admitted.from.c_str(), regions,
            proven ? ", authenticated" : "");
  ForgetEarlierIncarnations(conn, admitted.from);
}

bool Engine::InboundFull(const ControlConn *conn, const std::string &from) const {
  EngineName name;
  std::string why;
  const bool listens = ParseEngineName(from, &name, &why) && name.listens();
  size_t others = 0;
  for (const auto &[c, peer] : inbound_) {
    if (c != conn && !(listens && peer == from)) ++others;
  }
  return others >= options_.max_inbound_peers;
}

void Engine::ForgetEarlierIncarnations(const std::shared_ptr<ControlConn> &conn, const std::string &from) {
  // A name with a port is one engine (it listens there): a second Hello
  // from it means that engine restarted (or reconnected) before its old
  // connection was seen to close.  The old subscription goes, so that
  // nothing is pushed to, or waited for from, the process that is gone.
  // Client-only names ("ip" without a port) are shared by many engines.
  EngineName name;
  std::string why;
  if (!ParseEngineName(from, &name, &why) || !name.listens()) return;
  for (const auto &c : registrar_->Subscribers()) {
    if (c != conn && c->peer_name() == from) {
      ADXL_INFO("'%s' connected again: closing its earlier connection %s", from.c_str(), c->desc().c_str());
      c->Close();
    }
  }
}

void Engine::HandleClient(const std::shared_ptr<ControlConn> &conn, wire::Message &msg) {
  const Clock::time_point deadline = Clock::now() + kControlSendDeadline;
  std::shared_ptr<Link> link = links_.FindByConn(conn.get());
  if (!link) return;  // disconnected meanwhile
  if (auto *add = std::get_if<wire::RegionAdd>(&msg.body)) {
    const Status s = link->AddRegion(add->region);
    conn->Send(wire::Ack{s}, msg.seq, deadline);
    // Past the wire's limit (logged by the link): the peer breaks the
    // protocol, and every further push would cost an error line.
    if (s == RESOURCE_EXHAUSTED) conn->Close();
  } else if (auto *del = std::get_if<wire::RegionDel>(&msg.body)) {
    std::shared_ptr<RemoteRegion> region = link->WithdrawRegion(del->id);
    if (!region) {
      conn->Send(wire::Ack{SUCCESS}, msg.seq, deadline);
      return;
    }
    // Acknowledge once no transfer of ours uses the region any more.
    std::weak_ptr<ControlConn> weak = conn;
    const uint64_t seq = msg.seq;
    region->on_retired = [weak, seq] {
      if (auto c = weak.lock()) c->Send(wire::Ack{SUCCESS}, seq, Clock::now() + kControlSendDeadline);
    };
  } else if (auto *meta = std::get_if<wire::MetadataUpdate>(&msg.body)) {
    const Status s = link->SetMetadata(std::move(meta->entry));
    // Sent as a request by AwaitMetadataDelivered: applied, and so is
    // everything the peer sent before it.
    if (msg.seq != 0) conn->Send(wire::Ack{s}, msg.seq, deadline);
    if (s != SUCCESS) conn->Close();  // past the wire's limit, as for regions
  } else if (std::holds_alternative<wire::Pong>(msg.body)) {
    // last_rx_ms is all a Pong is for
  } else if (std::holds_alternative<wire::Bye>(msg.body)) {
    // Fail() cancels the endpoint, waiting for copies in progress: once the
    // peer reads our answer, nothing of ours touches its memory any more.
    const uint64_t seq = msg.seq;
    worker_.Post([link, conn, seq] {
      link->Fail("the peer finalized");
      conn->Send(wire::Ack{SUCCESS}, seq, Clock::now() + kControlSendDeadline);
      conn->Close();
    });
  } else {
    ADXL_ERROR("control connection to '%s': unexpected %s; closing it", link->remote().c_str(),
               wire::TypeName(wire::TypeOf(msg.body)));
    conn->Close();
    worker_.Post([link] { link->Fail("protocol violation by the peer"); });
  }
}

void Engine::OnClosed(const std::shared_ptr<ControlConn> &conn) {
  if (conn->role() == ControlConn::Role::kServer) {
    inbound_.erase(conn.get());
    admission_->Closed(conn.get());
    registrar_->Unsubscribe(conn);
    return;
  }
  std::shared_ptr<Link> link = links_.FindByConn(conn.get());
  if (!link) return;
  Connector *connector = connector_.get();
  worker_.Post([link, connector] {
    if (!link->disconnected()) link->Fail("the peer closed the control connection (process gone?)");
    if (connector->auto_connect()) connector->DropLink(link);
  });
}

void Engine::OnTick() {
  heartbeat_->Tick();
  admission_->Tick(ControlLoop::NowMs());
  const Clock::time_point now = Clock::now();
  if (stats_log_->Due(now)) stats_log_->Emit(ReadStats(), now);
}

}  // namespace adxl
