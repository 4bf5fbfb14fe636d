// CacheManager (src/llm_datadist/cache_manager.h): life cycle, the
// registration rules of docs/contract.md §10 and the published cache table.
// Links and their metadata reads: links.cc; pull / push: pull_push.cc.
// Locks: cache_manager_impl.h (no network I/O under Impl::mu; per-link state
// under each link's own lock).
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

std::string KeyText(const CacheKey &k) {
  return "CacheKey(cluster_id=" + std::to_string(k.cluster_id) + ", req_id=" + std::to_string(k.req_id) +
         ", model_id=" + std::to_string(k.model_id) + ", prefix_id=" + std::to_string(k.prefix_id) + ")";
}

bool SameKey(const CacheKey &a, const CacheKey &b) {
  return a.req_id == b.req_id && a.model_id == b.model_id && a.prefix_id == b.prefix_id;
}

Status CacheManager::Impl::BeginLocked(const char *what, OpContext *ctx, OpGuard *guard) {
  if (!live || stopping) {
    ADXL_ERROR("%s: the cache layer is not initialized, or is finalizing", what);
    return LLM_FAILED;
  }
  ++busy;
  guard->Activate();
  ctx->engine = engine;
  ctx->timeout_ms = timeout_ms;
  ctx->cluster_id = cluster_id;
  ctx->listen = Listens(local_name) ? local_name : std::string();
  return LLM_SUCCESS;
}

bool Listens(const std::string &name) {
  const auto colon = name.rfind(':');
  if (colon == std::string::npos || name.find(']', colon) != std::string::npos) return false;
  if (name[0] != '[' && name.find(':') != colon) return false;  // a bare IPv6 address: no port
  return std::strtoul(name.c_str() + colon + 1, nullptr, 10) > 0;
}

Status CacheManager::Impl::TakeLayerOptions(const char *what,
                                            std::map<adxl::AscendString, adxl::AscendString> *options) {
  auto it = options->find(adxl::AscendString(kTransferBackendOption));
  if (it == options->end()) return LLM_SUCCESS;
  const std::string v = it->second.GetString();
  if (!v.empty() && v != "hixl" && v != "adxl") {
    ADXL_ERROR("%s: %s '%s' is not one of hixl, adxl (or empty)", what, kTransferBackendOption, v.c_str());
    return LLM_PARAM_INVALID;
  }
  // The vendor's default backend (communicators) links both ways; its HIXL
  // backend only lets the linking side move data.
  two_way = v != "hixl";
  options->erase(it);
  return LLM_SUCCESS;
}

Status CacheManager::Impl::Begin(const char *what, OpContext *ctx, OpGuard *guard) {
  adxl::MutexLock lock(&mu);
  return BeginLocked(what, ctx, guard);
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
  std::vector<std::string> gone_stale;
  std::map<int64_t, LocalCache> gone_caches;
  std::unique_ptr<adxl::AdxlEngine> gone_owned;
  adxl::AdxlEngine *eng = nullptr;
  int32_t t = 1000;
  uint64_t id = 0;
  {
    adxl::MutexLock lock(&mu);
    idle.Wait(&mu, [this]() ADXL_REQUIRES(mu) { return busy == 0; });
    gone_links.swap(links);
    gone_stale.swap(stale);
    gone_caches.swap(caches);
    addrs.clear();
    incoming.clear();
    gone_owned = std::move(owned);
    eng = engine;
    t = timeout_ms;
    id = cluster_id;
  }
  for (auto &l : gone_links) {
    // A reverse link's opener needs no notify (it linked; its engine sees ours go).
    if (!l.second->reverse) TellUnlinked(*eng, l.second->engine, id, t);
    eng->Disconnect(l.second->engine.c_str(), t);
  }
  for (const std::string &name : gone_stale) eng->Disconnect(name.c_str(), t);
  for (auto &c : gone_caches) {
    for (adxl::MemHandle h : c.second.handles) eng->DeregisterMem(h);
  }
  if (gone_owned) gone_owned->Finalize();
  gone_owned.reset();
  adxl::MutexLock lock(&mu);
  engine = nullptr;
  live = false;
  stopping = false;
  two_way = true;
}

void CacheManager::Impl::DrainNotifies() {
  std::vector<adxl::NotifyDesc> got;
  if (engine->GetNotifies(got) != adxl::SUCCESS) return;
  for (auto &n : got) {
    const std::string name = n.name.GetString();
    if (name == kLinkNotify || name == kUnlinkNotify) {
      // "<cluster id>[ <listen name>]": the opener's id, and where it listens.
      const char *msg = n.notify_msg.GetString();
      char *end = nullptr;
      const uint64_t id = strtoull(msg, &end, 10);
      // A new link from that cluster, or its unlink, ends the reverse
      // connection made for its earlier link (disconnected outside mu).
      auto l = links.find(id);
      if (l != links.end() && l->second->reverse) {
        stale.push_back(l->second->engine);
        links.erase(l);
      }
      if (name == kLinkNotify) {
        incoming[id] = *end == ' ' ? std::string(end + 1) : std::string();
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
  // Caches may be registered after links exist, device ones too (the vendor
  // allows it; omni-infer registers layer groups lazily): linked peers learn
  // the new cache from the republished table, with no relink.
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
    auto in = incoming.find(remote_cluster);
    if (in == incoming.end()) {
      ADXL_ERROR("%s: cluster %lu is not linked", what, static_cast<unsigned long>(remote_cluster));
    } else if (!two_way) {
      ADXL_ERROR("%s: cluster %lu linked to this cluster; with llm.TransferBackend hixl only the linking side moves "
                 "data (link from this side)",
                 what, static_cast<unsigned long>(remote_cluster));
    } else if (in->second.empty()) {
      ADXL_ERROR("%s: cluster %lu linked to this cluster but does not listen (no llm.ListenIpInfo), so this side "
                 "cannot reach it (give it a listen address, or link from this side)",
                 what, static_cast<unsigned long>(remote_cluster));
    } else {
      ADXL_ERROR("%s: cluster %lu linked to this cluster, but connecting back to %s failed", what,
                 static_cast<unsigned long>(remote_cluster), in->second.c_str());
    }
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
  std::map<adxl::AscendString, adxl::AscendString> engine_options = options;
  Status s = impl_->TakeLayerOptions("Initialize", &engine_options);
  if (s != LLM_SUCCESS) return s;
  auto engine = std::make_unique<adxl::AdxlEngine>();
  s = engine->Initialize(local_engine.c_str(), engine_options);
  if (s != adxl::SUCCESS) {
    ADXL_ERROR("Initialize: engine %s failed to initialize: engine status %u", local_engine.c_str(), s);
    return FromEngine(s);
  }
  impl_->cluster_id = cluster_id;
  impl_->local_name = local_engine;
  impl_->engine_options = engine_options;
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
    Status s = impl_->BeginLocked("UnregisterCache", &ctx, &guard);
    if (s != LLM_SUCCESS) return s;
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

Status CacheManager::GetNotifies(std::vector<adxl::NotifyDesc> &notifies) {
  adxl::MutexLock lock(&impl_->mu);
  if (!impl_->live || impl_->stopping) return LLM_FAILED;
  impl_->DrainNotifies();
  for (auto &n : impl_->kept) notifies.push_back(std::move(n));
  impl_->kept.clear();
  return LLM_SUCCESS;
}

// ---- Python-surface additions: RemoveCacheKey (CheckLinkStatus: links.cc) ----
// No network I/O: RemoveCacheKey rewrites the local cache table.

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

// ---- end of Python-surface additions ----

}  // namespace llm_datadist::internal
