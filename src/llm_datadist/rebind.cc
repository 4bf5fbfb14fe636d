// CacheManager::GetCache and CacheManager::Rebind (cache_manager.h, the
// LlmDataDist additions).  Rebind exists for the vendor's SetRole, which may
// move a cluster's listener: the engine's local name is fixed at
// Initialize, so a new name needs a new engine, and peers address caches by
// id, so every cache keeps its id across the move.
#include <functional>
#include <utility>

#include "cache_manager.h"
#include "cache_manager_impl.h"
#include "common/log.h"

namespace llm_datadist::internal {

std::function<void()> rebind_window_for_test;

uint64_t CacheManager::Generation() const {
  adxl::MutexLock lock(&impl_->mu);
  return impl_->live && !impl_->stopping ? impl_->generation : 0;
}

Status CacheManager::GetCache(int64_t cache_id, Cache &cache) const {
  {
    adxl::MutexLock lock(&impl_->mu);
    if (!impl_->live || impl_->stopping) return LLM_FAILED;
  }
  return impl_->store.Get(cache_id, &cache);
}

namespace {

void Deregister(adxl::AdxlEngine &engine, const std::vector<adxl::MemHandle> &handles) {
  for (adxl::MemHandle h : handles) engine.DeregisterMem(h);
}

// The vendor's switch needs no link either way: true, with the ERROR line,
// when one exists or is being made.
bool LinksExist(const char *what, adxl::AdxlEngine &engine, LinkTable &peers) ADXL_EXCLUDES(peers.mu) {
  adxl::MutexLock lock(&peers.mu);
  peers.DrainNotifiesLocked(engine);
  if (peers.NoneLocked()) return false;
  ADXL_ERROR("%s: %zu outgoing and %zu incoming links exist; unlink first", what, peers.links.size(),
             peers.incoming.size());
  return true;
}

size_t TaskCount(const TaskWorkers &tasks) ADXL_EXCLUDES(tasks.mu) {
  adxl::MutexLock lock(&tasks.mu);
  return tasks.workers.size();
}

}  // namespace

Status CacheManager::Rebind(const std::string &local_engine,
                            const std::map<adxl::AscendString, adxl::AscendString> &options_in, const char *what,
                            uint64_t generation) {
  {
    // The vendor's switch needs no link either way, whatever it changes; the
    // same name keeps the engine.
    adxl::MutexLock lock(&impl_->mu);
    if (!impl_->live || impl_->stopping || (generation != 0 && generation != impl_->generation)) return LLM_FAILED;
    generation = impl_->generation;
    if (LinksExist(what, *impl_->engine, impl_->peers)) return LLM_EXIST_LINK;
    if (local_engine == impl_->local_name) return LLM_SUCCESS;
  }
  // The backend is chosen at Initialize; the engine gets the rest.
  std::map<adxl::AscendString, adxl::AscendString> options = options_in;
  options.erase(adxl::AscendString(kTransferBackendOption));
  // The fresh engine starts outside the lock: Initialize binds a port and
  // starts threads, and nothing of this manager is touched yet.
  auto fresh = std::make_unique<adxl::AdxlEngine>();
  const adxl::Status es = fresh->Initialize(local_engine.c_str(), options);
  if (es != adxl::SUCCESS) {
    ADXL_ERROR("%s: an engine on %s failed to initialize: engine status %u", what, local_engine.c_str(), es);
    return FromEngine(es);
  }
  if (rebind_window_for_test) rebind_window_for_test();
  std::unique_ptr<adxl::AdxlEngine> old;
  // Registered with the fresh engine (kept when the move fails part-way, to
  // be deregistered below), and the old engine's once the fresh one is in.
  std::map<int64_t, std::vector<adxl::MemHandle>> fresh_handles, old_handles;
  Status s = LLM_SUCCESS;
  {
    adxl::MutexLock lock(&impl_->mu);
    if (!impl_->live || impl_->stopping || impl_->generation != generation) {
      // Finalized meanwhile, perhaps initialized again: the engine there is
      // the new Initialize's, with its own name and options.
      s = LLM_FAILED;
    } else if (!impl_->owned) {
      ADXL_ERROR("%s: this cache layer uses an engine it does not own; it cannot move it", what);
      s = LLM_FEATURE_NOT_ENABLED;
    } else {
      const size_t tasks = TaskCount(impl_->tasks);
      if (LinksExist(what, *impl_->engine, impl_->peers)) {
        s = LLM_EXIST_LINK;
      } else if (impl_->busy > 0 || tasks != 0) {
        ADXL_ERROR("%s: %d operations and %zu layer-wise tasks are under way", what, impl_->busy, tasks);
        s = LLM_LINK_BUSY;
      }
    }
    if (s == LLM_SUCCESS) {
      // Registration is local (no peer involved): done here, so the table
      // and the engine change together.
      // Under Impl::mu with busy 0: no other caller uses the engine.
      adxl::MutexLock caches_lock(&impl_->store.mu);
      for (const auto &c : impl_->store.caches) {
        const Cache &cache = c.second.cache;
        const uint64_t bytes = TensorBytes(cache.cache_desc);
        const adxl::MemType type = cache.cache_desc.placement == Placement::DEVICE ? adxl::MEM_DEVICE : adxl::MEM_HOST;
        std::vector<adxl::MemHandle> &hs = fresh_handles[c.first];
        for (uintptr_t a : cache.tensor_addrs) {
          adxl::MemHandle h = nullptr;
          const adxl::Status r = fresh->RegisterMem({a, bytes}, type, h);
          if (r != adxl::SUCCESS) {
            ADXL_ERROR("%s: re-registering cache %ld with the new engine failed: engine status %u", what,
                       static_cast<long>(c.first), r);
            s = FromEngine(r);
            break;
          }
          hs.push_back(h);
        }
        if (s != LLM_SUCCESS) break;
      }
      // A failed move leaves the table and the engine as they were: what
      // the fresh engine registered is deregistered after the locks (below).
      if (s == LLM_SUCCESS) {
        for (auto &c : impl_->store.caches) {
          old_handles[c.first] = std::move(c.second.handles);
          c.second.handles = std::move(fresh_handles[c.first]);
        }
        old = std::move(impl_->owned);
        impl_->owned = std::move(fresh);
        impl_->engine = impl_->owned.get();
        impl_->local_name = local_engine;
        impl_->engine_options = options;
        s = impl_->store.PublishLocked(*impl_->engine, impl_->cluster_id);
        if (s != LLM_SUCCESS) ADXL_ERROR("%s: publishing the cache table on %s failed", what, local_engine.c_str());
      }
    }
  }
  if (fresh) {
    // Not used: failed before the swap.  Deregistered with no lock held:
    // DeregisterMem waits for the acknowledgements of the peers that heard
    // of the region (one may have connected to the fresh engine, which
    // listens), and no lock of the manager is held across a wait on a peer.
    // Nobody else sees these handles: the fresh engine was never swapped in.
    for (auto &h : fresh_handles) Deregister(*fresh, h.second);
    fresh->Finalize();
  }
  if (old) {
    for (auto &h : old_handles) Deregister(*old, h.second);
    old->Finalize();
  }
  return s;
}

}  // namespace llm_datadist::internal
