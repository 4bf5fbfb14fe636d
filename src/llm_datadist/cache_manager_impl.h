// CacheManager's state (src/llm_datadist/cache_manager.h), shared by
// cache_manager.cc (life cycle, registration), links.cc, pull_push.cc, rebind.cc and layerwise.cc
// (TransferCacheAsync and its tasks).
//
// Locks, and what each guards (every one annotated; scripts/thread_safety.sh):
//  - Impl::mu: the manager's tables (lifecycle flags, caches, addresses,
//    links map, incoming links, kept notifies, task threads).  Held only for
//    table work and calls into the local engine that do not wait for a peer
//    (RegisterMem, GetNotifies, PublishMetadata, which queues); never across
//    a TransferSync, Connect, Disconnect, SendNotify, DeregisterMem or a
//    metadata refresh.  An operation that does network I/O takes what it
//    needs under mu (a copy of the local cache, the link's shared_ptr, the
//    engine pointer) and counts itself in `busy`, so that Finalize waits for
//    it before tearing the engine down.
//  - RemoteLink::mu (one per link): that link's decoded cache table.  Held
//    across the link's metadata refresh (so a second caller on the same link
//    waits for the refresh it would have made anyway), never with Impl::mu,
//    never with another link's lock.  Callers on
//    different links share no lock held across I/O.
//  - CacheTask::State::mu (one per task): the task's progress and results.
//    May be taken under Impl::mu (Finalize's cancel marks), never the other
//    way round; never held across I/O or a synchronizer call.
// Order: Impl::mu -> CacheTask::State::mu.  RemoteLink::mu is a leaf taken
// without any other.
#ifndef LLM_DATADIST_SRC_CACHE_MANAGER_IMPL_H_
#define LLM_DATADIST_SRC_CACHE_MANAGER_IMPL_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "adxl/adxl_engine.h"
#include "common/thread_annotations.h"
#include "cache_manager.h"
#include "cache_task.h"
#include "metadata.h"

namespace llm_datadist::internal {

struct LocalCache {
  Cache cache;
  std::vector<adxl::MemHandle> handles;
  std::vector<CacheKey> keys;
  std::optional<BlocksCacheKey> blocks_key;
};

// One outgoing link: the remote engine and the version of its cache table
// we last decoded (the engine keeps the table its peer published; see
// metadata.h).  Shared by the links map and every operation in flight on it
// (so Unlink never pulls it from under one).
struct RemoteLink {
  RemoteLink(uint64_t c, std::string e, bool r = false) : cluster(c), engine(std::move(e)), reverse(r) {}
  RemoteLink(const RemoteLink &) = delete;
  RemoteLink &operator=(const RemoteLink &) = delete;
  const uint64_t cluster;
  const std::string engine;
  // Made by this side to reach a cluster that linked to it (two-way links,
  // EnsureReverse); dropped when that cluster unlinks.
  const bool reverse;

  adxl::Mutex mu;
  uint64_t version ADXL_GUARDED_BY(mu) = 0;  // 0: nothing decoded yet
  std::shared_ptr<const std::vector<CacheRecord>> records ADXL_GUARDED_BY(mu);
};

// The shared state of one layer-wise push (cache_task.h).
struct CacheTask::State {
  enum Phase : uint8_t { kNotStarted, kStarted, kComplete, kFailed };
  explicit State(size_t targets) : results(targets), phase(targets, kNotStarted) {}

  adxl::Mutex mu;
  adxl::CondVar cv;  // done, pushing
  bool done ADXL_GUARDED_BY(mu) = false;       // the result is reported: final
  bool cancelled ADXL_GUARDED_BY(mu) = false;  // the worker pushes nothing more
  bool pushing ADXL_GUARDED_BY(mu) = false;    // a TransferSync of this task is in flight
  bool exited ADXL_GUARDED_BY(mu) = false;     // the worker thread has returned (joinable at once)
  uint32_t synced ADXL_GUARDED_BY(mu) = 0;
  Status status ADXL_GUARDED_BY(mu) = LLM_SUCCESS;
  std::vector<std::optional<Status>> results ADXL_GUARDED_BY(mu);
  std::vector<Phase> phase ADXL_GUARDED_BY(mu);

  // Ends the task with `why` for every started, unfinished target (and its
  // first failure as the status); wakes the waiters.  Waits for a transfer
  // in flight first, so nothing lands after the task reported.
  void EndLocked(Status why) ADXL_REQUIRES(mu);
};

struct TaskWorker {
  std::thread thread;
  std::shared_ptr<CacheTask::State> state;
};

// What an operation doing I/O outside Impl::mu takes with it.
class OpGuard;

struct OpContext {
  adxl::AdxlEngine *engine = nullptr;
  int32_t timeout_ms = 1000;
  uint64_t cluster_id = 0;
  std::string listen;  // this engine's name when it listens (peers can connect to it), else empty
};

// Does the engine name "ip:port" / "[ipv6]:port" listen (a port > 0)?
bool Listens(const std::string &name);

class CacheManager::Impl {
 public:
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
  std::map<int64_t, LocalCache> caches ADXL_GUARDED_BY(mu);
  int64_t next_id ADXL_GUARDED_BY(mu) = 1;
  std::set<uintptr_t> addrs ADXL_GUARDED_BY(mu);
  std::map<uint64_t, std::shared_ptr<RemoteLink>> links ADXL_GUARDED_BY(mu);
  std::set<uint64_t> linking ADXL_GUARDED_BY(mu);  // a LinkClusters / UnlinkClusters is under way
  // Clusters that linked to this one (their link notify), with the name the
  // opener listens on ("" when it is a client only).
  std::map<uint64_t, std::string> incoming ADXL_GUARDED_BY(mu);
  // Links are two-way (the vendor's default backend): a cluster that linked
  // to this one can be pulled from / pushed to over a reverse connection.
  // One-way with llm.TransferBackend "hixl".
  bool two_way ADXL_GUARDED_BY(mu) = true;
  // Engine names of dropped reverse links, disconnected outside mu later.
  std::vector<std::string> stale ADXL_GUARDED_BY(mu);
  std::vector<adxl::NotifyDesc> kept ADXL_GUARDED_BY(mu);
  std::vector<TaskWorker> workers ADXL_GUARDED_BY(mu);

  // The start of every entry point that does I/O outside mu: LLM_FAILED,
  // with a log line naming the call (`what`), when not live (or
  // finalizing); else counts the call in busy (Finalize waits for it), fills
  // *ctx and arms *guard, which ends the count when it goes.  Begin takes
  // mu for the start alone; BeginLocked is for a call that goes on reading
  // the manager's state under the same hold.
  Status BeginLocked(const char *what, OpContext *ctx, OpGuard *guard) ADXL_REQUIRES(mu);
  Status Begin(const char *what, OpContext *ctx, OpGuard *guard) ADXL_EXCLUDES(mu);
  void EndOp() ADXL_EXCLUDES(mu);

  Status Start(const char *what) ADXL_REQUIRES(mu);
  void Stop() ADXL_EXCLUDES(mu);
  void DrainNotifies() ADXL_REQUIRES(mu);
  Status PublishLocked() ADXL_REQUIRES(mu);
  Status Register(const char *what, const CacheDesc &desc, const std::vector<uintptr_t> &addrs_in,
                  const std::vector<CacheKey> &keys, const std::optional<BlocksCacheKey> &bkey, bool paged,
                  std::optional<bool> remote_accessible, Cache &cache) ADXL_REQUIRES(mu);
  // The local cache `c` (a copy) and the link to `remote_cluster`, checked
  // as every transfer checks them.
  Status LocalAndLink(const char *what, const Cache &c, uint64_t remote_cluster, Cache *local,
                      std::shared_ptr<RemoteLink> *link) ADXL_REQUIRES(mu);
  void ReapWorkersLocked() ADXL_REQUIRES(mu);
  // Two-way links: when `cluster` linked to this one and no link to it
  // exists here, connects back to it (its announced listen address) and
  // reads its table, so that a pull or push to it finds a link.  Returns
  // quietly when there is nothing to do; the caller's checks report.
  void EnsureReverse(const char *what, uint64_t cluster) ADXL_EXCLUDES(mu);
  // Applies the cache layer's own keys of `options` (llm.TransferBackend)
  // and removes them, leaving the engine's.
  Status TakeLayerOptions(const char *what, std::map<adxl::AscendString, adxl::AscendString> *options)
      ADXL_REQUIRES(mu);
};

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
