// CacheManager (src/llm_datadist/cache_manager.h): life cycle (Initialize,
// Finalize), the entry points of registration (local_caches.cc does the
// work) and the helpers the cache layer's files share.  Links and their
// metadata reads: links.cc; pull / push: pull_push.cc; layer-wise push:
// layerwise.cc.  Locks: cache_manager_impl.h (no network I/O under any lock
// of the manager; per-link state under each link's own lock).
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

Status CacheManager::Impl::BeginLocked(const char *what, OpContext *ctx, OpGuard *guard, bool quiet) {
  if (!live || stopping) {
    if (quiet) {
      ADXL_WARN("%s: the cache layer is not initialized, or is finalizing", what);
    } else {
      ADXL_ERROR("%s: the cache layer is not initialized, or is finalizing", what);
    }
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

Status TakeLayerOptions(const char *what, std::map<adxl::AscendString, adxl::AscendString> *options,
                        bool *two_way) {
  *two_way = true;
  auto it = options->find(adxl::AscendString(kTransferBackendOption));
  if (it == options->end()) return LLM_SUCCESS;
  const std::string v = it->second.GetString();
  if (!IsTransferBackend(v)) {
    ADXL_ERROR("%s: %s '%s' is not one of hixl, adxl (or empty)", what, kTransferBackendOption, v.c_str());
    return LLM_PARAM_INVALID;
  }
  // The vendor's default backend (communicators) links both ways; its HIXL
  // backend only lets the linking side move data.
  *two_way = v != kOneWayBackend;
  options->erase(it);
  return LLM_SUCCESS;
}

Status CacheManager::Impl::Begin(const char *what, OpContext *ctx, OpGuard *guard, bool quiet) {
  adxl::MutexLock lock(&mu);
  return BeginLocked(what, ctx, guard, quiet);
}

void CacheManager::Impl::EndOp() {
  adxl::MutexLock lock(&mu);
  if (--busy == 0) idle.NotifyAll();
}

Status CacheManager::Impl::Start(const char *what) {
  // An empty table from the start: a peer that links finds a cache layer.
  Status s;
  {
    adxl::MutexLock lock(&store.mu);
    s = store.PublishLocked(*engine, cluster_id);
  }
  if (s != LLM_SUCCESS) {
    ADXL_ERROR("%s: publishing the cache table failed (status %u)", what, s);
    return s;
  }
  live = true;
  ++generation;
  return LLM_SUCCESS;
}

void CacheManager::Impl::Stop() {
  {
    adxl::MutexLock lock(&mu);
    if (!live || stopping) return;
    stopping = true;  // new operations fail from here on: no task starts
  }
  // Tasks first: cancelled (nothing more is pushed), then joined.
  tasks.CancelAndJoinAll();
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
    {
      adxl::MutexLock links_lock(&peers.mu);
      gone_links.swap(peers.links);
      gone_stale.swap(peers.stale);
      peers.incoming.clear();
      // Notifies this instance read and nobody fetched: they go with it, or
      // a GetNotifies after the next Initialize would return them.
      peers.kept.clear();
    }
    gone_caches = store.TakeAll();
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
  adxl::MutexLock links_lock(&peers.mu);
  peers.two_way = true;
}

Status CacheManager::Impl::LocalAndLink(const char *what, const OpContext &ctx, const Cache &c,
                                        uint64_t remote_cluster, Cache *local, std::shared_ptr<RemoteLink> *link) {
  if (remote_cluster == ctx.cluster_id) {
    ADXL_ERROR("%s: cluster %lu is this process's own cluster", what, static_cast<unsigned long>(remote_cluster));
    return LLM_PARAM_INVALID;
  }
  if (store.Get(c.cache_id, local) != LLM_SUCCESS) {
    ADXL_ERROR("%s: local cache %ld is not registered", what, static_cast<long>(c.cache_id));
    return LLM_KV_CACHE_NOT_EXIST;
  }
  adxl::MutexLock lock(&peers.mu);
  auto l = peers.links.find(remote_cluster);
  if (l == peers.links.end()) {
    auto in = peers.incoming.find(remote_cluster);
    if (in == peers.incoming.end()) {
      ADXL_ERROR("%s: cluster %lu is not linked", what, static_cast<unsigned long>(remote_cluster));
    } else if (!peers.two_way) {
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
  *link = l->second;
  return LLM_SUCCESS;
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
  bool two_way = true;
  Status s = TakeLayerOptions("Initialize", &engine_options, &two_way);
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
    return s;
  }
  // Applied only once the Initialize succeeded: a failed one leaves no
  // trace on the next.  No operation sees the layer before mu is released.
  adxl::MutexLock links_lock(&impl_->peers.mu);
  impl_->peers.two_way = two_way;
  return LLM_SUCCESS;
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

size_t CacheManager::RegisteredAddrCount() const { return impl_->store.AddrCount(); }

void CacheManager::SetListenerMoves(ListenerMoves *moves) {
  adxl::MutexLock lock(&impl_->mu);
  impl_->listener_moves = moves;
}

Status CacheManager::Impl::Register(const char *what, const Registration &r, Cache &cache) {
  OpGuard guard(this);  // declared first: it ends the count after the lock is released
  std::vector<adxl::MemHandle> undo;
  adxl::AdxlEngine *eng = nullptr;
  Status s;
  {
    // Under mu: the engine does not change during the registration
    // (RegisterMem is local), as Rebind re-registers under it.
    adxl::MutexLock lock(&mu);
    if (!live || stopping) return LLM_FAILED;
    s = store.Register(what, *engine, cluster_id, r, cache, &undo);
    if (undo.empty()) return s;
    // A refused registration's tensors: their deregistration waits for the
    // peers' acknowledgements, so it runs without the locks, counted in
    // busy so that the engine stays (Finalize waits for it).
    ++busy;
    guard.Activate();
    eng = engine;
  }
  for (adxl::MemHandle h : undo) eng->DeregisterMem(h);
  return s;
}

Status CacheManager::RegisterCache(const CacheDesc &desc, const std::vector<uintptr_t> &addrs,
                                   const std::vector<CacheKey> &cache_keys, std::optional<bool> remote_accessible,
                                   Cache &cache) {
  return impl_->Register("RegisterCache", {desc, addrs, cache_keys, std::nullopt, false, remote_accessible}, cache);
}

Status CacheManager::RegisterBlocksCache(const CacheDesc &desc, const std::vector<uintptr_t> &addrs,
                                         const std::optional<BlocksCacheKey> &blocks_cache_key,
                                         std::optional<bool> remote_accessible, Cache &cache) {
  return impl_->Register("RegisterBlocksCache", {desc, addrs, {}, blocks_cache_key, true, remote_accessible},
                         cache);
}

Status CacheManager::UnregisterCache(int64_t cache_id) {
  OpContext ctx;
  OpGuard guard(impl_.get());
  Status s = impl_->Begin("UnregisterCache", &ctx, &guard);
  if (s != LLM_SUCCESS) return s;
  std::vector<adxl::MemHandle> handles;
  s = impl_->store.Unregister(*ctx.engine, ctx.cluster_id, cache_id, &handles);
  if (s != LLM_SUCCESS) return s;
  // Deregistration waits for the peers' acknowledgements: outside the locks.
  for (adxl::MemHandle h : handles) ctx.engine->DeregisterMem(h);
  return LLM_SUCCESS;
}

Status CacheManager::GetNotifies(std::vector<adxl::NotifyDesc> &notifies) {
  adxl::MutexLock lock(&impl_->mu);
  if (!impl_->live || impl_->stopping) return LLM_FAILED;
  adxl::MutexLock links_lock(&impl_->peers.mu);
  impl_->peers.DrainNotifiesLocked(*impl_->engine);
  for (auto &n : impl_->peers.kept) notifies.push_back(std::move(n));
  impl_->peers.kept.clear();
  return LLM_SUCCESS;
}

// ---- Python-surface additions: RemoveCacheKey (CheckLinkStatus: links.cc) ----
// RemoveCacheKey rewrites the local cache table and, when the cache was
// published, waits (outside the locks) until every linked peer holds the
// new table: a peer's pull by that key after the call returns is
// LLM_KV_CACHE_NOT_EXIST, never a read of memory the caller may be reusing.

Status CacheManager::RemoveCacheKey(const CacheKey &key) {
  OpContext ctx;
  OpGuard guard(impl_.get());
  Status s = impl_->Begin("RemoveCacheKey", &ctx, &guard);
  if (s != LLM_SUCCESS) return s;
  bool published = false;
  s = impl_->store.RemoveKey(*ctx.engine, ctx.cluster_id, key, &published);
  if (s != LLM_SUCCESS || !published) return s;
  const adxl::Status d = adxl::ext::AwaitMetadataDelivered(*ctx.engine, kMetadataName);
  return d == adxl::SUCCESS ? LLM_SUCCESS : FromEngine(d);
}

// ---- end of Python-surface additions ----

}  // namespace llm_datadist::internal
