// CacheManager: the LLM-DataDist cache layer on top of the public AdxlEngine
// API (docs/contract.md §10; docs/cache_layer.md).  Internal: users reach it
// through the vendor's C++ API (include/llm_datadist/llm_datadist.h,
// llm_datadist.cc) or the Python package llm_datadist.
//
// Contract
//  - A CacheManager belongs to one cluster (cluster_id) and one engine: it
//    either owns an engine (Initialize(cluster_id, local_engine, options)) or
//    is given one (Initialize(cluster_id, engine, local_engine)) that must stay
//    initialized until Finalize.  Every method returns LLM_FAILED before
//    Initialize and after Finalize; every method is thread-safe.
//  - RegisterCache (not paged: one address per tensor, dimension 0 = batch)
//    and RegisterBlocksCache (paged: dimension 0 = block) register every
//    tensor address with the engine.  At most 240 addresses over all
//    registrations; every address unique; remote_accessible defaults to true
//    for Placement::DEVICE and false for HOST; caches of either placement
//    may be registered while links exist (peers learn them from the
//    republished table, no relink).  Only remote-accessible caches are
//    visible to peers; any registered cache may be the local side of a
//    transfer.
//  - LinkClusters connects to each remote cluster's engine and reads its
//    metadata (below); LLM_LINK_FAILED when the peer cannot be reached.
//    Links are two-way, as the vendor's default backend's: the linked
//    cluster may pull from / push to the linking one, over a connection it
//    makes back on first use (EnsureReverse) to the address the linking
//    side announced: a linking side without a listen address starts
//    listening on an ephemeral port before its first link, as the vendor's
//    communicator needs no listener for this.  With the option llm.TransferBackend
//    "hixl" (Initialize's options) links are one-way, as the vendor's HIXL
//    backend's: only the linking side moves data.
//    Pulling from or pushing to one's own cluster is LLM_PARAM_INVALID.
//  - Pull* READs remote tensors into a local registered cache; Push* WRITEs a
//    local registered cache into remote tensors.  Layer ranges select layers
//    of tensor_num_per_layer consecutive tensors; each call is one engine
//    TransferSync (sync_timeout_ms), SUCCESS meaning every byte is in place.
//  - Locks (src/llm_datadist/cache_manager_impl.h): no network I/O
//    (TransferSync, Connect, Disconnect, SendNotify, DeregisterMem, metadata
//    reads) happens under any lock of the manager; each link has its own state and
//    lock, so callers on different links never wait for each other, and a
//    peer that does not answer stalls only the callers that talk to it.
//  - Each rejected call returns a status and logs one line
//    "[llm_datadist ERROR pid] ..." on stderr; nothing throws.
//
// Metadata exchange (how a puller learns remote addresses, shapes, keys)
//  Every manager publishes its cache table through its engine
//  (adxl/adxl_ext.h PublishMetadata, name "llm_datadist.cache_table"): the
//  cluster id, then every remote-accessible cache (id, description, tensor
//  addresses, CacheKeys, BlocksCacheKey), republished on every change.  A
//  peer that links to it receives the table with the engine's handshake and
//  every new version over the engine's control channel, without asking; a
//  pull or push that names a cache missing from the table it holds asks the
//  owner for its current table once (refresh on miss) before it reports
//  LLM_KV_CACHE_NOT_EXIST.  No fixed address, no window to READ: the engine
//  tells peers what they need to know.  The table's size is bounded by the
//  engine's metadata limit (1 MiB per blob).
//  Incoming links: LinkClusters sends the notify {"llm_datadist.link",
//  "<cluster_id>"} (and UnlinkClusters "llm_datadist.unlink") to the remote
//  engine; a manager drains its engine's notifies when it must know whether a
//  link exists and keeps the others for GetNotifies (with a shared engine,
//  read notifies through the manager, not the engine).
#ifndef LLM_DATADIST_CACHE_MANAGER_H_
#define LLM_DATADIST_CACHE_MANAGER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "cache_task.h"
#include "cache_types.h"

namespace llm_datadist::internal {

// The owner's say over the listener's moves: LlmDataDist's
// (llm_datadist_impl.h), whose SetRole, MoveListener and rank-table links
// move the listener and hold it.  The listen-on-first-link move
// (ListenToBeReachedBack) asks it first and tells it when it is done, so
// that it never moves a listener a rank-table link holds, nor runs beside
// another move.  Called with no lock of the manager held; an implementation
// takes only its own lock and calls nothing of the manager that waits.
class ListenerMoves {
 public:
  virtual ~ListenerMoves() = default;
  // A token > 0 when no rank-table link holds the listener and no other
  // move is under way: the move is then marked under way (others are
  // refused) until EndFirstLinkMove(token).  0: refused, with no line (the
  // move is best effort: the link is made as a client only).
  virtual uint64_t BeginFirstLinkMove() = 0;
  virtual void EndFirstLinkMove(uint64_t token) = 0;
};

class CacheManager {
 public:
  CacheManager();
  ~CacheManager();  // runs Finalize()
  CacheManager(const CacheManager &) = delete;
  CacheManager &operator=(const CacheManager &) = delete;

  // Owns an engine initialized with local_engine ("ip:port" to be linkable)
  // and options (AdxlEngine::Initialize's).
  Status Initialize(uint64_t cluster_id, const std::string &local_engine,
                    const std::map<adxl::AscendString, adxl::AscendString> &options = {});
  // Uses `engine` (already initialized as `local_engine`), which must outlive
  // this manager's Finalize.
  Status Initialize(uint64_t cluster_id, adxl::AdxlEngine &engine, const std::string &local_engine);
  // Unlinks, unregisters every cache, drops the notifies read and not yet
  // fetched (GetNotifies); finalizes an owned engine.  Idempotent.
  void Finalize();

  // Timeout of every transfer (default 1000 ms, must be > 0).
  Status SetSyncTimeout(int32_t timeout_ms);
  uint64_t ClusterId() const;

  Status RegisterCache(const CacheDesc &desc, const std::vector<uintptr_t> &addrs,
                       const std::vector<CacheKey> &cache_keys, std::optional<bool> remote_accessible,
                       Cache &cache);
  Status RegisterBlocksCache(const CacheDesc &desc, const std::vector<uintptr_t> &addrs,
                             const std::optional<BlocksCacheKey> &blocks_cache_key,
                             std::optional<bool> remote_accessible, Cache &cache);
  // LLM_KV_CACHE_NOT_EXIST for an unknown id.
  Status UnregisterCache(int64_t cache_id);

  // rets gets one status per cluster; the result is LLM_SUCCESS when all
  // succeeded, else the last failure (the vendor's).  `quiet`: a cluster's
  // failure is a WARN line of this layer (the engine's own lines stay), and
  // so is the refusal of a call that finds the layer finalized, for a caller
  // that retries and writes the one ERROR line itself (a rank-table link).
  Status LinkClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                      int32_t timeout_ms = 3000, bool quiet = false);
  // By remote_cluster_id.  Drops the link to the cluster and the record of
  // its link to this one; tells the peer.  force: LLM_SUCCESS whatever the
  // peer answers, also for a cluster with no link either way (the vendor's
  // forced unlink); without it, on the two-way backend, such a cluster is
  // asked at remote_engine as the vendor's (LLM_SUCCESS when it answers,
  // LLM_UNLINK_FAILED when it cannot be reached; LLM_NOT_YET_LINK on the
  // hixl backend), a failed disconnect is LLM_UNLINK_FAILED, and a cluster
  // with an empty remote_engine (the vendor wants exactly one remote ip
  // info) LLM_PARAM_INVALID, nothing dropped.
  Status UnlinkClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                        int32_t timeout_ms = 3000, bool force = false);
  // Undoes links this side made (a failed rank-table link's): as a forced
  // UnlinkClusters of the outgoing links only; a link the cluster made to
  // this one (its own LinkClusters, unrelated) stays recorded.
  Status UndoLinks(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets, int32_t timeout_ms);

  // Remote batch entry (by key) -> local cache `dst` at batch_index.  size:
  // bytes per tensor, -1 for the whole batch entry (both sides' entries must
  // then be equal).
  Status PullCache(const CacheKey &key, const Cache &dst, uint32_t batch_index = 0, int64_t size = -1,
                   const LayerRangeArgs &layers = {});
  Status PullCache(const CacheKeyByIdAndIndex &key, const Cache &dst, uint32_t batch_index = 0,
                   int64_t size = -1, const LayerRangeArgs &layers = {});
  // Remote blocks src_blocks[i] -> local blocks dst_blocks[i] of the paged `dst`.
  Status PullBlocks(const BlocksCacheKey &key, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                    const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers = {});
  // A remote non-paged batch entry, cut into dst's block size, -> local
  // blocks dst_blocks (src_blocks must be empty, as in the reference).
  Status PullBlocks(const CacheKey &key, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                    const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers = {});
  Status PullBlocks(const CacheKeyByIdAndIndex &key, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                    const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers = {});
  // Local batch entry -> remote cache `key` at key.batch_index.
  Status PushCache(const CacheKeyByIdAndIndex &key, const Cache &src, uint32_t src_batch_index = 0,
                   int64_t size = -1, const LayerRangeArgs &layers = {});
  // Local blocks src_blocks[i] of the paged `src` -> remote blocks dst_blocks[i].
  Status PushBlocks(const BlocksCacheKey &key, const Cache &src, const std::vector<uint64_t> &src_blocks,
                    const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers = {});

  // Layer-wise push (cache_task.h): validates, then pushes each layer of
  // `src` to every target as soon as synchronizer says the layer is ready,
  // on a background thread owned by this manager.  src_blocks / dst_blocks /
  // dst_block_bytes as the reference's src_block_indices /
  // dst_block_indices / dst_block_memory_size (0: the source block size).
  Status TransferCacheAsync(const Cache &src, std::shared_ptr<LayerSynchronizer> synchronizer,
                            const std::vector<TransferTarget> &targets, const std::vector<uint64_t> &src_blocks,
                            const std::vector<uint64_t> &dst_blocks, uint64_t dst_block_bytes, CacheTask &task);
  // ---- Python-surface additions ----
  // Withdraws `key` (registered by this cluster with RegisterCache): peers can
  // no longer pull its batch entry by key (the entry stays addressable by
  // CacheKeyByIdAndIndex).  LLM_KV_CACHE_NOT_EXIST when no cache holds it.
  Status RemoveCacheKey(const CacheKey &key);
  // LLM_SUCCESS when an outgoing link to remote_cluster_id exists and the
  // engine reports it healthy; LLM_NOT_YET_LINK when there is none;
  // LLM_FAILED when the link failed (a transfer timed out or the peer died):
  // unlink and link again.
  Status CheckLinkStatus(uint64_t remote_cluster_id);
  // ---- end of Python-surface additions ----

  // ---- LlmDataDist (the vendor's C++ API, llm_datadist.h) additions ----
  // Blocks on caches registered with RegisterCache, as the vendor's
  // PullKvBlocks / PushKvBlocks see them: dimension 0 of either cache indexes
  // blocks.  Pull with empty src_blocks: the remote batch entry
  // key.batch_index cut into dst's blocks.
  Status PullBlocksById(const CacheKeyByIdAndIndex &key, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                        const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers = {});
  Status PushBlocksById(const CacheKeyByIdAndIndex &key, const Cache &src, const std::vector<uint64_t> &src_blocks,
                        const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers = {});
  // The registered cache `cache_id` (LLM_KV_CACHE_NOT_EXIST when none).
  Status GetCache(int64_t cache_id, Cache &cache) const;
  // Moves an owned engine to a new local name (SetRole / switch_role: a new
  // listen address, or a client-only name to stop listening): a fresh engine
  // initialized as local_engine with options, every registered cache
  // re-registered with it under the same id, the table republished, then the
  // old engine finalized.  The same name keeps the engine.  LLM_EXIST_LINK
  // while a link exists either way, whatever the name (the vendor's rule);
  // LLM_LINK_BUSY while an operation is under way; LLM_FEATURE_NOT_ENABLED
  // with a shared engine.  `what` names the caller's call in the ERROR line
  // of a refusal (a rank-table link moves the listener too).  LLM_FAILED
  // (no line: the caller says what it was doing) when not initialized, when
  // `generation` (0: whichever runs) is no longer the one running, or when a
  // Finalize came while the fresh engine started: a move that began under
  // one Initialize never replaces the engine of the next.
  Status Rebind(const std::string &local_engine, const std::map<adxl::AscendString, adxl::AscendString> &options,
                const char *what = "SetRole", uint64_t generation = 0);
  // Which Initialize runs: a number every Initialize moves on (0 when not
  // initialized or finalizing), for Rebind's `generation`.
  uint64_t Generation() const;
  // ---- end of LlmDataDist additions ----

  // Who else moves the listener (see ListenerMoves); nullptr, the default:
  // nobody (a manager used on its own).  Set by the owner before
  // Initialize; `moves` must outlive this manager's last LinkClusters.
  void SetListenerMoves(ListenerMoves *moves);

  // Notifies of the engine other than the cache layer's own (see above).
  Status GetNotifies(std::vector<adxl::NotifyDesc> &notifies);
  // Registered addresses over all caches (<= 240).
  size_t RegisteredAddrCount() const;

  class Impl;

 private:
  // Two-way links need the linking side reachable: a cluster that does not
  // listen starts listening (Rebind) on an ephemeral port of the address it
  // reaches clusters[0] from, before its first link (reach_back.cc), unless
  // the owner's ListenerMoves refuses the move (an INFO line, none when
  // `quiet`: LinkClusters').
  void ListenToBeReachedBack(const std::vector<ClusterInfo> &clusters, bool quiet);

  std::unique_ptr<Impl> impl_;
};

// Test seam: when set, Rebind calls it with no lock held once its fresh
// engine started, before it takes the manager's lock again to swap it in
// (the window a Finalize and a new Initialize can fall into).  Tests only.
extern std::function<void()> rebind_window_for_test;

// Does the engine name "ip:port" / "[ipv6]:port" listen (a port > 0)?  The
// one rule for the cache layer and the public LlmDataDist (client only else).
bool Listens(const std::string &name);

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_CACHE_MANAGER_H_
