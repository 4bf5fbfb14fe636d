#include "core/registrar.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>

#include "common/log.h"
#include "memory/acl_host.h"
#include "memory/device_memory.h"
#include "memory/host_memory.h"

namespace adxl {

// Every registration is one region of the handshake answer (EncodeAnswer):
// the option's bound is what that answer carries, or inbound Connects fail.
static_assert(kMaxRegistrationsLimit == wire::kMaxRegions, "adxl.MaxRegistrations must fit a HelloAck");

Registrar::Registrar(std::shared_ptr<Transport> transport, const EngineOptions &options)
    : transport_(std::move(transport)),
      fabric_mem_(options.fabric_mem),
      // The heartbeat period when one was given (at least 1 s), else 1 s: the
      // 10 s cluster default period is no reason for DeregisterMem to wait longer.
      deregister_wait_(options.heartbeat_ms_given ? std::max<uint32_t>(options.heartbeat_ms, 1000) : 1000),
      registry_(std::make_unique<Registry>(
          Registry::Limits{options.max_registrations, options.max_device_bytes, options.max_host_bytes})) {}

wire::Region Registrar::ToWire(const LocalRegion &r) {
  wire::Region w;
  w.id = r.id;
  w.addr = r.addr;
  w.len = r.len;
  w.mem_type = static_cast<uint32_t>(r.type);
  w.rkey = r.mem ? r.mem->packed_key() : std::string();
  return w;
}

Status Registrar::Register(const MemDesc &mem, MemType type, MemHandle *handle) {
  if (mem.addr == 0 || mem.len == 0 || mem.addr + mem.len < mem.addr) {
    ADXL_ERROR("RegisterMem: invalid range {addr 0x%" PRIxPTR ", len %zu}: %s", mem.addr, mem.len,
               mem.addr == 0 ? "null address" : mem.len == 0 ? "zero length" : "address + length overflows");
    return PARAM_INVALID;
  }
  if (type != MEM_HOST && type != MEM_DEVICE) {
    ADXL_ERROR("RegisterMem: memory type %d is neither MEM_DEVICE nor MEM_HOST", static_cast<int>(type));
    return PARAM_INVALID;
  }
  MutexLock op(&op_mu_);
  std::string why;
  {
    WriterLock l(&mu_);
    std::shared_ptr<LocalRegion> existing;
    Status st = registry_->Check(mem.addr, mem.len, type, &existing, &why);
    if (st != SUCCESS) {
      ADXL_ERROR("RegisterMem {addr 0x%" PRIxPTR ", len %zu}: %s", mem.addr, mem.len, why.c_str());
      return st;
    }
    if (existing && existing->local_only != mem.local_only) {
      ADXL_ERROR("RegisterMem {addr 0x%" PRIxPTR ", len %zu}: already registered with local_only %s; a range is "
                 "either advertised to peers or not", mem.addr, mem.len, existing->local_only ? "true" : "false");
      return PARAM_INVALID;
    }
    if (existing) {
      ++existing->refs;
      *handle = reinterpret_cast<MemHandle>(static_cast<uintptr_t>(existing->id));
      return SUCCESS;
    }
  }
  std::shared_ptr<LocalRegion> region;
  Status st = RegisterWithTransport(mem, type, &region);
  if (st != SUCCESS) return st;
  std::vector<std::shared_ptr<ControlConn>> peers;
  {
    WriterLock l(&mu_);
    registry_->Insert(region);
    if (region->local_only) {
      // Never advertised: no peer learns of it (Snapshot skips it too).
      *handle = reinterpret_cast<MemHandle>(static_cast<uintptr_t>(region->id));
      return SUCCESS;
    }
    // Encoded once here (the id is known now), appended to every HelloAck.
    if (!wire::EncodeRegion(ToWire(*region), &region->advert)) {
      registry_->Erase(region->id);
      ADXL_ERROR("RegisterMem {addr 0x%" PRIxPTR ", len %zu}: the transport's key of %zu bytes is over the wire "
                 "limit (%zu)", mem.addr, mem.len, region->mem ? region->mem->packed_key().size() : size_t{0},
                 wire::kMaxString);
      return FAILED;
    }
    if (advert_bytes_ + region->advert.size() > kMaxAdvertBytes) {
      registry_->Erase(region->id);
      ADXL_ERROR("RegisterMem {addr 0x%" PRIxPTR ", len %zu}: the regions advertised to peers would take %zu bytes "
                 "of the handshake answer, over its %zu (transport keys of %zu bytes): peers could no longer "
                 "connect; register fewer, larger ranges",
                 mem.addr, mem.len, advert_bytes_ + region->advert.size(), kMaxAdvertBytes,
                 region->mem ? region->mem->packed_key().size() : size_t{0});
      return RESOURCE_EXHAUSTED;
    }
    advert_bytes_ += region->advert.size();
    ++version_;
    peers.assign(subscribers_.begin(), subscribers_.end());
  }
  // Queued, not waited for (see the header).
  const Clock::time_point deadline = Clock::now() + deregister_wait_;
  const wire::Body add = wire::RegionAdd{ToWire(*region)};  // copied into each frame, built once
  for (const auto &peer : peers) peer->PostToLoop(add, deadline);
  *handle = reinterpret_cast<MemHandle>(static_cast<uintptr_t>(region->id));
  return SUCCESS;
}

Status Registrar::RegisterWithTransport(const MemDesc &mem, MemType type, std::shared_ptr<LocalRegion> *out) {
  std::string why;
  // Memory of the host ACL emulation (memory/acl_host.h) is MEM_DEVICE to the
  // engine and host memory to the transport: it moves on the host lanes.
  bool acl_host = false;
  if (type == MEM_DEVICE) {
    switch (QueryAclHostRange(mem.addr, mem.len, &why)) {
      case AclHostRange::kInside:
        acl_host = true;
        break;
      case AclHostRange::kNotInside:
        // CUDA memory in a process that also loaded the emulation still
        // takes the CUDA path below.
        if (!transport_->device_memory() || !IsDeviceAddress(mem.addr)) {
          ADXL_ERROR("RegisterMem {addr 0x%" PRIxPTR ", len %zu} as MEM_DEVICE: %s", mem.addr, mem.len, why.c_str());
          return PARAM_INVALID;
        }
        break;
      case AclHostRange::kNoEmulation:
        break;
    }
  }
  if (type == MEM_DEVICE && !acl_host && !transport_->device_memory()) {
    ADXL_ERROR("RegisterMem {addr 0x%" PRIxPTR ", len %zu}: device memory is not supported: the %s transport "
               "cannot move it (it needs a UCX with CUDA or ROCm support whose RMA protocols handle device memory, "
               "UCX_PROTO_ENABLE=y; with ADXL_LOG_LEVEL=info the transport says at Initialize which is missing). "
               "Programs written for the vendor's stack: link the host ACL emulation (lib/adxl-acl-host) and "
               "allocate with aclrtMalloc",
               mem.addr, mem.len, transport_->name().c_str());
    return UNSUPPORTED;
  }
  if (type == MEM_DEVICE && !acl_host) {
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
  if (fabric_mem_ && type == MEM_HOST && FindHostBlock(reinterpret_cast<void *>(mem.addr), &block) &&
      block.fd >= 0 && mem.addr + mem.len <= reinterpret_cast<uintptr_t>(block.base) + block.size) {
    share_path = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(block.fd);
    share_offset = mem.addr - reinterpret_cast<uintptr_t>(block.base);
  }
  int rc = TransportMem::Register(transport_, reinterpret_cast<void *>(mem.addr), mem.len,
                                  type == MEM_DEVICE && !acl_host ? ADXL_PLUGIN_MEM_DEVICE : ADXL_PLUGIN_MEM_HOST, share_path,
                                  share_offset, &region->mem);
  if (rc != ADXL_PLUGIN_OK) {
    ADXL_ERROR("RegisterMem {addr 0x%" PRIxPTR ", len %zu}: transport refused the registration (status %d)",
               mem.addr, mem.len, rc);
    return rc == ADXL_PLUGIN_ERR_UNSUPPORTED ? UNSUPPORTED : FAILED;
  }
  region->addr = mem.addr;
  region->len = mem.len;
  region->type = type;
  region->local_only = mem.local_only;
  *out = std::move(region);
  return SUCCESS;
}

Status Registrar::Deregister(MemHandle handle) {
  if (handle == nullptr) {
    ADXL_ERROR("DeregisterMem: null handle");
    return PARAM_INVALID;
  }
  const uint64_t id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  Withdrawal w;
  w.id = id;
  bool found = false;
  {
    MutexLock op(&op_mu_);
    {
      WriterLock l(&mu_);
      std::shared_ptr<LocalRegion> region = registry_->Find(id);
      if (region) {
        found = true;
        if (--region->refs > 0) return SUCCESS;
        registry_->Erase(id);
        if (region->local_only) return SUCCESS;  // no peer knows it
        advert_bytes_ -= region->advert.size();
        ++version_;
        w.peers.assign(subscribers_.begin(), subscribers_.end());
      }
    }
    if (found) {
      {
        MutexLock wl(&withdrawing_mu_);
        withdrawing_.insert(id);
      }
      // Sent under op_mu_, so that each peer gets the changes in the order
      // the registry saw them; waited for outside it (AwaitWithdrawal), so
      // that other registrations and deregistrations do not queue behind a
      // peer that is slow to acknowledge.
      StartWithdrawal(&w);
    }
  }
  if (!found) {
    // A second deregistration of a handle whose withdrawal is still waited
    // for returns with the first: once no peer uses the region.
    MutexLock wl(&withdrawing_mu_);
    if (withdrawing_.count(id) == 0) {
      ADXL_INFO("DeregisterMem: handle %" PRIu64 " is not registered (already deregistered?); nothing to do", id);
      return SUCCESS;
    }
    withdrawn_cv_.Wait(&withdrawing_mu_, [&]() ADXL_REQUIRES(withdrawing_mu_) { return withdrawing_.count(id) == 0; });
    return stopped_ids_.count(id) != 0 ? FAILED : SUCCESS;  // as the first one
  }
  const bool confirmed = AwaitWithdrawal(w);
  {
    MutexLock wl(&withdrawing_mu_);
    if (!confirmed) stopped_ids_.insert(id);  // a second call of the handle waiting says so too
    withdrawing_.erase(id);
  }
  withdrawn_cv_.NotifyAll();
  // The registration itself goes when the last transfer using it lets go.
  if (!confirmed) {
    ADXL_WARN("DeregisterMem of region %" PRIu64 ": Finalize ended the wait for peers to acknowledge its withdrawal; "
              "Finalize tells them to stop, and the memory is safe to reuse once Finalize returns", id);
    return FAILED;
  }
  return SUCCESS;
}

void Registrar::StopWaits() {
  stopping_.store(true);
  for (const auto &c : Subscribers()) c->WakeWaiters();
}

void Registrar::StartWithdrawal(Withdrawal *w) {
  w->deadline = Clock::now() + deregister_wait_;
  w->seqs.resize(w->peers.size());
  for (size_t i = 0; i < w->peers.size(); ++i) {
    w->seqs[i] = w->peers[i]->StartRequest(wire::RegionDel{w->id}, w->deadline);
  }
}

bool Registrar::AwaitWithdrawal(const Withdrawal &w) {
  const uint64_t id = w.id;
  const Clock::time_point deadline = w.deadline;
  const auto &peers = w.peers;
  const auto &seqs = w.seqs;
  bool stopped = false;
  for (size_t i = 0; i < peers.size(); ++i) {
    if (seqs[i] == 0) continue;  // closed: it uses nothing of ours any more
    uint32_t status = 0;
    const ControlConn::Outcome out = peers[i]->AwaitAck(seqs[i], deadline, &status, &stopping_);
    if (out == ControlConn::Outcome::kStopped) {
      // Finalize (StopWaits): the connection stays open; the other peers'
      // waits end at once too (each is still awaited, which forgets it).
      stopped = true;
    } else if (out == ControlConn::Outcome::kTimeout) {
      // A peer that cannot confirm must not keep using our regions.
      ADXL_WARN("peer %s did not acknowledge the withdrawal of region %" PRIu64 " within %lld ms; closing its link",
                peers[i]->peer_name().c_str(), id, static_cast<long long>(deregister_wait_.count()));
      peers[i]->Close();
    } else if (out == ControlConn::Outcome::kAcked && status != SUCCESS) {
      ADXL_WARN("peer %s could not apply the withdrawal of region %" PRIu64 " (status %u); closing its link",
                peers[i]->peer_name().c_str(), id, status);
      peers[i]->Close();
    }
  }
  return !stopped;
}

void Registrar::Snapshot(TableSnapshot *snap) const {
  snap->version = version_;
  snap->regions.clear();
  for (auto &r : registry_->All()) {
    if (!r->local_only) snap->regions.push_back(std::move(r));
  }
  snap->metadata.clear();
  for (const auto &kv : metadata_) snap->metadata.push_back(kv.second);
}

bool Registrar::EncodeTable(ControlConn &conn, const TableSnapshot &snap, uint64_t seq,
                            std::vector<ControlConn::Frame> *frames) {
  frames->assign(snap.regions.size() + snap.metadata.size() + 1, ControlConn::Frame{});
  size_t i = 0;
  for (const auto &r : snap.regions) {
    if (!conn.EncodePost(wire::RegionAdd{ToWire(*r)}, &(*frames)[i++])) return false;
  }
  for (const auto &m : snap.metadata) {
    if (!conn.EncodePost(wire::MetadataUpdate{m}, &(*frames)[i++])) return false;
  }
  return conn.Encode(wire::Ack{SUCCESS}, seq, &(*frames)[i]);
}

void Registrar::SendTable(const std::shared_ptr<ControlConn> &conn, uint64_t seq, Clock::time_point deadline) {
  // Encoded outside mu_ and queued under it if nothing changed meanwhile
  // (see kSnapshotAttempts); the last attempt holds mu_ throughout.
  std::vector<ControlConn::Frame> frames;
  for (int attempt = 1; attempt < kSnapshotAttempts; ++attempt) {
    TableSnapshot snap;
    {
      ReaderLock l(&mu_);
      Snapshot(&snap);
    }
    if (!EncodeTable(*conn, snap, seq, &frames)) return;
    ReaderLock l(&mu_);
    if (snap.version != version_) continue;
    for (auto &f : frames) {
      if (!conn->SendEncoded(std::move(f), deadline)) return;
    }
    return;
  }
  ReaderLock l(&mu_);
  TableSnapshot snap;
  Snapshot(&snap);
  if (!EncodeTable(*conn, snap, seq, &frames)) return;
  for (auto &f : frames) {
    if (!conn->SendEncoded(std::move(f), deadline)) return;
  }
}

Status Registrar::Publish(const std::string &name, const std::string &blob) {
  if (name.empty() || name.size() > wire::kMaxMetadataName || blob.size() > wire::kMaxMetadataBlob) {
    ADXL_ERROR("PublishMetadata: name of %zu bytes (1..%zu) or blob of %zu bytes (at most %zu)", name.size(),
               wire::kMaxMetadataName, blob.size(), wire::kMaxMetadataBlob);
    return PARAM_INVALID;
  }
  // Not under op_mu_, which a registration holds across the transport's
  // registration: publishing never waits.  Two publishes may reach a peer in either order;
  // the peer keeps the higher version (Link::SetMetadata).
  wire::Metadata entry;
  std::vector<std::shared_ptr<ControlConn>> peers;
  {
    WriterLock l(&mu_);
    auto it = metadata_.find(name);
    const size_t old_bytes = it == metadata_.end() ? 0 : it->second.name.size() + it->second.blob.size();
    const size_t new_total = metadata_bytes_ - old_bytes + name.size() + blob.size();
    if ((it == metadata_.end() && metadata_.size() >= wire::kMaxMetadataEntries) || new_total > kMaxMetadataBytes) {
      ADXL_ERROR("PublishMetadata '%s': more than %zu names or %zu bytes published", name.c_str(),
                 wire::kMaxMetadataEntries, kMaxMetadataBytes);
      return RESOURCE_EXHAUSTED;
    }
    wire::Metadata &e = metadata_[name];
    e.name = name;
    e.blob = blob;
    ++e.version;
    metadata_bytes_ = new_total;
    ++version_;
    entry = e;
    peers.assign(subscribers_.begin(), subscribers_.end());
  }
  const Clock::time_point deadline = Clock::now() + deregister_wait_;
  for (const auto &peer : peers) peer->Post(wire::MetadataUpdate{entry}, deadline);
  return SUCCESS;
}

Status Registrar::AwaitDelivered(const std::string &name) {
  wire::Metadata entry;
  std::vector<std::shared_ptr<ControlConn>> peers;
  {
    ReaderLock l(&mu_);
    auto it = metadata_.find(name);
    if (it == metadata_.end()) {
      ADXL_ERROR("AwaitMetadataDelivered: '%s' was never published here", name.c_str());
      return PARAM_INVALID;
    }
    entry = it->second;
    peers.assign(subscribers_.begin(), subscribers_.end());
  }
  const Clock::time_point deadline = Clock::now() + deregister_wait_;
  std::vector<uint64_t> seqs(peers.size());
  for (size_t i = 0; i < peers.size(); ++i) seqs[i] = peers[i]->StartRequest(wire::MetadataUpdate{entry}, deadline);
  bool stopped = false;
  for (size_t i = 0; i < peers.size(); ++i) {
    if (seqs[i] == 0) continue;  // closed: it reads nothing of ours any more
    uint32_t status = 0;
    const ControlConn::Outcome out = peers[i]->AwaitAck(seqs[i], deadline, &status, &stopping_);
    if (out == ControlConn::Outcome::kStopped) {
      stopped = true;  // Finalize (StopWaits): the connection stays open
    } else if (out == ControlConn::Outcome::kTimeout || (out == ControlConn::Outcome::kAcked && status != SUCCESS)) {
      ADXL_WARN("peer %s did not confirm version %" PRIu64 " of '%s' within %lld ms; closing its link",
                peers[i]->peer_name().c_str(), entry.version, name.c_str(),
                static_cast<long long>(deregister_wait_.count()));
      peers[i]->Close();
    }
  }
  if (stopped) {
    ADXL_WARN("AwaitMetadataDelivered of '%s': Finalize ended the wait for peers to confirm it", name.c_str());
    return FAILED;
  }
  return SUCCESS;
}

bool Registrar::EncodeAnswer(ControlConn &conn, const wire::HelloAck &answer, const TableSnapshot &snap,
                             uint64_t seq, ControlConn::Frame *frame) {
  // Built in place in the Body (a HelloAck converted to one would be a copy)
  // from the regions' adverts, encoded when they were registered.
  wire::Body body{answer};
  auto &ack = std::get<wire::HelloAck>(body);
  ack.encoded_regions.reserve(snap.regions.size());
  for (const auto &r : snap.regions) ack.encoded_regions.push_back(&r->advert);
  ack.metadata = snap.metadata;
  return conn.Encode(body, seq, frame);
}

bool Registrar::Subscribe(const std::shared_ptr<ControlConn> &conn, wire::HelloAck answer, uint64_t seq,
                          Clock::time_point deadline, size_t *regions) {
  // Encoded outside mu_ and queued (with the subscription) under it if
  // nothing changed meanwhile (see kSnapshotAttempts); the last attempt
  // holds mu_ throughout.
  ControlConn::Frame frame;
  for (int attempt = 1; attempt < kSnapshotAttempts; ++attempt) {
    TableSnapshot snap;
    {
      ReaderLock l(&mu_);
      Snapshot(&snap);
    }
    if (!EncodeAnswer(*conn, answer, snap, seq, &frame)) return false;
    WriterLock l(&mu_);
    if (snap.version != version_) continue;
    conn->StartQueuedEncoded(std::move(frame), deadline);
    subscribers_.insert(conn);
    *regions = snap.regions.size();
    return true;
  }
  WriterLock l(&mu_);
  TableSnapshot snap;
  Snapshot(&snap);
  if (!EncodeAnswer(*conn, answer, snap, seq, &frame)) return false;
  conn->StartQueuedEncoded(std::move(frame), deadline);
  subscribers_.insert(conn);
  *regions = snap.regions.size();
  return true;
}

void Registrar::Unsubscribe(const std::shared_ptr<ControlConn> &conn) {
  WriterLock l(&mu_);
  subscribers_.erase(conn);
}

std::vector<std::shared_ptr<ControlConn>> Registrar::Subscribers() const {
  ReaderLock l(&mu_);
  return {subscribers_.begin(), subscribers_.end()};
}

}  // namespace adxl
