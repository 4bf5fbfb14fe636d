// CacheManager (src/llm_datadist/cache_manager.h): registration rules of
// docs/contract.md §10, links with metadata reads, and pull / push planned into one
// engine TransferSync per call.  Locks: cache_manager_impl.h (no network I/O
// under Impl::mu; per-link state under each link's own lock).
#include "cache_manager.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <set>
#include <thread>

#include "adxl/adxl_ext.h"
#include "cache_manager_impl.h"
#include "common/log.h"
#include "metadata.h"

namespace llm_datadist::internal {

uint64_t EntryBytes(const CacheDesc &d) { return TensorBytes(d) / static_cast<uint64_t>(d.shape[0]); }

// Appends (local, remote, len), merging with the previous descriptor when both sides continue it.
void AddOp(std::vector<adxl::TransferOpDesc> *ops, uintptr_t local, uintptr_t remote, size_t len) {
  if (!ops->empty()) {
    auto &b = ops->back();
    if (b.local_addr + b.len == local && b.remote_addr + b.len == remote) {
      b.len += len;
      return;
    }
  }
  ops->push_back({local, remote, len});
}

namespace {

constexpr char kLinkNotify[] = "llm_datadist.link";
constexpr char kUnlinkNotify[] = "llm_datadist.unlink";

// What a transfer needs to know about either side.
struct SideView {
  const CacheDesc *desc;
  const std::vector<uintptr_t> *addrs;
  bool paged;
};

std::string KeyText(const CacheKey &k) {
  return "CacheKey(cluster_id=" + std::to_string(k.cluster_id) + ", req_id=" + std::to_string(k.req_id) +
         ", model_id=" + std::to_string(k.model_id) + ", prefix_id=" + std::to_string(k.prefix_id) + ")";
}

bool SameKey(const CacheKey &a, const CacheKey &b) {
  return a.req_id == b.req_id && a.model_id == b.model_id && a.prefix_id == b.prefix_id;
}

// Tensor pairs (src index, dst index) selected by the layer ranges.
Status ResolveLayers(const char *what, const CacheDesc &src, const CacheDesc &dst, const LayerRangeArgs &layers,
                     std::vector<std::pair<uint32_t, uint32_t>> *pairs) {
  if (src.data_type != dst.data_type) {
    ADXL_ERROR("%s: data types differ (source %d, destination %d)", what, static_cast<int>(src.data_type),
             static_cast<int>(dst.data_type));
    return LLM_PARAM_INVALID;
  }
  const uint32_t t = layers.tensor_num_per_layer;
  if (!layers.src_layer_range && !layers.dst_layer_range) {
    if (src.num_tensors != dst.num_tensors) {
      ADXL_ERROR("%s: source has %u tensors, destination %u (give layer ranges to move a part)", what, src.num_tensors,
               dst.num_tensors);
      return LLM_PARAM_INVALID;
    }
    for (uint32_t i = 0; i < src.num_tensors; ++i) pairs->emplace_back(i, i);
    return LLM_SUCCESS;
  }
  if (t == 0 || src.num_tensors % t != 0 || dst.num_tensors % t != 0) {
    ADXL_ERROR("%s: tensor_num_per_layer %u does not divide the tensor counts (%u, %u)", what, t, src.num_tensors,
             dst.num_tensors);
    return LLM_PARAM_INVALID;
  }
  LayerRange s = layers.src_layer_range.value_or(LayerRange{0, src.num_tensors / t});
  LayerRange d = layers.dst_layer_range.value_or(LayerRange{0, dst.num_tensors / t});
  if (s.begin >= s.end || s.end > src.num_tensors / t || d.begin >= d.end || d.end > dst.num_tensors / t ||
      s.end - s.begin != d.end - d.begin) {
    ADXL_ERROR("%s: layer ranges [%u,%u) -> [%u,%u) are empty, out of range (%u, %u layers) or of different length",
             what, s.begin, s.end, d.begin, d.end, src.num_tensors / t, dst.num_tensors / t);
    return LLM_PARAM_INVALID;
  }
  for (uint32_t l = 0; l < s.end - s.begin; ++l) {
    for (uint32_t j = 0; j < t; ++j) pairs->emplace_back((s.begin + l) * t + j, (d.begin + l) * t + j);
  }
  return LLM_SUCCESS;
}

// Decodes the table the engine holds of link's peer (asking the peer for
// its current one first with `refresh`) when its version moved.
Status RefreshLocked(const OpContext &ctx, RemoteLink &rc, bool refresh) ADXL_REQUIRES(rc.mu) {
  std::string blob;
  uint64_t version = 0;
  Status s = adxl::ext::GetPeerMetadata(*ctx.engine, rc.engine.c_str(), kMetadataName, blob, version,
                                        refresh ? ctx.timeout_ms : 0);
  if (s != adxl::SUCCESS) {
    ADXL_ERROR("metadata of %s: engine status %u", rc.engine.c_str(), s);
    return FromEngine(s);
  }
  if (version == 0) {
    ADXL_ERROR("%s publishes no cache-layer metadata (not a cache layer, or not initialized)", rc.engine.c_str());
    return LLM_FAILED;
  }
  if (version == rc.version) return LLM_SUCCESS;
  uint64_t owner = 0;
  auto records = std::make_shared<std::vector<CacheRecord>>();
  if (!DecodeTable(blob, &owner, records.get())) {
    ADXL_ERROR("metadata of %s is malformed", rc.engine.c_str());
    return LLM_FAILED;
  }
  if (owner != rc.cluster) {
    ADXL_ERROR("%s is cluster %lu, not %lu", rc.engine.c_str(), static_cast<unsigned long>(owner),
               static_cast<unsigned long>(rc.cluster));
    return LLM_PARAM_INVALID;
  }
  rc.records = std::move(records);
  rc.version = version;
  return LLM_SUCCESS;
}

}  // namespace

Status RefreshLink(const OpContext &ctx, RemoteLink &link, bool refresh,
                   std::shared_ptr<const std::vector<CacheRecord>> *records) {
  adxl::MutexLock lock(&link.mu);
  Status s = RefreshLocked(ctx, link, refresh);
  if (s == LLM_SUCCESS) *records = link.records ? link.records : std::make_shared<const std::vector<CacheRecord>>();
  return s;
}

Status CacheManager::Impl::BeginLocked(OpContext *ctx) {
  if (!live || stopping) return LLM_FAILED;
  ++busy;
  ctx->engine = engine;
  ctx->timeout_ms = timeout_ms;
  ctx->cluster_id = cluster_id;
  return LLM_SUCCESS;
}

void CacheManager::Impl::EndOp() {
  adxl::MutexLock lock(&mu);
  if (--busy == 0) idle.NotifyAll();
}

Status CacheManager::Impl::Start(const char *what) {
  // An empty table from the start: a peer that links finds a cache layer.
  Status s = PublishLocked();
  if (s != LLM_SUCCESS) {
    ADXL_ERROR("%s: publishing the cache table failed (status %u)", what, s);
    return s;
  }
  live = true;
  return LLM_SUCCESS;
}

void CacheManager::Impl::Stop() {
  std::vector<TaskWorker> tasks;
  {
    adxl::MutexLock lock(&mu);
    if (!live || stopping) return;
    stopping = true;  // new operations fail from here on
    tasks.swap(workers);
  }
  // Tasks first: cancelled (nothing more is pushed), then joined.
  for (TaskWorker &w : tasks) {
    {
      adxl::MutexLock lock(&w.state->mu);
      w.state->EndLocked(LLM_FAILED);
    }
    if (w.thread.joinable()) w.thread.join();
  }
  std::map<uint64_t, std::shared_ptr<RemoteLink>> gone_links;
  std::map<int64_t, LocalCache> gone_caches;
  std::unique_ptr<adxl::AdxlEngine> gone_owned;
  adxl::AdxlEngine *eng = nullptr;
  int32_t t = 1000;
  uint64_t id = 0;
  {
    adxl::MutexLock lock(&mu);
    idle.Wait(&mu, [this]() ADXL_REQUIRES(mu) { return busy == 0; });
    gone_links.swap(links);
    gone_caches.swap(caches);
    addrs.clear();
    incoming.clear();
    gone_owned = std::move(owned);
    eng = engine;
    t = timeout_ms;
    id = cluster_id;
  }
  for (auto &l : gone_links) {
    eng->SendNotify(l.second->engine.c_str(), {kUnlinkNotify, std::to_string(id).c_str()}, t);
    eng->Disconnect(l.second->engine.c_str(), t);
  }
  for (auto &c : gone_caches) {
    for (adxl::MemHandle h : c.second.handles) eng->DeregisterMem(h);
  }
  if (gone_owned) gone_owned->Finalize();
  gone_owned.reset();
  adxl::MutexLock lock(&mu);
  engine = nullptr;
  live = false;
  stopping = false;
}

void CacheManager::Impl::DrainNotifies() {
  std::vector<adxl::NotifyDesc> got;
  if (engine->GetNotifies(got) != adxl::SUCCESS) return;
  for (auto &n : got) {
    const std::string name = n.name.GetString();
    if (name == kLinkNotify || name == kUnlinkNotify) {
      uint64_t id = strtoull(n.notify_msg.GetString(), nullptr, 10);
      if (name == kLinkNotify) {
        incoming.insert(id);
      } else {
        incoming.erase(id);
      }
    } else {
      kept.push_back(std::move(n));
    }
  }
}

Status CacheManager::Impl::PublishLocked() {
  std::vector<CacheRecord> records;
  for (const auto &c : caches) {
    if (!c.second.cache.remote_accessible) continue;
    CacheRecord r;
    r.cache_id = c.first;
    r.paged = c.second.cache.paged;
    r.desc = c.second.cache.cache_desc;
    r.addrs = c.second.cache.tensor_addrs;
    r.keys = c.second.keys;
    r.blocks_key = c.second.blocks_key;
    records.push_back(std::move(r));
  }
  const Status s = adxl::ext::PublishMetadata(*engine, kMetadataName, EncodeTable(cluster_id, records));
  return s == adxl::SUCCESS ? LLM_SUCCESS : s == adxl::RESOURCE_EXHAUSTED || s == adxl::PARAM_INVALID ? LLM_RESOURCE_EXHAUSTED : FromEngine(s);
}

Status CacheManager::Impl::Register(const char *what, const CacheDesc &desc, const std::vector<uintptr_t> &addrs_in,
                                    const std::vector<CacheKey> &keys, const std::optional<BlocksCacheKey> &bkey,
                                    bool paged, std::optional<bool> remote_accessible, Cache &cache) {
  const uint64_t bytes = TensorBytes(desc);
  if (desc.placement != Placement::HOST && desc.placement != Placement::DEVICE) {
    ADXL_ERROR("%s: placement %d is neither HOST nor DEVICE", what, static_cast<int>(desc.placement));
    return LLM_PARAM_INVALID;
  }
  if (bytes == 0) {
    ADXL_ERROR("%s: invalid cache description (data type %d, shape of %zu dims, a dimension <= 0 or too large)", what,
             static_cast<int>(desc.data_type), desc.shape.size());
    return LLM_PARAM_INVALID;
  }
  if (desc.batch_dim_index != 0) {
    ADXL_ERROR("%s: batch_dim_index %d is not supported (must be 0)", what, desc.batch_dim_index);
    return LLM_PARAM_INVALID;
  }
  if (desc.num_tensors == 0 || addrs_in.size() != desc.num_tensors) {
    ADXL_ERROR("%s: %zu addresses for num_tensors %u (one address per tensor)", what, addrs_in.size(),
             desc.num_tensors);
    return LLM_PARAM_INVALID;
  }
  std::set<uintptr_t> mine;
  for (uintptr_t a : addrs_in) {
    if (a == 0 || !mine.insert(a).second || addrs.count(a) != 0) {
      ADXL_ERROR("%s: address 0x%lx is zero, repeated or already registered (addresses must be unique)", what,
               static_cast<unsigned long>(a));
      return LLM_PARAM_INVALID;
    }
  }
  if (addrs.size() + addrs_in.size() > kMaxRegisteredAddrs) {
    ADXL_ERROR("%s: %zu addresses registered, %zu more would exceed the limit of %zu", what, addrs.size(),
             addrs_in.size(), kMaxRegisteredAddrs);
    return LLM_RESOURCE_EXHAUSTED;
  }
  if (keys.size() > static_cast<size_t>(desc.shape[0])) {
    ADXL_ERROR("%s: %zu cache keys for a batch of %ld", what, keys.size(), static_cast<long>(desc.shape[0]));
    return LLM_PARAM_INVALID;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].cluster_id != cluster_id) {
      ADXL_ERROR("%s: %s names cluster %lu, this is cluster %lu", what, KeyText(keys[i]).c_str(),
               static_cast<unsigned long>(keys[i].cluster_id), static_cast<unsigned long>(cluster_id));
      return LLM_PARAM_INVALID;
    }
    bool dup = false;
    for (size_t j = 0; j < i; ++j) dup = dup || SameKey(keys[i], keys[j]);
    for (const auto &c : caches) {
      for (const auto &k : c.second.keys) dup = dup || SameKey(keys[i], k);
    }
    if (dup) {
      ADXL_ERROR("%s: %s is already registered", what, KeyText(keys[i]).c_str());
      return LLM_CACHE_KEY_ALREADY_EXIST;
    }
  }
  if (bkey) {
    if (bkey->cluster_id != cluster_id) {
      ADXL_ERROR("%s: BlocksCacheKey names cluster %lu, this is cluster %lu", what,
               static_cast<unsigned long>(bkey->cluster_id), static_cast<unsigned long>(cluster_id));
      return LLM_PARAM_INVALID;
    }
    for (const auto &c : caches) {
      if (c.second.blocks_key && c.second.blocks_key->model_id == bkey->model_id) {
        ADXL_ERROR("%s: BlocksCacheKey(model_id=%lu) is already registered", what,
                 static_cast<unsigned long>(bkey->model_id));
        return LLM_CACHE_KEY_ALREADY_EXIST;
      }
    }
  }
  const bool device = desc.placement == Placement::DEVICE;
  const bool remote = remote_accessible.value_or(device);
  if (device && remote) {
    DrainNotifies();
    if (!links.empty() || !linking.empty() || !incoming.empty()) {
      ADXL_ERROR("%s: a remote-accessible device cache must be registered before any link exists (%zu outgoing, %zu "
               "incoming links)",
               what, links.size(), incoming.size());
      return LLM_EXIST_LINK;
    }
  }
  LocalCache lc;
  for (uintptr_t a : addrs_in) {
    adxl::MemHandle h = nullptr;
    Status s = engine->RegisterMem({a, bytes}, device ? adxl::MEM_DEVICE : adxl::MEM_HOST, h);
    if (s != adxl::SUCCESS) {
      ADXL_ERROR("%s: the engine refused tensor 0x%lx (%lu bytes): engine status %u", what,
                 static_cast<unsigned long>(a), static_cast<unsigned long>(bytes), s);
      for (adxl::MemHandle done : lc.handles) engine->DeregisterMem(done);
      return FromEngine(s);
    }
    lc.handles.push_back(h);
  }
  lc.cache.cache_id = next_id++;
  lc.cache.cache_desc = desc;
  lc.cache.tensor_addrs = addrs_in;
  lc.cache.paged = paged;
  lc.cache.remote_accessible = remote;
  lc.keys = keys;
  lc.blocks_key = bkey;
  const int64_t id = lc.cache.cache_id;
  caches.emplace(id, std::move(lc));
  if (remote && PublishLocked() != LLM_SUCCESS) {
    ADXL_ERROR("%s: the cache table is over the engine's metadata limit (too many keys)", what);
    for (adxl::MemHandle h : caches[id].handles) engine->DeregisterMem(h);
    caches.erase(id);
    PublishLocked();
    return LLM_RESOURCE_EXHAUSTED;
  }
  addrs.insert(addrs_in.begin(), addrs_in.end());
  cache = caches[id].cache;
  return LLM_SUCCESS;
}


Status CacheManager::Impl::LocalAndLink(const char *what, const Cache &c, uint64_t remote_cluster, Cache *local,
                                        std::shared_ptr<RemoteLink> *link) {
  if (remote_cluster == cluster_id) {
    ADXL_ERROR("%s: cluster %lu is this process's own cluster", what, static_cast<unsigned long>(remote_cluster));
    return LLM_PARAM_INVALID;
  }
  auto it = caches.find(c.cache_id);
  if (it == caches.end()) {
    ADXL_ERROR("%s: local cache %ld is not registered", what, static_cast<long>(c.cache_id));
    return LLM_KV_CACHE_NOT_EXIST;
  }
  auto l = links.find(remote_cluster);
  if (l == links.end()) {
    ADXL_ERROR("%s: cluster %lu is not linked", what, static_cast<unsigned long>(remote_cluster));
    return LLM_NOT_YET_LINK;
  }
  *local = it->second.cache;
  *link = l->second;
  return LLM_SUCCESS;
}

void CacheManager::Impl::ReapWorkersLocked() {
  for (auto it = workers.begin(); it != workers.end();) {
    bool exited = false;
    {
      adxl::MutexLock lock(&it->state->mu);
      exited = it->state->exited;
    }
    if (exited) {
      it->thread.join();  // it has returned from its last lock: at once
      it = workers.erase(it);
    } else {
      ++it;
    }
  }
}

namespace {

// One pull / push: the local cache and the link under Impl::mu, then the
// metadata refresh (the link's lock) and the transfer with no lock held.
Status PlanAndRun(
    CacheManager::Impl *impl, const char *what, uint64_t remote_cluster, const Cache &local_in, bool local_is_dst,
    const std::function<Status(const std::vector<CacheRecord> &, const CacheRecord **, uint64_t *, std::string *)>
        &find,
    const std::function<Status(const SideView &, const SideView &, uint64_t, std::vector<adxl::TransferOpDesc> *)>
        &build,
    adxl::TransferOp op) ADXL_EXCLUDES(impl->mu) {
  OpContext ctx;
  Cache local;
  std::shared_ptr<RemoteLink> link;
  OpGuard guard(impl);
  {
    adxl::MutexLock lock(&impl->mu);
    Status s = impl->BeginLocked(&ctx);
    if (s != LLM_SUCCESS) return s;
    guard.Activate();
    s = impl->LocalAndLink(what, local_in, remote_cluster, &local, &link);
    if (s != LLM_SUCCESS) return s;
  }
  std::shared_ptr<const std::vector<CacheRecord>> records;
  const CacheRecord *rec = nullptr;
  uint64_t index = 0;
  Status s = LLM_SUCCESS;
  // The table as last pushed; once more after asking the peer when what we
  // look for is not in it (refresh on miss).
  std::string why;
  for (bool refresh : {false, true}) {
    s = RefreshLink(ctx, *link, refresh, &records);
    if (s != LLM_SUCCESS) {
      ADXL_ERROR("%s: reading the metadata of cluster %lu failed: status %u", what,
                 static_cast<unsigned long>(remote_cluster), s);
      return s;
    }
    s = find(*records, &rec, &index, &why);
    if (s == LLM_SUCCESS) break;
  }
  if (s != LLM_SUCCESS) {
    ADXL_ERROR("%s: %s", what, why.c_str());
    return s;
  }
  std::vector<adxl::TransferOpDesc> ops;
  SideView l{&local.cache_desc, &local.tensor_addrs, local.paged};
  SideView r{&rec->desc, &rec->addrs, rec->paged};
  s = local_is_dst ? build(r, l, index, &ops) : build(l, r, index, &ops);
  if (s != LLM_SUCCESS) return s;
  // local_is_dst: READ (remote -> local); descriptors are (local, remote).
  s = ctx.engine->TransferSync(link->engine.c_str(), op, ops, ctx.timeout_ms);
  if (s != adxl::SUCCESS) ADXL_ERROR("%s: transfer with %s failed: engine status %u", what, link->engine.c_str(), s);
  return FromEngine(s);
}

}  // namespace

// ---------------------------------------------------------------------------

CacheManager::CacheManager() : impl_(std::make_unique<Impl>()) {}
CacheManager::~CacheManager() { Finalize(); }

Status CacheManager::Initialize(uint64_t cluster_id, const std::string &local_engine,
                                const std::map<adxl::AscendString, adxl::AscendString> &options) {
  adxl::MutexLock lock(&impl_->mu);
  if (impl_->live || impl_->stopping) {
    ADXL_ERROR("Initialize: already initialized");
    return LLM_FAILED;
  }
  auto engine = std::make_unique<adxl::AdxlEngine>();
  Status s = engine->Initialize(local_engine.c_str(), options);
  if (s != adxl::SUCCESS) {
    ADXL_ERROR("Initialize: engine %s failed to initialize: engine status %u", local_engine.c_str(), s);
    return FromEngine(s);
  }
  impl_->cluster_id = cluster_id;
  impl_->local_name = local_engine;
  impl_->engine = engine.get();
  impl_->owned = std::move(engine);
  s = impl_->Start("Initialize");
  if (s != LLM_SUCCESS) {
    impl_->owned->Finalize();
    impl_->owned.reset();
    impl_->engine = nullptr;
  }
  return s;
}

Status CacheManager::Initialize(uint64_t cluster_id, adxl::AdxlEngine &engine, const std::string &local_engine) {
  adxl::MutexLock lock(&impl_->mu);
  if (impl_->live || impl_->stopping) {
    ADXL_ERROR("Initialize: already initialized");
    return LLM_FAILED;
  }
  impl_->cluster_id = cluster_id;
  impl_->local_name = local_engine;
  impl_->engine = &engine;
  Status s = impl_->Start("Initialize");
  if (s != LLM_SUCCESS) impl_->engine = nullptr;
  return s;
}

void CacheManager::Finalize() { impl_->Stop(); }

Status CacheManager::SetSyncTimeout(int32_t timeout_ms) {
  adxl::MutexLock lock(&impl_->mu);
  if (!impl_->live) return LLM_FAILED;
  if (timeout_ms <= 0) {
    ADXL_ERROR("SetSyncTimeout: timeout %d ms must be > 0", timeout_ms);
    return LLM_PARAM_INVALID;
  }
  impl_->timeout_ms = timeout_ms;
  return LLM_SUCCESS;
}

uint64_t CacheManager::ClusterId() const {
  adxl::MutexLock lock(&impl_->mu);
  return impl_->cluster_id;
}

size_t CacheManager::RegisteredAddrCount() const {
  adxl::MutexLock lock(&impl_->mu);
  return impl_->addrs.size();
}

Status CacheManager::RegisterCache(const CacheDesc &desc, const std::vector<uintptr_t> &addrs,
                                   const std::vector<CacheKey> &cache_keys, std::optional<bool> remote_accessible,
                                   Cache &cache) {
  adxl::MutexLock lock(&impl_->mu);
  if (!impl_->live || impl_->stopping) return LLM_FAILED;
  return impl_->Register("RegisterCache", desc, addrs, cache_keys, std::nullopt, false, remote_accessible, cache);
}

Status CacheManager::RegisterBlocksCache(const CacheDesc &desc, const std::vector<uintptr_t> &addrs,
                                         const std::optional<BlocksCacheKey> &blocks_cache_key,
                                         std::optional<bool> remote_accessible, Cache &cache) {
  adxl::MutexLock lock(&impl_->mu);
  if (!impl_->live || impl_->stopping) return LLM_FAILED;
  return impl_->Register("RegisterBlocksCache", desc, addrs, {}, blocks_cache_key, true, remote_accessible, cache);
}

Status CacheManager::UnregisterCache(int64_t cache_id) {
  OpContext ctx;
  OpGuard guard(impl_.get());
  std::vector<adxl::MemHandle> handles;
  {
    adxl::MutexLock lock(&impl_->mu);
    Status s = impl_->BeginLocked(&ctx);
    if (s != LLM_SUCCESS) return s;
    guard.Activate();
    auto it = impl_->caches.find(cache_id);
    if (it == impl_->caches.end()) {
      ADXL_ERROR("UnregisterCache: cache %ld is not registered", static_cast<long>(cache_id));
      return LLM_KV_CACHE_NOT_EXIST;
    }
    const bool remote = it->second.cache.remote_accessible;
    for (uintptr_t a : it->second.cache.tensor_addrs) impl_->addrs.erase(a);
    handles = std::move(it->second.handles);
    impl_->caches.erase(it);
    // Unpublish first, so that a peer that re-reads never sees a gone region.
    if (remote) impl_->PublishLocked();
  }
  // Deregistration waits for the peers' acknowledgements: outside the lock.
  for (adxl::MemHandle h : handles) ctx.engine->DeregisterMem(h);
  return LLM_SUCCESS;
}

namespace {

// Connect + metadata probe of one cluster, no lock of the manager held.
Status LinkOne(const OpContext &ctx, const ClusterInfo &c, int32_t timeout_ms, std::shared_ptr<RemoteLink> *out) {
  Status s = ctx.engine->Connect(c.remote_engine.c_str(), timeout_ms);
  const bool connected_here = s == adxl::SUCCESS;
  if (s == adxl::ALREADY_CONNECTED) s = adxl::SUCCESS;  // a shared engine's existing link
  if (s != adxl::SUCCESS) {
    ADXL_ERROR("LinkClusters: connecting to %s failed: engine status %u", c.remote_engine.c_str(), s);
    return FromEngine(s);
  }
  auto rc = std::make_shared<RemoteLink>(c.remote_cluster_id, c.remote_engine);
  OpContext probe = ctx;
  probe.timeout_ms = timeout_ms;
  {
    // The table came with the handshake; asked for once more when the link
    // existed already (a shared engine), so it is current.
    adxl::MutexLock lock(&rc->mu);  // nobody else has it yet; RefreshLocked wants it
    s = RefreshLocked(probe, *rc, !connected_here);
  }
  if (s == LLM_SUCCESS) {
    ctx.engine->SendNotify(c.remote_engine.c_str(), {kLinkNotify, std::to_string(ctx.cluster_id).c_str()},
                           timeout_ms);
    *out = std::move(rc);
    return s;
  }
  ADXL_ERROR("LinkClusters: %s: its cache table is not usable (status %u)", c.remote_engine.c_str(), s);
  if (connected_here) ctx.engine->Disconnect(c.remote_engine.c_str(), timeout_ms);
  return s;
}

}  // namespace

Status CacheManager::LinkClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                                  int32_t timeout_ms) {
  rets.assign(clusters.size(), LLM_FAILED);
  OpContext ctx;
  OpGuard guard(impl_.get());
  {
    adxl::MutexLock lock(&impl_->mu);
    Status s = impl_->BeginLocked(&ctx);
    if (s != LLM_SUCCESS) return s;
    guard.Activate();
  }
  if (timeout_ms <= 0) {
    ADXL_ERROR("LinkClusters: timeout %d ms must be > 0", timeout_ms);
    rets.assign(clusters.size(), LLM_PARAM_INVALID);
    return LLM_PARAM_INVALID;
  }
  Status first = LLM_SUCCESS;
  for (size_t i = 0; i < clusters.size(); ++i) {
    const ClusterInfo &c = clusters[i];
    Status s = LLM_SUCCESS;
    {
      adxl::MutexLock lock(&impl_->mu);
      if (c.remote_cluster_id == impl_->cluster_id) {
        ADXL_ERROR("LinkClusters: cluster %lu is this process's own cluster",
                 static_cast<unsigned long>(c.remote_cluster_id));
        s = LLM_PARAM_INVALID;
      } else if (impl_->links.count(c.remote_cluster_id) != 0 || impl_->linking.count(c.remote_cluster_id) != 0) {
        ADXL_ERROR("LinkClusters: cluster %lu is already linked", static_cast<unsigned long>(c.remote_cluster_id));
        s = LLM_ALREADY_LINK;
      } else {
        impl_->linking.insert(c.remote_cluster_id);  // reserved while we connect without the lock
      }
    }
    if (s == LLM_SUCCESS) {
      std::shared_ptr<RemoteLink> rc;
      s = LinkOne(ctx, c, timeout_ms, &rc);
      adxl::MutexLock lock(&impl_->mu);
      impl_->linking.erase(c.remote_cluster_id);
      if (s == LLM_SUCCESS) impl_->links.emplace(c.remote_cluster_id, std::move(rc));
    }
    rets[i] = s;
    if (first == LLM_SUCCESS) first = s;
  }
  return first;
}

Status CacheManager::UnlinkClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                                    int32_t timeout_ms) {
  rets.assign(clusters.size(), LLM_FAILED);
  OpContext ctx;
  OpGuard guard(impl_.get());
  {
    adxl::MutexLock lock(&impl_->mu);
    Status s = impl_->BeginLocked(&ctx);
    if (s != LLM_SUCCESS) return s;
    guard.Activate();
  }
  if (timeout_ms <= 0) {
    ADXL_ERROR("UnlinkClusters: timeout %d ms must be > 0", timeout_ms);
    rets.assign(clusters.size(), LLM_PARAM_INVALID);
    return LLM_PARAM_INVALID;
  }
  Status first = LLM_SUCCESS;
  for (size_t i = 0; i < clusters.size(); ++i) {
    std::shared_ptr<RemoteLink> link;
    {
      adxl::MutexLock lock(&impl_->mu);
      auto it = impl_->links.find(clusters[i].remote_cluster_id);
      if (it != impl_->links.end()) {
        link = std::move(it->second);
        impl_->links.erase(it);  // new transfers see LLM_NOT_YET_LINK from here on
      }
    }
    Status s = LLM_SUCCESS;
    if (!link) {
      ADXL_ERROR("UnlinkClusters: cluster %lu is not linked",
               static_cast<unsigned long>(clusters[i].remote_cluster_id));
      s = LLM_NOT_YET_LINK;
    } else {
      ctx.engine->SendNotify(link->engine.c_str(), {kUnlinkNotify, std::to_string(ctx.cluster_id).c_str()},
                             timeout_ms);
      Status d = ctx.engine->Disconnect(link->engine.c_str(), timeout_ms);
      if (d != adxl::SUCCESS && d != adxl::NOT_CONNECTED) s = FromEngine(d);
      adxl::MutexLock lock(&link->mu);  // a metadata refresh in flight on this link ends first
    }
    rets[i] = s;
    if (first == LLM_SUCCESS) first = s;
  }
  return first;
}

namespace {

// Batch entry -> batch entry, tensor by tensor.
auto CacheToCache(const char *what, const LayerRangeArgs &layers, uint64_t local_index, int64_t size,
                  bool local_is_dst) {
  return [=](const SideView &src, const SideView &dst, uint64_t remote_index,
             std::vector<adxl::TransferOpDesc> *ops) -> Status {
    if (src.paged || dst.paged) {
      ADXL_ERROR("%s: both caches must be non-paged (use the *Blocks calls for paged caches)", what);
      return LLM_PARAM_INVALID;
    }
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    Status s = ResolveLayers(what, *src.desc, *dst.desc, layers, &pairs);
    if (s != LLM_SUCCESS) return s;
    const uint64_t se = EntryBytes(*src.desc), de = EntryBytes(*dst.desc);
    const uint64_t si = local_is_dst ? remote_index : local_index;
    const uint64_t di = local_is_dst ? local_index : remote_index;
    if (si >= static_cast<uint64_t>(src.desc->shape[0]) || di >= static_cast<uint64_t>(dst.desc->shape[0])) {
      ADXL_ERROR("%s: batch index %lu -> %lu out of range (batches %ld, %ld)", what, static_cast<unsigned long>(si),
               static_cast<unsigned long>(di), static_cast<long>(src.desc->shape[0]),
               static_cast<long>(dst.desc->shape[0]));
      return LLM_PARAM_INVALID;
    }
    uint64_t len = se;
    if (size == -1) {
      if (se != de) {
        ADXL_ERROR("%s: batch entries differ (%lu and %lu bytes); give a size", what, static_cast<unsigned long>(se),
                 static_cast<unsigned long>(de));
        return LLM_PARAM_INVALID;
      }
    } else if (size <= 0 || static_cast<uint64_t>(size) > se || static_cast<uint64_t>(size) > de) {
      ADXL_ERROR("%s: size %ld is not in (0, %lu]", what, static_cast<long>(size),
               static_cast<unsigned long>(std::min(se, de)));
      return LLM_PARAM_INVALID;
    } else {
      len = static_cast<uint64_t>(size);
    }
    for (auto [a, b] : pairs) {
      uintptr_t s_addr = (*src.addrs)[a] + si * se, d_addr = (*dst.addrs)[b] + di * de;
      if (local_is_dst) {
        AddOp(ops, d_addr, s_addr, len);
      } else {
        AddOp(ops, s_addr, d_addr, len);
      }
    }
    return LLM_SUCCESS;
  };
}

// Blocks -> blocks (src_blocks non-empty), or a batch entry -> blocks (src_blocks empty).
auto ToBlocks(const char *what, const LayerRangeArgs &layers, std::vector<uint64_t> src_blocks,
              std::vector<uint64_t> dst_blocks, bool local_is_dst) {
  return [=](const SideView &src, const SideView &dst, uint64_t remote_index,
             std::vector<adxl::TransferOpDesc> *ops) -> Status {
    if (!dst.paged) {
      ADXL_ERROR("%s: the destination cache is not paged", what);
      return LLM_PARAM_INVALID;
    }
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    Status s = ResolveLayers(what, *src.desc, *dst.desc, layers, &pairs);
    if (s != LLM_SUCCESS) return s;
    const uint64_t db = EntryBytes(*dst.desc);
    const uint64_t dn = static_cast<uint64_t>(dst.desc->shape[0]);
    for (uint64_t b : dst_blocks) {
      if (b >= dn) {
        ADXL_ERROR("%s: destination block %lu out of range (%lu blocks)", what, static_cast<unsigned long>(b),
                 static_cast<unsigned long>(dn));
        return LLM_PARAM_INVALID;
      }
    }
    auto add = [&](uintptr_t s_addr, uintptr_t d_addr, uint64_t len) {
      if (local_is_dst) {
        AddOp(ops, d_addr, s_addr, len);
      } else {
        AddOp(ops, s_addr, d_addr, len);
      }
    };
    if (src.paged) {
      const uint64_t sb = EntryBytes(*src.desc), sn = static_cast<uint64_t>(src.desc->shape[0]);
      if (src_blocks.empty() || src_blocks.size() != dst_blocks.size()) {
        ADXL_ERROR("%s: %zu source blocks for %zu destination blocks (must be equal and > 0)", what, src_blocks.size(),
                 dst_blocks.size());
        return LLM_PARAM_INVALID;
      }
      if (sb != db) {
        ADXL_ERROR("%s: block sizes differ (%lu and %lu bytes)", what, static_cast<unsigned long>(sb),
                 static_cast<unsigned long>(db));
        return LLM_PARAM_INVALID;
      }
      for (uint64_t b : src_blocks) {
        if (b >= sn) {
          ADXL_ERROR("%s: source block %lu out of range (%lu blocks)", what, static_cast<unsigned long>(b),
                   static_cast<unsigned long>(sn));
          return LLM_PARAM_INVALID;
        }
      }
      for (auto [a, c] : pairs) {
        for (size_t k = 0; k < src_blocks.size(); ++k) {
          add((*src.addrs)[a] + src_blocks[k] * sb, (*dst.addrs)[c] + dst_blocks[k] * db, sb);
        }
      }
      return LLM_SUCCESS;
    }
    // A non-paged batch entry (remote_index) cut into destination blocks.
    const uint64_t se = EntryBytes(*src.desc);
    if (!src_blocks.empty() || dst_blocks.empty() || (se + db - 1) / db != dst_blocks.size()) {
      ADXL_ERROR("%s: a %lu-byte batch entry needs %lu destination blocks of %lu bytes and no source blocks (got %zu, "
               "%zu)",
               what, static_cast<unsigned long>(se), static_cast<unsigned long>((se + db - 1) / db),
               static_cast<unsigned long>(db), dst_blocks.size(), src_blocks.size());
      return LLM_PARAM_INVALID;
    }
    for (auto [a, c] : pairs) {
      for (size_t k = 0; k < dst_blocks.size(); ++k) {
        const uint64_t off = k * db;
        add((*src.addrs)[a] + remote_index * se + off, (*dst.addrs)[c] + dst_blocks[k] * db, std::min(db, se - off));
      }
    }
    return LLM_SUCCESS;
  };
}

auto FindByKey(const CacheKey &key) {
  return [=](const std::vector<CacheRecord> &recs, const CacheRecord **rec, uint64_t *index,
             std::string *why) -> Status {
    for (const CacheRecord &r : recs) {
      for (size_t i = 0; i < r.keys.size(); ++i) {
        if (SameKey(r.keys[i], key)) {
          *rec = &r;
          *index = i;
          return LLM_SUCCESS;
        }
      }
    }
    *why = KeyText(key) + " is not registered (remote-accessible) at the remote cluster";
    return LLM_KV_CACHE_NOT_EXIST;
  };
}

auto FindById(const CacheKeyByIdAndIndex &key) {
  return [=](const std::vector<CacheRecord> &recs, const CacheRecord **rec, uint64_t *index,
             std::string *why) -> Status {
    for (const CacheRecord &r : recs) {
      if (r.cache_id == key.cache_id) {
        *rec = &r;
        *index = key.batch_index;
        return LLM_SUCCESS;
      }
    }
    *why = "cache " + std::to_string(key.cache_id) + " is not registered (remote-accessible) at cluster " +
           std::to_string(key.cluster_id);
    return LLM_KV_CACHE_NOT_EXIST;
  };
}

auto FindBlocks(const BlocksCacheKey &key) {
  return [=](const std::vector<CacheRecord> &recs, const CacheRecord **rec, uint64_t *index,
             std::string *why) -> Status {
    for (const CacheRecord &r : recs) {
      if (r.blocks_key && r.blocks_key->model_id == key.model_id) {
        *rec = &r;
        *index = 0;
        return LLM_SUCCESS;
      }
    }
    *why = "BlocksCacheKey(cluster_id=" + std::to_string(key.cluster_id) + ", model_id=" +
           std::to_string(key.model_id) + ") is not registered at the remote cluster";
    return LLM_KV_CACHE_NOT_EXIST;
  };
}

// Paged source blocks -> remote paged blocks (push).
auto FromBlocks(const char *what, const LayerRangeArgs &layers, std::vector<uint64_t> src_blocks,
                std::vector<uint64_t> dst_blocks) {
  return [=](const SideView &src, const SideView &dst, uint64_t remote_index,
             std::vector<adxl::TransferOpDesc> *ops) -> Status {
    if (!src.paged) {
      ADXL_ERROR("%s: the source cache is not paged", what);
      return LLM_PARAM_INVALID;
    }
    return ToBlocks(what, layers, src_blocks, dst_blocks, false)(src, dst, remote_index, ops);
  };
}

// A block plan on caches registered without a layout: both sides seen as
// paged, except a pulled source given no blocks (a batch entry).
template <typename Build>
auto AsBlocks(bool src_paged, Build build) {
  return [=](const SideView &src, const SideView &dst, uint64_t remote_index,
             std::vector<adxl::TransferOpDesc> *ops) -> Status {
    SideView s = src, d = dst;
    s.paged = src_paged;
    d.paged = true;
    return build(s, d, remote_index, ops);
  };
}

}  // namespace

Status CacheManager::PullBlocksById(const CacheKeyByIdAndIndex &key, const Cache &dst,
                                    const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                                    const LayerRangeArgs &layers) {
  const char *what = "PullKvBlocks";
  return PlanAndRun(impl_.get(), what, key.cluster_id, dst, true, FindById(key),
                     AsBlocks(!src_blocks.empty(), ToBlocks(what, layers, src_blocks, dst_blocks, true)), adxl::READ);
}

Status CacheManager::PushBlocksById(const CacheKeyByIdAndIndex &key, const Cache &src,
                                    const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                                    const LayerRangeArgs &layers) {
  const char *what = "PushKvBlocks";
  return PlanAndRun(impl_.get(), what, key.cluster_id, src, false, FindById(key),
                     AsBlocks(true, ToBlocks(what, layers, src_blocks, dst_blocks, false)), adxl::WRITE);
}

Status CacheManager::PullCache(const CacheKey &key, const Cache &dst, uint32_t batch_index, int64_t size,
                               const LayerRangeArgs &layers) {
  const char *what = "PullCache";
  return PlanAndRun(impl_.get(), what, key.cluster_id, dst, true, FindByKey(key),
                     CacheToCache(what, layers, batch_index, size, true), adxl::READ);
}

Status CacheManager::PullCache(const CacheKeyByIdAndIndex &key, const Cache &dst, uint32_t batch_index, int64_t size,
                               const LayerRangeArgs &layers) {
  const char *what = "PullCache";
  return PlanAndRun(impl_.get(), what, key.cluster_id, dst, true, FindById(key),
                     CacheToCache(what, layers, batch_index, size, true), adxl::READ);
}

Status CacheManager::PullBlocks(const BlocksCacheKey &key, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                                const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers) {
  const char *what = "PullBlocks";
  return PlanAndRun(impl_.get(), what, key.cluster_id, dst, true, FindBlocks(key),
                     ToBlocks(what, layers, src_blocks, dst_blocks, true), adxl::READ);
}

Status CacheManager::PullBlocks(const CacheKey &key, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                                const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers) {
  const char *what = "PullBlocks";
  return PlanAndRun(impl_.get(), what, key.cluster_id, dst, true, FindByKey(key),
                     ToBlocks(what, layers, src_blocks, dst_blocks, true), adxl::READ);
}

Status CacheManager::PullBlocks(const CacheKeyByIdAndIndex &key, const Cache &dst,
                                const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                                const LayerRangeArgs &layers) {
  const char *what = "PullBlocks";
  return PlanAndRun(impl_.get(), what, key.cluster_id, dst, true, FindById(key),
                     ToBlocks(what, layers, src_blocks, dst_blocks, true), adxl::READ);
}

Status CacheManager::PushCache(const CacheKeyByIdAndIndex &key, const Cache &src, uint32_t src_batch_index,
                               int64_t size, const LayerRangeArgs &layers) {
  const char *what = "PushCache";
  return PlanAndRun(impl_.get(), what, key.cluster_id, src, false, FindById(key),
                     CacheToCache(what, layers, src_batch_index, size, false), adxl::WRITE);
}

Status CacheManager::PushBlocks(const BlocksCacheKey &key, const Cache &src, const std::vector<uint64_t> &src_blocks,
                                const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers) {
  const char *what = "PushBlocks";
  return PlanAndRun(impl_.get(), what, key.cluster_id, src, false, FindBlocks(key),
                     FromBlocks(what, layers, src_blocks, dst_blocks), adxl::WRITE);
}

Status CacheManager::GetNotifies(std::vector<adxl::NotifyDesc> &notifies) {
  adxl::MutexLock lock(&impl_->mu);
  if (!impl_->live || impl_->stopping) return LLM_FAILED;
  impl_->DrainNotifies();
  for (auto &n : impl_->kept) notifies.push_back(std::move(n));
  impl_->kept.clear();
  return LLM_SUCCESS;
}

// ---- Python-surface additions (issue 14, items 1 and 3): RemoveCacheKey, CheckLinkStatus ----
// Neither does network I/O: RemoveCacheKey rewrites the local metadata
// window, CheckLinkStatus asks the engine about a link it already has.

Status CacheManager::RemoveCacheKey(const CacheKey &key) {
  adxl::MutexLock lock(&impl_->mu);
  if (!impl_->live) return LLM_FAILED;
  for (auto &entry : impl_->caches) {
    LocalCache &lc = entry.second;
    for (CacheKey &k : lc.keys) {
      if (!SameKey(k, key)) continue;
      // The slot stays (keys[i] names batch entry i) and names nothing: a
      // key no caller can form (the Python layer refuses req_id and
      // prefix_id both 2**64-1).
      k.req_id = UINT64_MAX;
      k.model_id = UINT64_MAX;
      k.prefix_id = UINT64_MAX;
      if (lc.cache.remote_accessible) impl_->PublishLocked();
      return LLM_SUCCESS;
    }
  }
  ADXL_ERROR("RemoveCacheKey: %s is not registered", KeyText(key).c_str());
  return LLM_KV_CACHE_NOT_EXIST;
}

Status CacheManager::CheckLinkStatus(uint64_t remote_cluster_id) {
  // GetLinkInfo only reads the engine's link table (no network I/O); it
  // runs outside mu all the same, as every call into the engine does.
  OpContext ctx;
  OpGuard guard(impl_.get());  // Finalize waits for us before the engine goes
  std::string name;
  {
    adxl::MutexLock lock(&impl_->mu);
    auto it = impl_->links.find(remote_cluster_id);
    if (impl_->live && it == impl_->links.end()) {
      ADXL_ERROR("CheckLinkStatus: cluster %lu is not linked", static_cast<unsigned long>(remote_cluster_id));
      return LLM_NOT_YET_LINK;
    }
    if (impl_->BeginLocked(&ctx) != LLM_SUCCESS) return LLM_FAILED;
    guard.Activate();
    name = it->second->engine;
  }
  adxl::ext::LinkInfo info;
  const Status s = adxl::ext::GetLinkInfo(*ctx.engine, name.c_str(), info);
  if (s == adxl::NOT_CONNECTED) {
    ADXL_ERROR("CheckLinkStatus: the engine has no link to cluster %lu (%s)",
               static_cast<unsigned long>(remote_cluster_id), name.c_str());
    return LLM_NOT_YET_LINK;
  }
  if (s != adxl::SUCCESS) return FromEngine(s);
  if (info.failed) {
    ADXL_ERROR("CheckLinkStatus: the link to cluster %lu (%s) failed; unlink and link again",
               static_cast<unsigned long>(remote_cluster_id), name.c_str());
    return LLM_FAILED;
  }
  return LLM_SUCCESS;
}
// ---- end of Python-surface additions ----

}  // namespace llm_datadist::internal
