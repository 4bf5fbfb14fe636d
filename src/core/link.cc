#include "core/link.h"

#include <algorithm>
#include <cinttypes>

#include "common/log.h"

namespace adxl {

Status Link::AddRegion(const wire::Region &r) {
  if (r.len == 0 || r.addr == 0 || r.addr + r.len < r.addr || r.mem_type > MEM_HOST) {
    ADXL_ERROR("peer '%s' advertised an invalid region {addr 0x%" PRIx64 ", len %" PRIu64 ", type %u}",
               remote_.c_str(), r.addr, r.len, r.mem_type);
    return PARAM_INVALID;
  }
  // A peer never has more regions than a handshake carries (its own
  // adxl.MaxRegistrations is capped there): more is a broken or hostile
  // peer, refused before its key costs an unpack and our memory.
  if (!HasRoomForRegion(r.id)) return RESOURCE_EXHAUSTED;
  auto region = std::make_shared<RemoteRegion>();
  region->id = r.id;
  region->mem_type = r.mem_type;
  int rc = RemoteKey::Unpack(endpoint, r.rkey, &region->key);
  if (rc != ADXL_PLUGIN_OK) {
    ADXL_ERROR("peer '%s': cannot unpack the key of region %" PRIu64 " (status %d)", remote_.c_str(), r.id, rc);
    return FAILED;
  }
  WriterLock l(&regions_mu_);
  if (region_addr_by_id_.count(r.id) != 0) return SUCCESS;  // seen in the handshake already
  if (region_addr_by_id_.size() >= wire::kMaxRegions) return RegionsFull(r.id);  // raced past the check above
  if (regions_.Overlaps(r.addr, r.len)) {
    ADXL_ERROR("peer '%s' advertised region %" PRIu64 " overlapping another of its regions", remote_.c_str(), r.id);
    return PARAM_INVALID;
  }
  regions_.Insert(r.addr, r.len, region);
  region_addr_by_id_[r.id] = r.addr;
  return SUCCESS;
}

std::shared_ptr<RemoteRegion> Link::WithdrawRegion(uint64_t id) {
  std::shared_ptr<RemoteRegion> region;
  WriterLock l(&regions_mu_);
  auto it = region_addr_by_id_.find(id);
  if (it == region_addr_by_id_.end()) return nullptr;
  std::vector<Table::Piece> p;
  if (regions_.Resolve(it->second, 1, &p)) region = p[0].entry->value;
  regions_.Erase(it->second);
  region_addr_by_id_.erase(it);
  return region;
}

std::vector<ext::LinkRegion> Link::Regions() const {
  std::vector<ext::LinkRegion> out;
  ReaderLock l(&regions_mu_);
  out.reserve(regions_.size());
  regions_.ForEach([&out](const Table::Entry &e) {
    ext::LinkRegion r;
    r.addr = e.addr;
    r.len = e.len;
    r.mem_type = static_cast<MemType>(e.value->mem_type);
    r.path = e.value->key ? e.value->key->Describe() : "unreachable";
    out.push_back(std::move(r));
  });
  return out;
}

bool Link::CoversRemote(uint64_t addr, uint64_t len) const {
  if (addr + len < addr) return false;
  std::vector<Table::Piece> p;
  ReaderLock l(&regions_mu_);
  return regions_.Resolve(addr, len, &p);
}

bool Link::RefreshRegions(Clock::time_point deadline) {
  uint32_t status = 0;
  const bool ok = conn->Request(wire::TableRequest{}, deadline, &status) == ControlConn::Outcome::kAcked &&
                  status == SUCCESS;
  if (!ok) ADXL_WARN("link to '%s': the peer did not send its region table in time", remote_.c_str());
  return ok;
}

bool Link::RefreshOnMiss(const std::vector<TransferOpDesc> &descs, Clock::time_point deadline) {
  return CoversRemote(descs) || RefreshRegions(std::min(deadline, Clock::now() + kRefreshOnMissWait));
}

bool Link::CoversRemote(const std::vector<TransferOpDesc> &descs) const {
  std::vector<Table::Piece> p;
  ReaderLock l(&regions_mu_);
  for (const TransferOpDesc &d : descs) {
    p.clear();
    if (d.remote_addr + d.len < d.remote_addr || !regions_.Resolve(d.remote_addr, d.len, &p)) return false;
  }
  return true;
}

size_t Link::region_count() const {
  ReaderLock l(&regions_mu_);
  return region_addr_by_id_.size();
}

Status Link::Post(TransferOp op, const adxl_plugin_iov_t *iov, size_t count, std::unique_ptr<Batch> *batch,
                  Clock::time_point deadline) {
  int rc = endpoint->Post(op == WRITE ? ADXL_PLUGIN_PUT : ADXL_PLUGIN_GET, iov, count, deadline, batch);
  if (rc == ADXL_PLUGIN_OK) return SUCCESS;
  ADXL_ERROR("%s to '%s': transport refused the batch (status %d)", op == READ ? "READ" : "WRITE", remote_.c_str(),
             rc);
  if (rc == ADXL_PLUGIN_ERR_IO || rc == ADXL_PLUGIN_ERR_CANCELED) Fail("transport endpoint failed");
  return rc == ADXL_PLUGIN_ERR_NO_RESOURCE ? RESOURCE_EXHAUSTED : FAILED;
}

void Link::FenceAfterTimeout() {
  // 1. Nothing more leaves this side: the endpoint is force-closed.
  Fail("a transfer timed out");
  // 2. What already left is drained by the target before we return (it
  //    drains its transport, Transport::Drain, then acknowledges).
  uint32_t status = 0;
  if (conn->Request(wire::Fence{}, Clock::now() + kFenceWait, &status) != ControlConn::Outcome::kAcked) {
    ADXL_WARN("link to '%s': the target did not confirm the fence (dead or stopped)", remote_.c_str());
  } else if (status != SUCCESS) {
    ADXL_WARN("link to '%s': the target confirmed the fence with requests of this side still running there",
              remote_.c_str());
  }
}

bool Link::HasRoomForRegion(uint64_t id) const {
  ReaderLock l(&regions_mu_);
  if (region_addr_by_id_.count(id) != 0 || region_addr_by_id_.size() < wire::kMaxRegions) return true;
  RegionsFull(id);
  return false;
}

Status Link::RegionsFull(uint64_t id) const {
  ADXL_ERROR("peer '%s' advertised region %" PRIu64 " beyond the %zu regions an engine may have; refused",
             remote_.c_str(), id, wire::kMaxRegions);
  return RESOURCE_EXHAUSTED;
}

Status Link::SetMetadata(wire::Metadata entry) {
  WriterLock l(&regions_mu_);
  auto it = metadata_.find(entry.name);
  if (it == metadata_.end()) {
    // A publisher keeps at most kMaxMetadataEntries names (its handshake
    // carries no more); a peer pushing more would grow this table, of up to
    // 1 MiB per entry, without bound.
    if (metadata_.size() >= wire::kMaxMetadataEntries) {
      ADXL_ERROR("peer '%s' published metadata '%s' beyond the %zu entries an engine may publish; refused",
                 remote_.c_str(), entry.name.c_str(), wire::kMaxMetadataEntries);
      return RESOURCE_EXHAUSTED;
    }
    it = metadata_.emplace(entry.name, wire::Metadata{}).first;
  }
  if (entry.version > it->second.version) it->second = std::move(entry);
  return SUCCESS;
}

void Link::GetMetadata(const std::string &name, std::string *blob, uint64_t *version) const {
  ReaderLock l(&regions_mu_);
  auto it = metadata_.find(name);
  *version = it == metadata_.end() ? 0 : it->second.version;
  *blob = it == metadata_.end() ? std::string() : it->second.blob;
}

bool Link::SetConnected() {
  MutexLock l(&state_mu_);
  LinkState expected = LinkState::kConnecting;
  const bool connected = state_.compare_exchange_strong(expected, LinkState::kConnected);
  state_cv_.NotifyAll();
  return connected;
}

void Link::Fail(const std::string &why) {
  {
    MutexLock l(&state_mu_);
    LinkState prev = state_.exchange(LinkState::kFailed);
    state_cv_.NotifyAll();
    if (prev == LinkState::kConnected) ADXL_WARN("link to %s failed: %s", remote_.c_str(), why.c_str());
  }
  // Also when the link had failed already: whoever failed it may still be
  // inside Cancel, and a caller fencing a TIMEOUT must not return before
  // the endpoint is closed (Cancel waits for a teardown in progress).
  if (endpoint) endpoint->Cancel();
}

void Link::Shutdown() {
  disconnected_.store(true);
  {
    MutexLock l(&state_mu_);
    state_.store(LinkState::kFailed);
    state_cv_.NotifyAll();
  }
  if (endpoint) endpoint->Cancel();
}

bool Link::WaitSettled(Clock::time_point deadline) {
  MutexLock l(&state_mu_);
  return state_cv_.WaitUntil(&state_mu_, deadline, [&] { return state_.load() != LinkState::kConnecting; });
}

}  // namespace adxl

