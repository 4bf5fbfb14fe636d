// LlmDataDist::LlmDataDistImpl: the state of the vendor's LlmDataDist
// (llm_datadist.cc) that our extension reaches too (datadist_access.cc):
// role, options, the listen address, AllocateCache's memory, the
// rank-table links' comms and their holds of the listener, over the
// internal CacheManager.
//
// Locks: Impl::mu guards that state and is never held across a
// CacheManager call that talks to a peer or moves the listener (a move is
// marked under way instead: BeginMove); the one CacheManager call under it
// is Generation, a read (order: Impl::mu -> CacheManager::Impl::mu).  The
// cache layer calls back only through internal::ListenerMoves (its
// listen-on-first-link move, BeginFirstLinkMove / EndFirstLinkMove), with
// none of its own locks held, and those take Impl::mu alone.  CacheManager
// has its own locking (cache_manager_impl.h).
#ifndef LLM_DATADIST_SRC_LLM_DATADIST_IMPL_H_
#define LLM_DATADIST_SRC_LLM_DATADIST_IMPL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "cache_manager.h"
#include "common/log.h"
#include "common/thread_annotations.h"
#include "datadist_access.h"
#include "llm_datadist/llm_datadist.h"

namespace llm_datadist {
namespace facade {

// Frees AdxlEngine::MallocMem memory (AllocateCache's tensors).
struct EngineMemFree {
  void operator()(void *p) const { adxl::AdxlEngine::FreeMem(p); }
};
using EngineMem = std::unique_ptr<void, EngineMemFree>;

// The vendor's types in the cache layer's terms (llm_datadist.cc).
internal::Cache ById(int64_t cache_id);
// The layer ranges of `p` ({first, last} inclusive, {-1, -1}: all);
// LLM_PARAM_INVALID with one ERROR line naming `what` when malformed.
Status ToLayers(const char *what, const KvCacheExtParam &p, internal::LayerRangeArgs *out);
internal::CacheKeyByIdAndIndex ToKey(const CacheIndex &i);

}  // namespace facade

class LlmDataDist::LlmDataDistImpl : public internal::ListenerMoves {
 public:
  LlmDataDistImpl(uint64_t cluster_id, LlmRole role) : cluster_id(cluster_id), role(role) {
    cm.SetListenerMoves(this);
  }

  // LLM_FAILED with one ERROR line unless Initialize succeeded (and no Finalize since).
  Status Ready(const char *what) ADXL_EXCLUDES(mu) {
    adxl::MutexLock lock(&mu);
    if (initialized) return LLM_SUCCESS;
    ADXL_ERROR("%s: LlmDataDist of cluster %lu is not initialized", what, static_cast<unsigned long>(cluster_id));
    return LLM_FAILED;
  }
  // The checks LinkLlmClusters and UnlinkLlmClusters start with: Ready(),
  // then `n` > 0 clusters and a timeout > 0 (LLM_PARAM_INVALID, one ERROR
  // line).  A call refused as a whole gives every cluster its status in `rets`.
  Status AcceptClusters(const char *what, size_t n, int32_t timeout_ms, std::vector<Status> &rets)
      ADXL_EXCLUDES(mu) {
    rets.assign(n, LLM_FAILED);
    const Status s = Ready(what);
    if (s != LLM_SUCCESS) return s;
    if (n == 0 || timeout_ms <= 0) {
      ADXL_ERROR("%s: %zu clusters, timeout %d ms (need clusters and a timeout > 0)", what, n, timeout_ms);
      rets.assign(n, LLM_PARAM_INVALID);
      return LLM_PARAM_INVALID;
    }
    return LLM_SUCCESS;
  }
  // The body of PullKvCache / PullKvBlocks / PushKvCache / PushKvBlocks:
  // Ready(), the layer ranges of `p`, then the one cache-manager call `move`
  // with the remote side's key, the local cache, `args` and the layers.
  template <typename Move, typename... Args>
  Status Transfer(const char *what, const CacheIndex &remote, const Cache &local, const KvCacheExtParam &p, Move move,
                  const Args &...args) ADXL_EXCLUDES(mu) {
    internal::LayerRangeArgs layers;
    Status s = Ready(what);
    if (s == LLM_SUCCESS) s = facade::ToLayers(what, p, &layers);
    return s == LLM_SUCCESS ? (cm.*move)(facade::ToKey(remote), facade::ById(local.cache_id), args..., layers) : s;
  }
  // The registered cache `cache_id`, with one ERROR line when there is none.
  Status Local(const char *what, int64_t cache_id, internal::Cache *c) {
    const Status s = cm.GetCache(cache_id, *c);
    if (s == internal::LLM_KV_CACHE_NOT_EXIST) {
      ADXL_ERROR("%s: cache %ld is not registered here", what, static_cast<long>(cache_id));
    }
    return s;
  }

  // Ready(), then the registered caches of `src_cache` and `dst_cache` (a
  // local copy's two sides), with one ERROR line for the first that fails.
  Status Locals(const char *what, const Cache &src_cache, const Cache &dst_cache, internal::Cache *src,
                internal::Cache *dst) ADXL_EXCLUDES(mu) {
    Status s = Ready(what);
    if (s == LLM_SUCCESS) s = Local(what, src_cache.cache_id, src);
    return s == LLM_SUCCESS ? Local(what, dst_cache.cache_id, dst) : s;
  }

  // The listener's moves (SetRole, MoveListener, a rank-table link's): a
  // move under `expected` (an instance, 0: the one running) that holds
  // `own` of listener_holds itself.  LLM_FAILED with one ERROR line naming
  // `what` when that instance no longer runs; LLM_EXIST_LINK with one while
  // a rank-table link other than the caller's holds the listener or another
  // move is under way.  Else marks the move under way and gives the instance
  // it runs under, the cache layer's generation of that instance (Rebind's,
  // so that the move applies to it or to nothing), the listen address and
  // the engine options.  EndMove ends it: with the move's status
  // `moved_status`, records `moved` (the listen address, empty: client only)
  // and `options` when it succeeded; when a Finalize came meanwhile records
  // nothing and returns LLM_FAILED (one ERROR line unless the move wrote its
  // own: the move went with that instance).
  Status BeginMove(const char *what, int own, uint64_t expected, uint64_t *started, uint64_t *generation,
                   std::string *listening, std::map<adxl::AscendString, adxl::AscendString> *options)
      ADXL_EXCLUDES(mu) {
    adxl::MutexLock lock(&mu);
    if (!initialized || (expected != 0 && instance != expected)) {
      ADXL_ERROR("%s: finalized meanwhile", what);
      return LLM_FAILED;
    }
    if (listener_holds > own || listener_moving) {
      ADXL_ERROR("%s: %s; the listener stays at %s", what,
                 listener_moving ? "another move of the listener is under way"
                                 : "a rank-table link under way (LinkRankTable) uses it",
                 listen.empty() ? "none (client only)" : listen.c_str());
      return LLM_EXIST_LINK;
    }
    listener_moving = true;
    *started = instance;
    // Read under mu (mu -> CacheManager::Impl::mu, a read only): Finalize
    // clears `initialized` under mu before it finalizes the cache layer, so
    // this is the generation of `instance`.
    *generation = cm.Generation();
    *listening = listen;
    *options = engine_options;
    return LLM_SUCCESS;
  }
  Status EndMove(const char *what, uint64_t started, Status moved_status, const std::string &moved,
                 const std::map<adxl::AscendString, adxl::AscendString> &options) ADXL_EXCLUDES(mu) {
    adxl::MutexLock lock(&mu);
    if (!initialized || instance != started) {
      // Rebind's quiet LLM_FAILED (the instance it began under ended) gets the line.
      if (moved_status != LLM_SUCCESS && moved_status != LLM_FAILED) return moved_status;
      ADXL_ERROR("%s: finalized while moving the listener", what);
      return LLM_FAILED;
    }
    listener_moving = false;
    if (moved_status != LLM_SUCCESS) return moved_status;
    listen = moved;
    engine_options = options;
    return LLM_SUCCESS;
  }

  // The cache layer's listen-on-first-link move (ListenerMoves,
  // reach_back.cc) is a move as the others: refused while a rank-table link
  // holds the listener or another move is under way, and marked under way
  // itself (a rank-table link or move starting meanwhile is refused, as
  // during any move).  Unlike theirs, its refusal writes no line (the move
  // is best effort; the link is made as a client only) and its listener is
  // not recorded: it is the cache layer's, for the links' reach-back, not an
  // address the cluster was given (Listening and SetRole see none).  The
  // token is the instance, so that a move of an ended instance clears
  // nothing of the next one.
  uint64_t BeginFirstLinkMove() override ADXL_EXCLUDES(mu) {
    adxl::MutexLock lock(&mu);
    if (!initialized || listener_holds > 0 || listener_moving) return 0;
    listener_moving = true;
    return instance;  // > 0 once initialized
  }
  void EndFirstLinkMove(uint64_t started) override ADXL_EXCLUDES(mu) {
    adxl::MutexLock lock(&mu);
    if (initialized && instance == started) listener_moving = false;  // else Finalize reset it
  }

  // Records a started engine: initialized, listening at `local` (empty:
  // client only), with `engine` as the options a listener move reuses.
  void Started(const std::string &local, const std::map<adxl::AscendString, adxl::AscendString> &engine)
      ADXL_EXCLUDES(mu) {
    adxl::MutexLock lock(&mu);
    initialized = true;
    ++instance;
    listen = local;
    engine_options = engine;
  }

  const uint64_t cluster_id;
  internal::CacheManager cm;  // thread-safe on its own

  adxl::Mutex mu;
  LlmRole role ADXL_GUARDED_BY(mu);
  bool initialized ADXL_GUARDED_BY(mu) = false;
  std::string listen ADXL_GUARDED_BY(mu);  // empty: client only
  std::map<adxl::AscendString, adxl::AscendString> engine_options ADXL_GUARDED_BY(mu);
  // AllocateCache's memory by cache id, until it is freed: by
  // DeallocateCache once the cache is unregistered, else by Finalize after
  // the cache layer deregistered it.
  std::map<int64_t, std::vector<facade::EngineMem>> allocated ADXL_GUARDED_BY(mu);
  std::set<int64_t> deallocating ADXL_GUARDED_BY(mu);  // ids a DeallocateCache is unregistering
  // Rank-table links (ext::LinkRankTable): comm id -> the peers it linked.
  std::map<uint64_t, std::vector<ext::ClusterEngine>> comms ADXL_GUARDED_BY(mu);
  uint64_t next_comm ADXL_GUARDED_BY(mu) = 1;
  // Counts Initializes: a rank-table link that waited across a Finalize and
  // a new Initialize sees the number move (DataDistAccess::Instance).
  uint64_t instance ADXL_GUARDED_BY(mu) = 0;
  // Rank-table links under way (LinkRankTable, from before its move of the
  // listener to its end): each needs the listener where it found or moved
  // it, since its peers reach this cluster there; a move by anyone else
  // waits for none of them and is refused (BeginMove, BeginFirstLinkMove).
  // listener_moving: a move is under way (a link starting meanwhile is
  // refused, HoldListener).
  // Both start again with each instance (Finalize resets them; a link or a
  // move of an older instance releases nothing).
  int listener_holds ADXL_GUARDED_BY(mu) = 0;
  bool listener_moving ADXL_GUARDED_BY(mu) = false;
};

}  // namespace llm_datadist

#endif  // LLM_DATADIST_SRC_LLM_DATADIST_IMPL_H_
