// CacheManager's state (src/llm_datadist/cache_manager.h), shared by
// cache_manager.cc (life cycle, registration), links.cc, pull_push.cc,
// rebind.cc, reach_back.cc and layerwise.cc.  Split by job into parts, each
// with its own lock and the fields that lock guards:
//  - Impl (here), Impl::mu: the life cycle: live, stopping, the count of
//    operations doing I/O (busy), the engine (owned or given), its name and
//    options, the cluster id and the sync timeout;
//  - LocalCaches (local_caches.h): the registered caches and the table
//    published of them;
//  - LinkTable (link_table.h): the links either way and the peers' tables
//    (RemoteLink, one lock each), kept notifies;
//  - TaskWorkers (task_workers.h): the layer-wise tasks' threads
//    (CacheTask::State, one lock each).
//
// Impl::mu is held for the life cycle's fields, and across the parts' work
// only where the engine itself may change under it otherwise (Initialize,
// Rebind, Finalize) or the work is local: registration (RegisterMem,
// PublishMetadata, which queues), GetNotifies, the checks of Rebind and
// ListenToBeReachedBack.  Never across a TransferSync, Connect, Disconnect,
// SendNotify, DeregisterMem or a metadata refresh.  An operation that does
// network I/O counts itself in `busy` under Impl::mu (Begin), takes a copy
// of what it needs (the engine pointer, which stays valid while busy > 0:
// Rebind refuses and Finalize waits while it is) and then takes each
// part's lock on its own, for table work only.
// Order: Impl::mu -> one of {LocalCaches::mu, LinkTable::mu,
// TaskWorkers::mu} -> (TaskWorkers: CacheTask::State::mu) -> the engine's
// locks.  The three parts' locks are never held together; RemoteLink::mu is
// a leaf taken without any other.  The engine never calls back into the
// cache layer, so its locks are leaves.
#ifndef LLM_DATADIST_SRC_CACHE_MANAGER_IMPL_H_
#define LLM_DATADIST_SRC_CACHE_MANAGER_IMPL_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "common/thread_annotations.h"
#include "cache_manager.h"
#include "cache_task.h"
#include "link_table.h"
#include "local_caches.h"
#include "metadata.h"
#include "task_workers.h"

namespace llm_datadist::internal {

// What an operation doing I/O outside Impl::mu takes with it.
class OpGuard;

struct OpContext {
  adxl::AdxlEngine *engine = nullptr;
  int32_t timeout_ms = 1000;
  uint64_t cluster_id = 0;
  std::string listen;  // this engine's name when it listens (peers can connect to it), else empty
};

class CacheManager::Impl {
 public:
  // The life cycle (see the top of this file).
  mutable adxl::Mutex mu;
  adxl::CondVar idle;  // busy dropped to 0

  bool live ADXL_GUARDED_BY(mu) = false;
  bool stopping ADXL_GUARDED_BY(mu) = false;  // Finalize in progress: new operations fail
  int busy ADXL_GUARDED_BY(mu) = 0;           // operations doing I/O outside mu
  uint64_t cluster_id ADXL_GUARDED_BY(mu) = 0;
  std::string local_name ADXL_GUARDED_BY(mu);
  // The owned engine's options (Initialize's, less the layer's own), for a
  // Rebind that only adds a listener (reach_back.cc).
  std::map<adxl::AscendString, adxl::AscendString> engine_options ADXL_GUARDED_BY(mu);
  std::unique_ptr<adxl::AdxlEngine> owned ADXL_GUARDED_BY(mu);
  adxl::AdxlEngine *engine ADXL_GUARDED_BY(mu) = nullptr;
  int32_t timeout_ms ADXL_GUARDED_BY(mu) = 1000;
  // Counts the Initializes that started (Start): a Rebind compares it across
  // the start of its fresh engine, made with no lock held.
  uint64_t generation ADXL_GUARDED_BY(mu) = 0;
  // The owner's say over the listener's moves (SetListenerMoves), asked by
  // the listen-on-first-link move with mu released; nullptr: nobody's.
  ListenerMoves *listener_moves ADXL_GUARDED_BY(mu) = nullptr;

  // The parts, each with its own lock.
  LocalCaches store;
  LinkTable peers;
  TaskWorkers tasks;

  // The start of every entry point that does I/O outside mu: LLM_FAILED,
  // with a log line naming the call (`what`), when not live (or
  // finalizing); else counts the call in busy (Finalize waits for it), fills
  // *ctx and arms *guard, which ends the count when it goes.  Begin takes
  // mu for the start alone; BeginLocked is for a call that goes on reading
  // the manager's state under the same hold.  `quiet`: the refusal is a
  // WARN line (LinkClusters' quiet: a rank-table link that finds itself
  // finalized writes the one ERROR line of its failure itself).
  Status BeginLocked(const char *what, OpContext *ctx, OpGuard *guard, bool quiet = false) ADXL_REQUIRES(mu);
  Status Begin(const char *what, OpContext *ctx, OpGuard *guard, bool quiet = false) ADXL_EXCLUDES(mu);
  void EndOp() ADXL_EXCLUDES(mu);

  // RegisterCache / RegisterBlocksCache: LocalCaches::Register under mu;
  // what a refused registration had registered is deregistered after mu is
  // released (counted in busy meanwhile).  LLM_FAILED, no line, when not live.
  Status Register(const char *what, const Registration &r, Cache &cache) ADXL_EXCLUDES(mu, store.mu);
  Status Start(const char *what) ADXL_REQUIRES(mu);
  void Stop() ADXL_EXCLUDES(mu);
  // The local cache `c` (a copy) and the link to `remote_cluster`, checked
  // as every transfer checks them, each under its part's lock.
  Status LocalAndLink(const char *what, const OpContext &ctx, const Cache &c, uint64_t remote_cluster, Cache *local,
                      std::shared_ptr<RemoteLink> *link) ADXL_EXCLUDES(mu, store.mu, peers.mu);
  // Two-way links: when `cluster` linked to this one and no link to it
  // exists here, connects back to it (its announced listen address) and
  // reads its table, so that a pull or push to it finds a link.  Returns
  // quietly when there is nothing to do; the caller's checks report.
  void EnsureReverse(const char *what, uint64_t cluster) ADXL_EXCLUDES(mu, peers.mu);
};

// Removes the cache layer's own keys of `options` (llm.TransferBackend),
// leaving the engine's, and says what they ask for (*two_way: false for
// "hixl").  Applies nothing: the caller does once its Initialize succeeded.
Status TakeLayerOptions(const char *what, std::map<adxl::AscendString, adxl::AscendString> *options,
                        bool *two_way);

// The link's current cache table, decoded from what the engine received
// from the peer.  With `refresh`, the peer is asked for its current table
// first (network I/O, up to ctx.timeout_ms): callers do so once when the
// table they hold lacks what they look for (refresh on miss).  Takes
// link.mu.
Status RefreshLink(const OpContext &ctx, RemoteLink &link, bool refresh,
                   std::shared_ptr<const std::vector<CacheRecord>> *records) ADXL_EXCLUDES(link.mu);

// Scoped operation: EndOp at destruction when Begin / BeginLocked armed it.
class OpGuard {
 public:
  explicit OpGuard(CacheManager::Impl *impl) : impl_(impl) {}
  ~OpGuard() {
    if (active_) impl_->EndOp();
  }
  OpGuard(const OpGuard &) = delete;
  OpGuard &operator=(const OpGuard &) = delete;
  void Activate() { active_ = true; }

 private:
  CacheManager::Impl *impl_;
  bool active_ = false;
};

// Helpers shared by the files of the cache layer.
uint64_t EntryBytes(const CacheDesc &d);
// "CacheKey(cluster_id=..., ...)" for log lines; keys equal within a cluster.
std::string KeyText(const CacheKey &k);
bool SameKey(const CacheKey &a, const CacheKey &b);
// The engine notifies that announce an incoming link / unlink to its peer.
inline constexpr char kLinkNotify[] = "llm_datadist.link";
inline constexpr char kUnlinkNotify[] = "llm_datadist.unlink";
// The cache layer's option in Initialize's / Rebind's options: the vendor's
// backend name ("hixl": links one-way; else two-way).
inline constexpr char kTransferBackendOption[] = "llm.TransferBackend";
void AddOp(std::vector<adxl::TransferOpDesc> *ops, uintptr_t local, uintptr_t remote, size_t len);
// Sends the unlink notify of cluster `self` to `remote`, unless the link to it
// is gone or failed (the peer finalized first: expected at shutdown, an INFO
// line, not an engine ERROR).  No lock of the manager may be held.
void TellUnlinked(adxl::AdxlEngine &engine, const std::string &remote, uint64_t self, int32_t timeout_ms);

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_SRC_CACHE_MANAGER_IMPL_H_
