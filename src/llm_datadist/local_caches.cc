// LocalCaches (local_caches.h): registration by the rules of
// docs/contract.md §10, the table of remote-accessible caches this cluster
// publishes through its engine, and its changes (unregister, key removal).
#include "local_caches.h"

#include <set>
#include <utility>

#include "adxl/adxl_ext.h"
#include "cache_manager_impl.h"
#include "common/log.h"
#include "metadata.h"

namespace llm_datadist::internal {

Status LocalCaches::PublishLocked(adxl::AdxlEngine &engine, uint64_t cluster_id) const {
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
  const Status s = adxl::ext::PublishMetadata(engine, kMetadataName, EncodeTable(cluster_id, records));
  if (s == adxl::RESOURCE_EXHAUSTED || s == adxl::PARAM_INVALID) return LLM_RESOURCE_EXHAUSTED;  // over the limit
  return FromEngine(s);
}

Status LocalCaches::Register(const char *what, adxl::AdxlEngine &engine, uint64_t cluster_id, const Registration &r,
                             Cache &cache, std::vector<adxl::MemHandle> *undo) {
  const CacheDesc &desc = r.desc;
  const std::vector<uintptr_t> &addrs_in = r.addrs;
  const std::vector<CacheKey> &keys = r.keys;
  const std::optional<BlocksCacheKey> &bkey = r.blocks_key;
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
  adxl::MutexLock lock(&mu);
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
  const bool remote = r.remote_accessible.value_or(device);
  // Caches may be registered after links exist, device ones too (the vendor
  // allows it; omni-infer registers layer groups lazily): linked peers learn
  // the new cache from the republished table, with no relink.
  LocalCache lc;
  for (uintptr_t a : addrs_in) {
    adxl::MemHandle h = nullptr;
    Status s = engine.RegisterMem({a, bytes}, device ? adxl::MEM_DEVICE : adxl::MEM_HOST, h);
    if (s != adxl::SUCCESS) {
      ADXL_ERROR("%s: the engine refused tensor 0x%lx (%lu bytes): engine status %u", what,
                 static_cast<unsigned long>(a), static_cast<unsigned long>(bytes), s);
      *undo = std::move(lc.handles);  // deregistered by the caller, without the locks
      return FromEngine(s);
    }
    lc.handles.push_back(h);
  }
  lc.cache.cache_id = next_id++;
  lc.cache.cache_desc = desc;
  lc.cache.tensor_addrs = addrs_in;
  lc.cache.paged = r.paged;
  lc.cache.remote_accessible = remote;
  lc.keys = keys;
  lc.blocks_key = bkey;
  const int64_t id = lc.cache.cache_id;
  caches.emplace(id, std::move(lc));
  if (remote && PublishLocked(engine, cluster_id) != LLM_SUCCESS) {
    ADXL_ERROR("%s: the cache table is over the engine's metadata limit (too many keys)", what);
    *undo = std::move(caches[id].handles);  // deregistered by the caller, without the locks
    caches.erase(id);
    PublishLocked(engine, cluster_id);
    return LLM_RESOURCE_EXHAUSTED;
  }
  addrs.insert(addrs_in.begin(), addrs_in.end());
  cache = caches[id].cache;
  return LLM_SUCCESS;
}


Status LocalCaches::Unregister(adxl::AdxlEngine &engine, uint64_t cluster_id, int64_t id,
                               std::vector<adxl::MemHandle> *handles) {
  adxl::MutexLock lock(&mu);
  auto it = caches.find(id);
  if (it == caches.end()) {
    ADXL_ERROR("UnregisterCache: cache %ld is not registered", static_cast<long>(id));
    return LLM_KV_CACHE_NOT_EXIST;
  }
  const bool remote = it->second.cache.remote_accessible;
  for (uintptr_t a : it->second.cache.tensor_addrs) addrs.erase(a);
  *handles = std::move(it->second.handles);
  caches.erase(it);
  // Unpublish first, so that a peer that re-reads never sees a gone region.
  if (remote) PublishLocked(engine, cluster_id);
  return LLM_SUCCESS;
}

Status LocalCaches::RemoveKey(adxl::AdxlEngine &engine, uint64_t cluster_id, const CacheKey &key, bool *published) {
  *published = false;
  adxl::MutexLock lock(&mu);
  for (auto &entry : caches) {
    LocalCache &lc = entry.second;
    for (CacheKey &k : lc.keys) {
      if (!SameKey(k, key)) continue;
      // The slot stays (keys[i] names batch entry i) and names nothing: a
      // key no caller can form (the Python layer refuses req_id and
      // prefix_id both 2**64-1).
      k.req_id = UINT64_MAX;
      k.model_id = UINT64_MAX;
      k.prefix_id = UINT64_MAX;
      if (lc.cache.remote_accessible) {
        const Status s = PublishLocked(engine, cluster_id);
        if (s != LLM_SUCCESS) return s;
        *published = true;
      }
      return LLM_SUCCESS;
    }
  }
  ADXL_ERROR("RemoveCacheKey: %s is not registered", KeyText(key).c_str());
  return LLM_KV_CACHE_NOT_EXIST;
}

Status LocalCaches::Get(int64_t id, Cache *cache) const {
  adxl::MutexLock lock(&mu);
  auto it = caches.find(id);
  if (it == caches.end()) return LLM_KV_CACHE_NOT_EXIST;
  *cache = it->second.cache;
  return LLM_SUCCESS;
}

size_t LocalCaches::AddrCount() const {
  adxl::MutexLock lock(&mu);
  return addrs.size();
}

std::map<int64_t, LocalCache> LocalCaches::TakeAll() {
  std::map<int64_t, LocalCache> gone;
  adxl::MutexLock lock(&mu);
  gone.swap(caches);
  addrs.clear();
  return gone;
}

}  // namespace llm_datadist::internal
