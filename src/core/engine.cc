#include "core/engine.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "control/auth.h"
#include "core/sync_slicer.h"
#include "memory/device_memory.h"
#include "memory/host_memory.h"
#include "transport/lane_select.h"
#include "common/log.h"
#include "common/node_id.h"
#include "memory/numa_topology.h"

namespace adxl {
namespace {

constexpr size_t kMaxNotifyField = 1024;      // bytes of name and of message (docs/contract.md §7.1)
constexpr size_t kMaxPendingNotifies = 4096;  // undrained notifies a receiver holds (docs/contract.md §7.3)
constexpr size_t kMaxAsyncRequests = 1u << 16;
constexpr int32_t kAsyncAutoConnectMs = 3000;  // AutoConnect budget of TransferAsync (docs/contract.md §5.8)
constexpr auto kByeDeadline = std::chrono::milliseconds(200);
// How long a TIMEOUT waits for the target to confirm the fence (it drains
// what already reached its transport).  TransferSync must return within its
// deadline plus 50 ms; a live target answers in a few ms, and a stopped or
// dead one would not answer in any bound, so waiting longer buys nothing:
// what keeps a stopped target's memory safe is that the lane moves data only
// while the initiator's (now force-closed) request lives.
constexpr auto kFenceWait = std::chrono::milliseconds(40);
// How long Finalize waits for its clients to confirm they stopped copying.
constexpr auto kFinalizeByeWait = std::chrono::milliseconds(1000);
// Answers sent from the control thread: a peer that does not read them for
// this long is misbehaving, and is closed rather than allowed to stall the
// thread that serves every other peer.
constexpr auto kControlSendDeadline = std::chrono::milliseconds(50);
// A client reads its handshake answer (HelloAck) synchronously; one that has
// not read all of it by then is closed.
constexpr auto kHandshakeAnswerDeadline = std::chrono::seconds(1);
Clock::time_point After(int32_t ms) { return Clock::now() + std::chrono::milliseconds(ms); }

const char *OpName(TransferOp op) { return op == READ ? "READ" : "WRITE"; }

}  // namespace

// ---------------------------------------------------------------- lifecycle

Status Engine::Initialize(const AscendString &local_engine,
                                              const std::map<AscendString, AscendString> &options) {
  std::unique_lock<std::shared_mutex> life(life_mu_);
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
  std::map<std::string, std::string> params = {{"rdma_traffic_class", std::to_string(o.traffic_class)},
                                               {"rdma_service_level", std::to_string(o.service_level)}};
  // Progress threads run on the cores of the NUMA node that serves the
  // transport (the node MallocMem places memory on).
  // HCCS-lane copies are striped over that node's CPUs (a few are enough to
  // reach memory bandwidth) unless adxl.HccsCopyThreads says otherwise.
  uint32_t copy_threads = o.hccs_copy_threads;
  if (hwloc_bitmap_t cpus = hwloc_bitmap_alloc()) {
    char *list = nullptr;
    if (PreferredCpuset(cpus) && hwloc_bitmap_list_asprintf(&list, cpus) >= 0 && list != nullptr) {
      params["progress_cpus"] = list;
      const int n = hwloc_bitmap_weight(cpus);
      if (copy_threads == 0 && n > 0) copy_threads = std::min(n, 4);
    }
    free(list);
    hwloc_bitmap_free(cpus);
  }
  params["hccs_copy_threads"] = std::to_string(copy_threads == 0 ? 1 : copy_threads);
  std::shared_ptr<Transport> transport = Transport::Open(std::move(lib), params, &why);
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
  Registry::Limits limits{o.max_registrations, o.max_device_bytes, o.max_host_bytes};
  name_ = name;
  options_ = o;
  node_id_ = LocalNodeId();
  transport_ = transport;
  registry_ = std::make_unique<Registry>(limits);
  const int hello_timeout_ms = static_cast<int>(std::max<uint32_t>(3 * o.heartbeat_ms, 1000));
  if (!loop_.Start(std::move(listen_fd), this, static_cast<int>(o.heartbeat_ms), hello_timeout_ms, &why)) {
    ADXL_ERROR("Initialize: %s", why.c_str());
    registry_.reset();
    transport_.reset();
    return FAILED;
  }
  initialized_.store(true);
  ADXL_INFO("engine '%s' initialized (%s, transport %s)", name_.text.c_str(),
            name_.listens() ? "listening" : "client only", transport_->name().c_str());
  return SUCCESS;
}

void Engine::Finalize() {
  std::unique_lock<std::shared_mutex> life(life_mu_);
  if (!initialized_.exchange(false)) return;
  std::map<std::string, std::shared_ptr<Link>> links;
  {
    std::lock_guard<std::mutex> l(links_mu_);
    links.swap(links_);
    link_by_conn_.clear();
  }
  const Clock::time_point bye_deadline = Clock::now() + kByeDeadline;
  for (auto &kv : links) {
    const std::shared_ptr<Link> &link = kv.second;
    if (link->conn) {
      link->conn->Send(wire::Bye{}, 0, bye_deadline);
      link->conn->Close();
    }
    link->Shutdown();
  }
  // Clients that linked to us may be copying into our memory right now (the
  // HCCS lane needs nothing from us to do so): tell each and wait, bounded,
  // until it has cancelled its endpoint, before the memory is deregistered.
  std::vector<std::shared_ptr<ControlConn>> clients;
  {
    std::shared_lock<std::shared_mutex> l(reg_mu_);
    clients.assign(subscribers_.begin(), subscribers_.end());
  }
  const Clock::time_point fence_deadline = Clock::now() + kFinalizeByeWait;
  for (const auto &c : clients) {
    uint32_t status = 0;
    if (c->Request(wire::Bye{}, fence_deadline, &status) != ControlConn::Outcome::kAcked) {
      ADXL_WARN("client '%s' did not confirm the end of its link before Finalize", c->peer_name().c_str());
    }
  }
  loop_.Stop();  // closes the server ends: their clients see the link fail
  {
    std::lock_guard<std::mutex> l(req_mu_);
    requests_.clear();
  }
  links.clear();
  {
    std::unique_lock<std::shared_mutex> l(reg_mu_);
    subscribers_.clear();
    registry_.reset();
  }
  {
    std::lock_guard<std::mutex> l(notify_mu_);
    notifies_.clear();
  }
  {
    std::lock_guard<std::mutex> l(pool_mu_);
    pool_.reset();
  }
  transport_.reset();
  ADXL_INFO("engine '%s' finalized", name_.text.c_str());
}

// ---------------------------------------------------------------- registry

wire::Region Engine::ToWire(const LocalRegion &r) const {
  wire::Region w;
  w.id = r.id;
  w.addr = r.addr;
  w.len = r.len;
  w.mem_type = static_cast<uint32_t>(r.type);
  w.rkey = r.mem ? r.mem->packed_key() : std::string();
  return w;
}

Status Engine::RegisterMem(const MemDesc &mem, MemType type, MemHandle &handle) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!initialized_.load()) {
    ADXL_ERROR("RegisterMem: engine is not initialized");
    return FAILED;
  }
  if (mem.addr == 0 || mem.len == 0 || mem.addr + mem.len < mem.addr) {
    ADXL_ERROR("RegisterMem: invalid range {addr 0x%" PRIxPTR ", len %zu}: %s", mem.addr, mem.len,
               mem.addr == 0 ? "null address" : mem.len == 0 ? "zero length" : "address + length overflows");
    return PARAM_INVALID;
  }
  if (type != MEM_HOST && type != MEM_DEVICE) {
    ADXL_ERROR("RegisterMem: memory type %d is neither MEM_DEVICE nor MEM_HOST", static_cast<int>(type));
    return PARAM_INVALID;
  }
  std::lock_guard<std::mutex> op(reg_op_mu_);
  std::string why;
  {
    std::unique_lock<std::shared_mutex> l(reg_mu_);
    std::shared_ptr<LocalRegion> existing;
    Status st = registry_->Check(mem.addr, mem.len, type, &existing, &why);
    if (st != SUCCESS) {
      ADXL_ERROR("RegisterMem {addr 0x%" PRIxPTR ", len %zu}: %s", mem.addr, mem.len, why.c_str());
      return st;
    }
    if (existing) {
      ++existing->refs;
      handle = reinterpret_cast<MemHandle>(static_cast<uintptr_t>(existing->id));
      return SUCCESS;
    }
  }
  if (type == MEM_DEVICE && !transport_->device_memory()) {
    ADXL_ERROR("RegisterMem {addr 0x%" PRIxPTR ", len %zu}: device memory is not supported: the %s transport "
               "cannot move it (it needs a UCX with CUDA or ROCm support whose RMA protocols handle device memory, "
               "UCX_PROTO_ENABLE=y; with ADXL_LOG_LEVEL=info the transport says at Initialize which is missing)",
               mem.addr, mem.len, transport_->name().c_str());
    return UNSUPPORTED;
  }
  if (type == MEM_DEVICE) {
    bool checked = false;
    Status st = CheckDeviceRange(mem.addr, mem.len, &checked, &why);
    if (st != SUCCESS) {
      ADXL_ERROR("RegisterMem {addr 0x%" PRIxPTR ", len %zu} as MEM_DEVICE: %s", mem.addr, mem.len, why.c_str());
      return st;
    }
    if (!checked) {
      ADXL_INFO("RegisterMem {addr 0x%" PRIxPTR ", len %zu}: no CUDA device here (device runtime: %s), so the range "
                "is not checked; the transport takes it as device memory",
                mem.addr, mem.len, DeviceRuntimeName());
    }
  }
  auto region = std::make_shared<LocalRegion>();
  // EnableUseFabricMem=1: memory from MallocMem is offered to same-node
  // peers as a mapping of its memfd (docs/contract.md §3.5, §8).
  std::string share_path;
  uint64_t share_offset = 0;
  HostBlockInfo block;
  if (options_.fabric_mem && type == MEM_HOST && FindHostBlock(reinterpret_cast<void *>(mem.addr), &block) &&
      block.fd >= 0 && mem.addr + mem.len <= reinterpret_cast<uintptr_t>(block.base) + block.size) {
    share_path = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(block.fd);
    share_offset = mem.addr - reinterpret_cast<uintptr_t>(block.base);
  }
  int rc = TransportMem::Register(transport_, reinterpret_cast<void *>(mem.addr), mem.len,
                                  type == MEM_DEVICE ? ADXL_PLUGIN_MEM_DEVICE : ADXL_PLUGIN_MEM_HOST, share_path,
                                  share_offset, &region->mem);
  if (rc != ADXL_PLUGIN_OK) {
    ADXL_ERROR("RegisterMem {addr 0x%" PRIxPTR ", len %zu}: transport refused the registration (status %d)",
               mem.addr, mem.len, rc);
    return rc == ADXL_PLUGIN_ERR_UNSUPPORTED ? UNSUPPORTED : FAILED;
  }
  region->addr = mem.addr;
  region->len = mem.len;
  region->type = type;
  std::vector<std::shared_ptr<ControlConn>> peers;
  {
    std::unique_lock<std::shared_mutex> l(reg_mu_);
    registry_->Insert(region);
    peers.assign(subscribers_.begin(), subscribers_.end());
  }
  PushToPeers(wire::RegionAdd{ToWire(*region)}, peers);
  handle = reinterpret_cast<MemHandle>(static_cast<uintptr_t>(region->id));
  return SUCCESS;
}

Status Engine::DeregisterMem(MemHandle handle) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!initialized_.load()) {
    ADXL_ERROR("DeregisterMem: engine is not initialized");
    return FAILED;
  }
  if (handle == nullptr) {
    ADXL_ERROR("DeregisterMem: null handle");
    return PARAM_INVALID;
  }
  const uint64_t id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  std::lock_guard<std::mutex> op(reg_op_mu_);
  std::shared_ptr<LocalRegion> region;
  std::vector<std::shared_ptr<ControlConn>> peers;
  {
    std::unique_lock<std::shared_mutex> l(reg_mu_);
    region = registry_->Find(id);
    if (!region) {
      ADXL_INFO("DeregisterMem: handle %" PRIu64 " is not registered (already deregistered?); nothing to do", id);
      return SUCCESS;
    }
    if (--region->refs > 0) return SUCCESS;
    registry_->Erase(id);
    peers.assign(subscribers_.begin(), subscribers_.end());
  }
  PushToPeers(wire::RegionDel{id}, peers);
  // The registration itself goes when the last transfer using it lets go.
  return SUCCESS;
}

void Engine::PushToPeers(const wire::Body &body,
                                             const std::vector<std::shared_ptr<ControlConn>> &peers) {
  const auto wait = std::chrono::milliseconds(std::max<uint32_t>(3 * options_.heartbeat_ms, 2000));
  const Clock::time_point deadline = Clock::now() + wait;
  const bool add = std::holds_alternative<wire::RegionAdd>(body);
  for (const auto &peer : peers) {
    if (add && !peer->answer_sent()) {
      // Its handshake answer is still queued, so its Connect has not
      // returned: the addition is queued behind the answer and not waited
      // for (core/engine.h, "Handshake and region pushes").
      peer->Post(body, deadline);
      continue;
    }
    uint32_t status = 0;
    ControlConn::Outcome out = peer->Request(body, deadline, &status);
    if (out == ControlConn::Outcome::kTimeout) {
      // A peer that cannot confirm must not keep using our regions.
      ADXL_WARN("peer %s did not acknowledge %s in time; closing its link", peer->peer_name().c_str(),
                wire::TypeName(wire::TypeOf(body)));
      peer->Close();
    } else if (out == ControlConn::Outcome::kAcked && status != SUCCESS) {
      ADXL_WARN("peer %s could not apply %s (status %u); closing its link", peer->peer_name().c_str(),
                wire::TypeName(wire::TypeOf(body)), status);
      peer->Close();
    }
  }
}

// ---------------------------------------------------------------- links

std::shared_ptr<Link> Engine::FindLink(const std::string &remote) {
  std::lock_guard<std::mutex> l(links_mu_);
  auto it = links_.find(remote);
  return it == links_.end() ? nullptr : it->second;
}

Status Engine::Connect(const AscendString &remote_engine, int32_t timeout_ms) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!initialized_.load()) {
    ADXL_ERROR("Connect: engine is not initialized");
    return FAILED;
  }
  return DoConnect(remote_engine.GetString(), timeout_ms);
}

Status Engine::DoConnect(const std::string &remote, int32_t timeout_ms) {
  if (timeout_ms <= 0) {
    ADXL_ERROR("Connect to '%s': timeout %d ms must be > 0", remote.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  EngineName peer;
  std::string why;
  if (!ParseEngineName(remote, &peer, &why)) {
    ADXL_ERROR("Connect: invalid remote engine name %s", why.c_str());
    return PARAM_INVALID;
  }
  if (!peer.listens()) {
    ADXL_ERROR("Connect to '%s': no port, so that engine is client only and cannot be connected to", remote.c_str());
    return PARAM_INVALID;
  }
  if (remote == name_.text) {
    ADXL_ERROR("Connect to '%s': an engine cannot connect to itself", remote.c_str());
    return PARAM_INVALID;
  }
  const Clock::time_point deadline = After(timeout_ms);
  while (true) {
    std::shared_ptr<Link> link;
    bool mine = false;
    {
      std::lock_guard<std::mutex> l(links_mu_);
      auto it = links_.find(remote);
      if (it != links_.end()) {
        link = it->second;
      } else {
        link = std::make_shared<Link>(remote);
        links_[remote] = link;
        mine = true;
      }
    }
    if (!mine) {
      // Another call is connecting, or a link exists.
      if (!link->WaitSettled(deadline)) {
        ADXL_ERROR("Connect to '%s': timed out waiting for a concurrent Connect", remote.c_str());
        return TIMEOUT;
      }
      if (FindLink(remote) == link) {
        ADXL_INFO("Connect to '%s': already connected", remote.c_str());
        return ALREADY_CONNECTED;
      }
      continue;  // the other attempt failed: try ourselves
    }
    Status st = ConnectOnce(link, peer, deadline);
    if (st != SUCCESS) {
      {
        std::lock_guard<std::mutex> l(links_mu_);
        auto it = links_.find(remote);
        if (it != links_.end() && it->second == link) links_.erase(it);
        if (link->conn) link_by_conn_.erase(link->conn.get());
      }
      if (link->conn) link->conn->Close();
      link->Shutdown();
      return st;
    }
    link->SetConnected();
    return SUCCESS;
  }
}

Status Engine::ConnectOnce(const std::shared_ptr<Link> &link, const EngineName &peer,
                                               Clock::time_point deadline) {
  const std::string &remote = peer.text;
  Fd fd;
  std::string why;
  NetResult nr = ConnectTcp(peer.host, peer.ipv6, peer.port, deadline, &fd, &why);
  if (nr != NetResult::kOk) {
    ADXL_ERROR("Connect to '%s': %s", remote.c_str(), why.c_str());
    return nr == NetResult::kTimeout ? TIMEOUT : FAILED;
  }
  auto conn = std::make_shared<ControlConn>(std::move(fd), ControlConn::Role::kClient, remote);
  link->conn = conn;
  auto io_status = [&](const char *what, NetResult r = NetResult::kError) {
    bool late = r == NetResult::kTimeout || Clock::now() >= deadline;
    ADXL_ERROR("Connect to '%s': %s %s", remote.c_str(), what, late ? "timed out" : "failed (peer closed?)");
    return late ? TIMEOUT : FAILED;
  };
  // Access control (adxl.AuthToken, src/control/auth.h): with a token, Hello carries
  // our nonce, the server challenges with its own, we prove first, and the
  // server's HelloAck must carry its proof before anything of it is used.
  const std::string &token = options_.auth_token;
  const bool auth = !token.empty();
  std::string client_nonce, server_nonce;
  if (auth && !auth::MakeNonce(&client_nonce)) {
    ADXL_ERROR("Connect to '%s': no random bytes for the authentication nonce", remote.c_str());
    return FAILED;
  }
  wire::Hello hello{name_.text, remote, node_id_, auth ? wire::kHelloAuth : 0u, client_nonce};
  if (!conn->Send(hello, 1, deadline)) return io_status("handshake send");
  // Reads exactly one handshake frame; anything after it stays in the socket
  // for the control thread.
  wire::Message msg;
  auto read_frame = [&]() -> Status {
    std::string frame(wire::kHeaderSize, '\0');
    NetResult r = RecvExact(conn->fd(), frame.data(), frame.size(), deadline);
    if (r != NetResult::kOk) return io_status("handshake", r);
    uint32_t len = 0;
    memcpy(&len, frame.data() + 8, sizeof(len));  // little-endian hosts only (x86-64, aarch64)
    if (len > wire::kMaxPayload) {
      ADXL_ERROR("Connect to '%s': handshake answer of %u bytes is over the limit", remote.c_str(), len);
      return FAILED;
    }
    frame.resize(wire::kHeaderSize + len);
    r = RecvExact(conn->fd(), frame.data() + wire::kHeaderSize, len, deadline);
    if (r != NetResult::kOk) return io_status("handshake", r);
    wire::FrameReader reader;
    reader.Feed(frame.data(), frame.size());
    if (reader.Next(&msg, &why) != wire::FrameReader::Result::kMessage) {
      ADXL_ERROR("Connect to '%s': bad handshake answer: %s", remote.c_str(), why.c_str());
      return FAILED;
    }
    return SUCCESS;
  };
  Status st = read_frame();
  if (st != SUCCESS) return st;
  if (auto *challenge = std::get_if<wire::AuthChallenge>(&msg.body)) {
    if (!auth || challenge->nonce.size() != auth::kNonceSize) {
      ADXL_ERROR("Connect to '%s': unexpected authentication challenge (%s); refused", remote.c_str(),
                 auth ? "malformed nonce" : "this engine has no adxl.AuthToken");
      return FAILED;
    }
    server_nonce = challenge->nonce;
    const std::string proof = auth::Proof(token, auth::Role::kClient, name_.text, remote, client_nonce, server_nonce);
    if (proof.empty()) {
      ADXL_ERROR("Connect to '%s': computing the authentication proof failed (libcrypto)", remote.c_str());
      return FAILED;
    }
    if (!conn->Send(wire::AuthResponse{proof}, 2, deadline)) return io_status("authentication send");
    st = read_frame();
    if (st != SUCCESS) return st;
  }
  auto *ack = std::get_if<wire::HelloAck>(&msg.body);
  if (ack == nullptr) {
    ADXL_ERROR("Connect to '%s': bad handshake answer: %s, not a HelloAck", remote.c_str(),
               wire::TypeName(wire::TypeOf(msg.body)));
    return FAILED;
  }
  if (ack->status == FAILED) {
    ADXL_ERROR("Connect to '%s': refused by the peer's access control: adxl.AuthToken %s", remote.c_str(),
               auth ? "differs, or the peer has none" : "is required by the peer and this engine has none");
    return FAILED;
  }
  if (ack->status != SUCCESS) {
    ADXL_ERROR("Connect to '%s': the engine listening there has another name (its Initialize was not given '%s')",
               remote.c_str(), remote.c_str());
    return FAILED;
  }
  if (auth) {
    // Mutual: the server must prove it knows the token too, before any of
    // its answer (regions, transport address) is used.
    const std::string expected =
        server_nonce.empty()
            ? std::string()
            : auth::Proof(token, auth::Role::kServer, name_.text, remote, client_nonce, server_nonce);
    if (!auth::ProofMatches(expected, ack->proof)) {
      ADXL_ERROR("Connect to '%s': the peer did not prove it has this engine's adxl.AuthToken (%s); refused",
                 remote.c_str(), server_nonce.empty() ? "it sent no challenge" : "wrong proof");
      return FAILED;
    }
  }
  const bool same_node = ack->node_id == node_id_;
  const uint32_t lanes = AllowedLanes(same_node, options_.protocols);
  if (lanes == 0) {
    ADXL_ERROR("Connect to '%s': no lane allowed by comm_resource_config.protocol_desc reaches a peer on %s node",
               remote.c_str(), same_node ? "the same" : "another");
    return FAILED;
  }
  std::shared_ptr<Endpoint> ep;
  int rc = Endpoint::Create(transport_, ack->transport_address, lanes, &ep);
  if (rc != ADXL_PLUGIN_OK) {
    ADXL_ERROR("Connect to '%s': no allowed lane reaches the peer (transport status %d)", remote.c_str(), rc);
    return FAILED;
  }
  link->endpoint = ep;
  link->peer_node_id = ack->node_id;
  for (const wire::Region &r : ack->regions) {
    if (AddRemoteRegion(link, r) != SUCCESS) return FAILED;
  }
  // Complete the transport's wire-up inside the caller's deadline.
  std::unique_ptr<Batch> flush;
  rc = ep->Post(ADXL_PLUGIN_PUT, nullptr, 0, &flush);
  Transport::Waiter idle;
  while (rc == ADXL_PLUGIN_OK && flush->Test() == ADXL_PLUGIN_IN_PROGRESS) {
    if (Clock::now() >= deadline) {
      ADXL_ERROR("Connect to '%s': transport wire-up timed out", remote.c_str());
      return TIMEOUT;
    }
    transport_->WaitStep(&idle);
  }
  if (rc == ADXL_PLUGIN_OK) rc = flush->Test();
  if (rc != ADXL_PLUGIN_OK) {
    ADXL_ERROR("Connect to '%s': transport wire-up failed (status %d)", remote.c_str(), rc);
    return FAILED;
  }
  link->transports = ep->Describe();
  {
    std::lock_guard<std::mutex> l(links_mu_);
    link_by_conn_[conn.get()] = link;
  }
  if (!loop_.Add(conn)) {
    ADXL_ERROR("Connect to '%s': the peer closed the connection during the handshake", remote.c_str());
    return FAILED;
  }
  ADXL_INFO("Connect: linked to '%s' (%s node, %zu regions) on the %s lane over %s", remote.c_str(),
            same_node ? "same" : "other", ack->regions.size(), LaneName(ep->lane()), link->transports.c_str());
  return SUCCESS;
}

Status Engine::Disconnect(const AscendString &remote_engine, int32_t timeout_ms) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!initialized_.load()) {
    ADXL_ERROR("Disconnect: engine is not initialized");
    return FAILED;
  }
  const std::string remote = remote_engine.GetString();
  if (timeout_ms <= 0) {
    ADXL_ERROR("Disconnect from '%s': timeout %d ms must be > 0", remote.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  std::shared_ptr<Link> link;
  {
    std::lock_guard<std::mutex> l(links_mu_);
    auto it = links_.find(remote);
    if (it == links_.end() || it->second->state() == LinkState::kConnecting) {
      ADXL_ERROR("Disconnect from '%s': not connected", remote.c_str());
      return NOT_CONNECTED;
    }
    link = it->second;
    links_.erase(it);
    link_by_conn_.erase(link->conn.get());
  }
  if (link->state() == LinkState::kConnected) link->conn->Send(wire::Bye{}, 0, After(timeout_ms));
  link->conn->Close();
  link->Shutdown();
  ADXL_INFO("Disconnect: link to '%s' closed", remote.c_str());
  return SUCCESS;
}

Status Engine::AddRemoteRegion(const std::shared_ptr<Link> &link, const wire::Region &r) {
  if (r.len == 0 || r.addr == 0 || r.addr + r.len < r.addr || r.mem_type > MEM_HOST) {
    ADXL_ERROR("peer '%s' advertised an invalid region {addr 0x%" PRIx64 ", len %" PRIu64 ", type %u}",
               link->remote().c_str(), r.addr, r.len, r.mem_type);
    return PARAM_INVALID;
  }
  auto region = std::make_shared<RemoteRegion>();
  region->id = r.id;
  region->mem_type = r.mem_type;
  int rc = RemoteKey::Unpack(link->endpoint, r.rkey, &region->key);
  if (rc != ADXL_PLUGIN_OK) {
    ADXL_ERROR("peer '%s': cannot unpack the key of region %" PRIu64 " (status %d)", link->remote().c_str(), r.id, rc);
    return FAILED;
  }
  std::unique_lock<std::shared_mutex> l(link->regions_mu);
  if (link->region_addr_by_id.count(r.id) != 0) return SUCCESS;  // seen in the handshake already
  if (link->regions.Overlaps(r.addr, r.len)) {
    ADXL_ERROR("peer '%s' advertised region %" PRIu64 " overlapping another of its regions", link->remote().c_str(),
               r.id);
    return PARAM_INVALID;
  }
  link->regions.Insert(r.addr, r.len, region);
  link->region_addr_by_id[r.id] = r.addr;
  return SUCCESS;
}

// ---------------------------------------------------------------- transfers

Status Engine::Prepare(const char *api, const std::string &remote, TransferOp op,
                                           const std::vector<TransferOpDesc> &descs,
                                           Clock::time_point connect_deadline, std::shared_ptr<Link> *link_out,
                                           TransferPlan *plan) {
  if (op != READ && op != WRITE) {
    ADXL_ERROR("%s to '%s': operation %d is neither READ nor WRITE", api, remote.c_str(), static_cast<int>(op));
    return PARAM_INVALID;
  }
  if (descs.empty()) {
    ADXL_ERROR("%s to '%s': empty descriptor list", api, remote.c_str());
    return PARAM_INVALID;
  }
  for (size_t i = 0; i < descs.size(); ++i) {
    if (descs[i].local_addr == 0 || descs[i].remote_addr == 0 || descs[i].len == 0) {
      ADXL_ERROR("%s to '%s': descriptor %zu has a zero %s", api, remote.c_str(), i,
                 descs[i].len == 0 ? "length" : "address");
      return PARAM_INVALID;
    }
  }
  std::shared_ptr<Link> link;
  Status st = AcquireLink(api, remote, connect_deadline, &link);
  if (st != SUCCESS) return st;
  std::string why;
  {
    std::shared_lock<std::shared_mutex> rl(reg_mu_);
    std::shared_lock<std::shared_mutex> ll(link->regions_mu);
    st = BuildTransferPlan(descs, *registry_, link->regions, plan, &why);
  }
  if (st != SUCCESS) {
    ADXL_ERROR("%s %s to '%s': %s", api, OpName(op), remote.c_str(), why.c_str());
    return st;
  }
  *link_out = std::move(link);
  return SUCCESS;
}

Status Engine::Post(const std::shared_ptr<Link> &link, TransferOp op, const adxl_plugin_iov_t *iov,
                                        size_t count, std::unique_ptr<Batch> *batch) {
  int rc = link->endpoint->Post(op == WRITE ? ADXL_PLUGIN_PUT : ADXL_PLUGIN_GET, iov, count, batch);
  if (rc != ADXL_PLUGIN_OK) {
    ADXL_ERROR("%s to '%s': transport refused the batch (status %d)", OpName(op), link->remote().c_str(), rc);
    if (rc == ADXL_PLUGIN_ERR_IO || rc == ADXL_PLUGIN_ERR_CANCELED) link->Fail("transport endpoint failed");
    return rc == ADXL_PLUGIN_ERR_NO_RESOURCE ? RESOURCE_EXHAUSTED : FAILED;
  }
  return SUCCESS;
}

void Engine::FenceAfterTimeout(const std::shared_ptr<Link> &link) {
  // 1. Nothing more leaves this side: the endpoint is force-closed.
  link->Fail("a transfer timed out");
  // 2. What already left is drained by the target before we return (it
  //    progresses its transport until idle, then acknowledges).
  uint32_t status = 0;
  if (link->conn->Request(wire::Fence{}, Clock::now() + kFenceWait, &status) != ControlConn::Outcome::kAcked) {
    ADXL_WARN("link to '%s': the target did not confirm the fence (dead or stopped)", link->remote().c_str());
  }
}

Status Engine::TransferSync(const AscendString &remote_engine, TransferOp op,
                                                const std::vector<TransferOpDesc> &descs, int32_t timeout_ms) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!initialized_.load()) {
    ADXL_ERROR("TransferSync: engine is not initialized");
    return FAILED;
  }
  const std::string remote = remote_engine.GetString();
  if (timeout_ms <= 0) {
    ADXL_ERROR("TransferSync to '%s': timeout %d ms must be > 0", remote.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  const Clock::time_point deadline = After(timeout_ms);
  bool staged = false;
  Status st = TransferStaged(remote, op, descs, deadline, timeout_ms, &staged);
  if (staged) return st;
  std::shared_ptr<Link> link;
  TransferPlan plan;
  st = Prepare("TransferSync", remote, op, descs, deadline, &link, &plan);
  if (st != SUCCESS) return st;
  // Posted in slices with the deadline checked before each: lanes that copy
  // inside Post (cma, mapped memory) would otherwise run a large batch far
  // past the caller's deadline.  Lanes that only queue work have every slice
  // in flight at once, as if posted whole.
  std::vector<std::unique_ptr<Batch>> batches;
  int rc = ADXL_PLUGIN_OK;
  auto timed_out = [&] {
    FenceAfterTimeout(link);
    ADXL_ERROR("TransferSync %s to '%s': timed out after %d ms; the link is failed until reconnected", OpName(op),
               remote.c_str(), timeout_ms);
    return TIMEOUT;
  };
  Status refused = SUCCESS;  // a slice the transport refused: the earlier ones still finish first
  std::vector<adxl_plugin_iov_t> slice;
  SyncSlicer slicer(plan.iov);
  while (!slicer.done()) {
    if (!batches.empty() && Clock::now() >= deadline) return timed_out();
    if (!slicer.Next(&slice)) break;
    std::unique_ptr<Batch> batch;
    refused = Post(link, op, slice.data(), slice.size(), &batch);
    if (refused != SUCCESS) break;
    batches.push_back(std::move(batch));
  }
  Transport::Waiter idle;
  for (const auto &batch : batches) {
    while ((rc = batch->Test()) == ADXL_PLUGIN_IN_PROGRESS) {
      if (Clock::now() >= deadline) return timed_out();
      transport_->WaitStep(&idle);
    }
    if (rc != ADXL_PLUGIN_OK) break;
  }
  if (refused != SUCCESS) return refused;
  if (rc != ADXL_PLUGIN_OK) {
    if (link->disconnected()) {
      ADXL_ERROR("TransferSync %s to '%s': the link was disconnected meanwhile", OpName(op), remote.c_str());
    } else {
      link->Fail("transfer failed in the transport (status " + std::to_string(rc) + ")");
      ADXL_ERROR("TransferSync %s to '%s': failed in the transport (status %d)", OpName(op), remote.c_str(), rc);
    }
    return FAILED;
  }
  (op == READ ? link->bytes_read : link->bytes_written).fetch_add(plan.bytes, std::memory_order_relaxed);
  link->ops.fetch_add(plan.iov.size(), std::memory_order_relaxed);
  return SUCCESS;
}

Status Engine::TransferAsync(const AscendString &remote_engine, TransferOp op,
                                                 const std::vector<TransferOpDesc> &descs, TransferReq &req,
                                                 const void *user_data) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!initialized_.load()) {
    ADXL_ERROR("TransferAsync: engine is not initialized");
    return FAILED;
  }
  const std::string remote = remote_engine.GetString();
  auto r = std::make_unique<AsyncRequest>();
  Status st = Prepare("TransferAsync", remote, op, descs, After(kAsyncAutoConnectMs), &r->link, &r->plan);
  if (st != SUCCESS) return st;
  // The slot is reserved before the post and released if the post fails:
  // checking first and inserting after the post would let concurrent callers
  // all pass the check and exceed the limit together.
  {
    std::lock_guard<std::mutex> l(req_mu_);
    if (requests_.size() + reserved_requests_ >= kMaxAsyncRequests) {
      ADXL_ERROR("TransferAsync to '%s': %zu requests not yet reported; query their status first", remote.c_str(),
                 requests_.size() + reserved_requests_);
      return RESOURCE_EXHAUSTED;
    }
    ++reserved_requests_;
  }
  st = Post(r->link, op, r->plan.iov.data(), r->plan.iov.size(), &r->batch);
  std::lock_guard<std::mutex> l(req_mu_);
  --reserved_requests_;
  if (st != SUCCESS) return st;
  r->op = op;
  r->user_data = user_data;
  const uint64_t id = next_req_++;
  requests_[id] = std::move(r);
  req = reinterpret_cast<TransferReq>(static_cast<uintptr_t>(id));
  return SUCCESS;
}

Status Engine::GetTransferStatus(const TransferReq &req, TransferStatus &status) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  status = TransferStatus::FAILED;
  if (!initialized_.load()) {
    ADXL_ERROR("GetTransferStatus: engine is not initialized");
    return FAILED;
  }
  if (req == nullptr) {
    ADXL_ERROR("GetTransferStatus: null request");
    return FAILED;
  }
  return PollRequest(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(req)), status);
}

Status Engine::PollRequest(uint64_t id, TransferStatus &status) {
  status = TransferStatus::FAILED;
  transport_->Progress();
  std::unique_ptr<AsyncRequest> done;
  {
    std::lock_guard<std::mutex> l(req_mu_);
    auto it = requests_.find(id);
    if (it == requests_.end()) {
      ADXL_ERROR("GetTransferStatus: unknown request %" PRIu64 " (never issued, or its final status was reported)", id);
      return PARAM_INVALID;
    }
    AsyncRequest &r = *it->second;
    if (r.link->disconnected()) {
      ADXL_ERROR("GetTransferStatus: request %" PRIu64 " to '%s' ended: the link was disconnected", id,
                 r.link->remote().c_str());
      requests_.erase(it);
      return NOT_CONNECTED;
    }
    if (r.batch->Test() == ADXL_PLUGIN_IN_PROGRESS) {
      status = TransferStatus::WAITING;
      return SUCCESS;
    }
    done = std::move(it->second);
    requests_.erase(it);
  }
  int rc = done->batch->Test();
  if (rc == ADXL_PLUGIN_OK) {
    status = TransferStatus::COMPLETED;
    (done->op == READ ? done->link->bytes_read : done->link->bytes_written).fetch_add(done->plan.bytes);
    done->link->ops.fetch_add(done->plan.iov.size());
  } else {
    status = TransferStatus::FAILED;
    done->link->Fail("transfer failed in the transport (status " + std::to_string(rc) + ")");
  }
  return SUCCESS;
}

// ---------------------------------------------------------------- notifies

Status Engine::SendNotify(const AscendString &remote_engine, const NotifyDesc &notify,
                                              int32_t timeout_ms) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!initialized_.load()) {
    ADXL_ERROR("SendNotify: engine is not initialized");
    return FAILED;
  }
  const std::string remote = remote_engine.GetString();
  if (timeout_ms <= 0) {
    ADXL_ERROR("SendNotify to '%s': timeout %d ms must be > 0", remote.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  if (notify.name.GetLength() > kMaxNotifyField || notify.notify_msg.GetLength() > kMaxNotifyField) {
    ADXL_ERROR("SendNotify to '%s': name (%zu bytes) and message (%zu bytes) may be at most %zu bytes each",
               remote.c_str(), notify.name.GetLength(), notify.notify_msg.GetLength(), kMaxNotifyField);
    return PARAM_INVALID;
  }
  std::shared_ptr<Link> link;
  Status st = AcquireLink("SendNotify", remote, After(timeout_ms), &link);
  if (st != SUCCESS) return st;
  uint32_t status = 0;
  wire::Notify body{std::string(notify.name.GetString(), notify.name.GetLength()),
                    std::string(notify.notify_msg.GetString(), notify.notify_msg.GetLength())};
  switch (link->conn->Request(body, After(timeout_ms), &status)) {
    case ControlConn::Outcome::kAcked:
      if (status != SUCCESS) ADXL_ERROR("SendNotify to '%s': receiver answered status %u", remote.c_str(), status);
      return status;
    case ControlConn::Outcome::kTimeout:
      ADXL_ERROR("SendNotify to '%s': no acknowledgement within %d ms", remote.c_str(), timeout_ms);
      return TIMEOUT;
    case ControlConn::Outcome::kClosed:
      break;
  }
  ADXL_ERROR("SendNotify to '%s': the control connection closed", remote.c_str());
  return NOTIFY_FAILED;
}

Status Engine::GetNotifies(std::vector<NotifyDesc> &notifies) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!initialized_.load()) {
    ADXL_ERROR("GetNotifies: engine is not initialized");
    return FAILED;
  }
  std::vector<NotifyDesc> got;
  {
    std::lock_guard<std::mutex> l(notify_mu_);
    got.swap(notifies_);
  }
  notifies.insert(notifies.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
  return SUCCESS;
}

Status Engine::GetLinkInfo(const AscendString &remote, ext::LinkInfo &info) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!initialized_.load()) return FAILED;
  std::shared_ptr<Link> link = FindLink(remote.GetString());
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

// ---------------------------------------------------------------- control thread

std::shared_ptr<Link> Engine::LinkOf(const std::shared_ptr<ControlConn> &conn) {
  std::lock_guard<std::mutex> l(links_mu_);
  auto it = link_by_conn_.find(conn.get());
  return it == link_by_conn_.end() ? nullptr : it->second.lock();
}

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
    // The answer to an accepted client.  Snapshot, subscription and the
    // queueing of the answer happen under one hold of reg_mu_, so that no
    // region change falls between the snapshot and the subscription, and
    // every push after it is queued behind the answer (core/engine.h,
    // "Handshake and region pushes").  The answer is written by the loop as
    // the client reads it: no socket I/O under reg_mu_, and a client that
    // does not read stalls nobody; it is closed once its answer is overdue.
    auto accept = [&](uint64_t seq, const std::string &from, std::string proof) {
      wire::HelloAck ack;
      ack.node_id = node_id_;
      ack.transport_address = transport_->address();
      ack.proof = std::move(proof);
      conn->set_peer_name(from);
      conn->set_hello_done();
      std::unique_lock<std::shared_mutex> l(reg_mu_);
      for (const auto &r : registry_->All()) ack.regions.push_back(ToWire(*r));
      // The client reads this answer synchronously; a large region table may
      // need longer than a control-thread answer usually gets.
      if (!conn->StartQueued(ack, seq, Clock::now() + kHandshakeAnswerDeadline)) {
        l.unlock();
        conn->Close();
        return;
      }
      subscribers_.insert(conn);
      l.unlock();
      ADXL_INFO("'%s' connected (%zu regions advertised%s)", from.c_str(), ack.regions.size(),
                ack.proof.empty() ? "" : ", authenticated");
    };
    // A refusal by access control: status FAILED and nothing else (no node,
    // no transport address, no regions).
    auto refuse = [&](uint64_t seq) {
      wire::HelloAck ack;
      ack.status = FAILED;
      conn->Send(ack, seq, deadline);
      conn->Close();
    };
    const std::string &token = options_.auth_token;
    ControlConn::PendingAuth &pending = conn->pending_auth;
    if (pending.active) {
      auto *resp = std::get_if<wire::AuthResponse>(&msg.body);
      if (resp == nullptr) {
        ADXL_ERROR("control connection from %s ('%s'): %s instead of the authentication response; closing it",
                   conn->desc().c_str(), pending.from.c_str(), wire::TypeName(wire::TypeOf(msg.body)));
        conn->Close();
        return;
      }
      const std::string expected = auth::Proof(token, auth::Role::kClient, pending.from, pending.to,
                                               pending.client_nonce, pending.server_nonce);
      if (!auth::ProofMatches(expected, resp->proof)) {
        ADXL_ERROR("'%s' (%s) refused: authentication failed (its adxl.AuthToken differs from this engine's)",
                   pending.from.c_str(), conn->desc().c_str());
        refuse(msg.seq);
        return;
      }
      const std::string proof = auth::Proof(token, auth::Role::kServer, pending.from, pending.to,
                                            pending.client_nonce, pending.server_nonce);
      const std::string from = pending.from;
      pending = ControlConn::PendingAuth{};
      accept(msg.seq, from, proof);
      return;
    }
    auto *hello = std::get_if<wire::Hello>(&msg.body);
    if (hello == nullptr) {
      ADXL_ERROR("control connection from %s: first message is %s, not Hello; closing it", conn->desc().c_str(),
                 wire::TypeName(wire::TypeOf(msg.body)));
      conn->Close();
      return;
    }
    const bool client_auth = (hello->flags & wire::kHelloAuth) != 0;
    if (!token.empty() && !client_auth) {
      ADXL_ERROR("'%s' (%s) refused: this engine requires adxl.AuthToken and the peer has none",
                 hello->from_engine.c_str(), conn->desc().c_str());
      refuse(msg.seq);
      return;
    }
    if (token.empty() && client_auth) {
      ADXL_ERROR("'%s' (%s) refused: it authenticates with adxl.AuthToken and this engine has none",
                 hello->from_engine.c_str(), conn->desc().c_str());
      refuse(msg.seq);
      return;
    }
    if (hello->to_engine != name_.text) {
      ADXL_WARN("'%s' tried to connect to '%s', but this engine is '%s'; refused", hello->from_engine.c_str(),
                hello->to_engine.c_str(), name_.text.c_str());
      wire::HelloAck ack;
      ack.status = PARAM_INVALID;
      if (token.empty()) {  // with access control, nothing about this engine before authentication
        ack.node_id = node_id_;
        ack.transport_address = transport_->address();
      }
      conn->Send(ack, msg.seq, deadline);
      conn->Close();
      return;
    }
    if (!token.empty()) {
      std::string server_nonce;
      if (hello->nonce.size() != auth::kNonceSize || !auth::MakeNonce(&server_nonce)) {
        ADXL_ERROR("'%s' (%s) refused: %s", hello->from_engine.c_str(), conn->desc().c_str(),
                   hello->nonce.size() != auth::kNonceSize ? "malformed authentication nonce"
                                                           : "no random bytes for the authentication nonce");
        refuse(msg.seq);
        return;
      }
      pending.active = true;
      pending.from = hello->from_engine;
      pending.to = hello->to_engine;
      pending.client_nonce = hello->nonce;
      pending.server_nonce = server_nonce;
      if (!conn->Send(wire::AuthChallenge{server_nonce}, msg.seq, deadline)) conn->Close();
      return;
    }
    accept(msg.seq, hello->from_engine, std::string());
    return;
  }
  if (auto *n = std::get_if<wire::Notify>(&msg.body)) {
    Status st = SUCCESS;
    if (n->name.size() > kMaxNotifyField || n->msg.size() > kMaxNotifyField) {
      st = PARAM_INVALID;
    } else {
      std::lock_guard<std::mutex> l(notify_mu_);
      if (notifies_.size() >= kMaxPendingNotifies) {
        st = RESOURCE_EXHAUSTED;
      } else {
        notifies_.push_back(NotifyDesc{AscendString(n->name.data(), n->name.size()),
                                       AscendString(n->msg.data(), n->msg.size())});
      }
    }
    if (st != SUCCESS) ADXL_WARN("notify from '%s' refused (status %u)", conn->peer_name().c_str(), st);
    conn->Send(wire::Ack{st}, msg.seq, deadline);
  } else if (std::holds_alternative<wire::Ping>(msg.body)) {
    conn->Send(wire::Pong{}, msg.seq, deadline);
  } else if (std::holds_alternative<wire::Fence>(msg.body)) {
    // Drain what the peer's transport already put in flight towards us.
    for (int i = 0, idle = 0; i < 100000 && idle < 8; ++i) idle = transport_->Progress() != 0 ? 0 : idle + 1;
    conn->Send(wire::Ack{SUCCESS}, msg.seq, deadline);
  } else if (std::holds_alternative<wire::Bye>(msg.body)) {
    ADXL_INFO("'%s' disconnected", conn->peer_name().c_str());
    conn->Close();
  } else {
    ADXL_ERROR("control connection from '%s': unexpected %s; closing it", conn->peer_name().c_str(),
               wire::TypeName(wire::TypeOf(msg.body)));
    conn->Close();
  }
}

void Engine::HandleClient(const std::shared_ptr<ControlConn> &conn, wire::Message &msg) {
  const Clock::time_point deadline = Clock::now() + kControlSendDeadline;
  std::shared_ptr<Link> link = LinkOf(conn);
  if (!link) return;  // disconnected meanwhile
  if (auto *add = std::get_if<wire::RegionAdd>(&msg.body)) {
    Status st = AddRemoteRegion(link, add->region);
    conn->Send(wire::Ack{st}, msg.seq, deadline);
  } else if (auto *del = std::get_if<wire::RegionDel>(&msg.body)) {
    std::shared_ptr<RemoteRegion> region;
    {
      std::unique_lock<std::shared_mutex> l(link->regions_mu);
      auto it = link->region_addr_by_id.find(del->id);
      if (it != link->region_addr_by_id.end()) {
        std::vector<Link::Table::Piece> p;
        if (link->regions.Resolve(it->second, 1, &p)) region = p[0].entry->value;
        link->regions.Erase(it->second);
        link->region_addr_by_id.erase(it);
      }
    }
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
  } else if (std::holds_alternative<wire::Pong>(msg.body)) {
    // last_rx_ms is all a Pong is for
  } else if (std::holds_alternative<wire::Bye>(msg.body)) {
    // Fail() cancels the endpoint, waiting for copies in progress: once the
    // peer reads our answer, nothing of ours touches its memory any more.
    link->Fail("the peer finalized");
    conn->Send(wire::Ack{SUCCESS}, msg.seq, deadline);
    conn->Close();
  } else {
    ADXL_ERROR("control connection to '%s': unexpected %s; closing it", link->remote().c_str(),
               wire::TypeName(wire::TypeOf(msg.body)));
    link->Fail("protocol violation by the peer");
    conn->Close();
  }
}

void Engine::OnClosed(const std::shared_ptr<ControlConn> &conn) {
  if (conn->role() == ControlConn::Role::kServer) {
    std::unique_lock<std::shared_mutex> l(reg_mu_);
    subscribers_.erase(conn);
    return;
  }
  if (std::shared_ptr<Link> link = LinkOf(conn)) {
    if (!link->disconnected()) link->Fail("the peer closed the control connection (process gone?)");
    if (options_.auto_connect) DropLink(link);
  }
}

void Engine::OnTick() {
  const int64_t now = ControlLoop::NowMs();
  const int64_t dead_after = 3 * static_cast<int64_t>(options_.heartbeat_ms);
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(options_.heartbeat_ms / 2 + 1);
  std::vector<std::shared_ptr<Link>> links;
  {
    std::lock_guard<std::mutex> l(links_mu_);
    for (const auto &kv : links_) {
      if (kv.second->state() == LinkState::kConnected) links.push_back(kv.second);
    }
  }
  for (const auto &link : links) {
    const int64_t silent = now - link->conn->last_rx_ms.load();
    if (silent > dead_after) {
      link->Fail("no heartbeat answer for " + std::to_string(silent) + " ms");
      link->conn->Close();
      if (options_.auto_connect) DropLink(link);
    } else {
      link->conn->Send(wire::Ping{}, 0, deadline);
    }
  }
  std::vector<std::shared_ptr<ControlConn>> clients;
  {
    std::shared_lock<std::shared_mutex> l(reg_mu_);
    clients.assign(subscribers_.begin(), subscribers_.end());
  }
  for (const auto &c : clients) {
    const int64_t silent = now - c->last_rx_ms.load();
    if (silent > dead_after) {
      ADXL_WARN("client '%s' silent for %" PRId64 " ms; forgetting its link", c->peer_name().c_str(), silent);
      c->Close();
    }
  }
}

}  // namespace adxl
