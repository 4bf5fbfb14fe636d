// The cache layer's local caches and the table it publishes of them: one
// of the three parts of CacheManager's state (cache_manager_impl.h), with
// the links (link_table.h) and the layer-wise tasks (task_workers.h).
//
// Lock: LocalCaches::mu guards `caches`, `next_id` and `addrs`: what is
// registered here and, through PublishLocked, what peers see of it.  Held
// across calls into the local engine that do not wait for a peer
// (RegisterMem, PublishMetadata, which queues the table for the control
// thread); never across DeregisterMem, which waits for the peers'
// acknowledgements (Unregister, and Register when it fails part-way, hand
// the handles back to be released outside).  The engine's own locks are leaves under it: the engine never
// calls back into the cache layer.
// Order: CacheManager::Impl::mu -> LocalCaches::mu -> the engine's locks.
// Never held with LinkTable::mu or TaskWorkers::mu.
#ifndef LLM_DATADIST_SRC_LOCAL_CACHES_H_
#define LLM_DATADIST_SRC_LOCAL_CACHES_H_

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "adxl/adxl_engine.h"
#include "cache_types.h"
#include "common/thread_annotations.h"

namespace llm_datadist::internal {

struct LocalCache {
  Cache cache;
  std::vector<adxl::MemHandle> handles;
  std::vector<CacheKey> keys;
  std::optional<BlocksCacheKey> blocks_key;
};

// What Register checks and records of one registration.
struct Registration {
  const CacheDesc &desc;
  const std::vector<uintptr_t> &addrs;
  const std::vector<CacheKey> &keys;
  const std::optional<BlocksCacheKey> &blocks_key;
  bool paged;
  std::optional<bool> remote_accessible;
};

class LocalCaches {
 public:
  mutable adxl::Mutex mu;
  std::map<int64_t, LocalCache> caches ADXL_GUARDED_BY(mu);
  int64_t next_id ADXL_GUARDED_BY(mu) = 1;
  std::set<uintptr_t> addrs ADXL_GUARDED_BY(mu);  // every registered tensor address

  // Publishes the remote-accessible caches as `cluster_id`'s table on `engine`.
  Status PublishLocked(adxl::AdxlEngine &engine, uint64_t cluster_id) const ADXL_REQUIRES(mu);
  // The rules of docs/contract.md §10 (one ERROR line naming `what` per
  // refusal), then the tensors registered with `engine` and the table
  // republished.  When the engine refuses a tensor or the table would be
  // over its limit, the tensors registered so far go to *undo: the caller
  // deregisters them once it holds no lock (DeregisterMem waits for peers).
  Status Register(const char *what, adxl::AdxlEngine &engine, uint64_t cluster_id, const Registration &r,
                  Cache &cache, std::vector<adxl::MemHandle> *undo) ADXL_EXCLUDES(mu);
  // Drops cache `id` from the table (unpublished first when peers saw it);
  // its engine handles go to *handles, for DeregisterMem without the lock.
  Status Unregister(adxl::AdxlEngine &engine, uint64_t cluster_id, int64_t id,
                    std::vector<adxl::MemHandle> *handles) ADXL_EXCLUDES(mu);
  // Withdraws `key` (its slot stays, naming nothing); republishes when its
  // cache is published (*published: then the caller waits for the peers,
  // adxl::ext::AwaitMetadataDelivered, outside the locks).
  Status RemoveKey(adxl::AdxlEngine &engine, uint64_t cluster_id, const CacheKey &key, bool *published)
      ADXL_EXCLUDES(mu);
  // A copy of the registered cache `id`, or LLM_KV_CACHE_NOT_EXIST.
  Status Get(int64_t id, Cache *cache) const ADXL_EXCLUDES(mu);
  size_t AddrCount() const ADXL_EXCLUDES(mu);
  // Empties the table (Finalize); the caller deregisters what it returns.
  std::map<int64_t, LocalCache> TakeAll() ADXL_EXCLUDES(mu);
};

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_SRC_LOCAL_CACHES_H_
