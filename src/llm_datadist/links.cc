// CacheManager's links (cache_manager.h LinkClusters, UnlinkClusters,
// CheckLinkStatus) and the metadata reads over them: connecting, reading the
// peer's cache table (RefreshLink), and telling the peer (notifies).  No lock
// of the manager is held across a Connect, Disconnect, notify or read.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adxl/adxl_ext.h"
#include "cache_manager.h"
#include "cache_manager_impl.h"
#include "common/log.h"
#include "metadata.h"

namespace llm_datadist::internal {
namespace {

// An ERROR line, or a WARN line when `quiet` (a caller that retries writes
// the one ERROR line of its failure itself).
#define LINK_LOG(quiet, ...)   \
  do {                         \
    if (quiet) {               \
      ADXL_WARN(__VA_ARGS__);  \
    } else {                   \
      ADXL_ERROR(__VA_ARGS__); \
    }                          \
  } while (0)

// Decodes the table the engine holds of link's peer (asking the peer for
// its current one first with `refresh`) when its version moved.  `quiet`:
// a failure is a WARN line (LinkClusters' quiet).
Status RefreshLocked(const OpContext &ctx, RemoteLink &rc, bool refresh, bool quiet = false)
    ADXL_REQUIRES(rc.mu) {
  std::string blob;
  uint64_t version = 0;
  Status s = adxl::ext::GetPeerMetadata(*ctx.engine, rc.engine.c_str(), kMetadataName, blob, version,
                                        refresh ? ctx.timeout_ms : 0);
  if (s != adxl::SUCCESS) {
    LINK_LOG(quiet, "metadata of %s: engine status %u", rc.engine.c_str(), s);
    return FromEngine(s);
  }
  if (version == 0) {
    LINK_LOG(quiet, "%s publishes no cache-layer metadata (not a cache layer, or not initialized)", rc.engine.c_str());
    return LLM_FAILED;
  }
  if (version == rc.version) return LLM_SUCCESS;
  uint64_t owner = 0;
  auto records = std::make_shared<std::vector<CacheRecord>>();
  if (!DecodeTable(blob, &owner, records.get())) {
    LINK_LOG(quiet, "metadata of %s is malformed", rc.engine.c_str());
    return LLM_FAILED;
  }
  if (owner != rc.cluster) {
    LINK_LOG(quiet, "%s is cluster %lu, not %lu", rc.engine.c_str(), static_cast<unsigned long>(owner),
               static_cast<unsigned long>(rc.cluster));
    return LLM_PARAM_INVALID;
  }
  rc.records = std::move(records);
  rc.version = version;
  return LLM_SUCCESS;
}

}  // namespace

void TellUnlinked(adxl::AdxlEngine &engine, const std::string &remote, uint64_t self, int32_t timeout_ms) {
  adxl::ext::LinkInfo info;
  if (adxl::ext::GetLinkInfo(engine, remote.c_str(), info) != adxl::SUCCESS || info.failed) {
    ADXL_INFO("unlink: the link to %s is already gone (the peer finalized or failed); not telling it", remote.c_str());
    return;
  }
  engine.SendNotify(remote.c_str(), {kUnlinkNotify, std::to_string(self).c_str()}, timeout_ms);
}

Status RefreshLink(const OpContext &ctx, RemoteLink &link, bool refresh,
                   std::shared_ptr<const std::vector<CacheRecord>> *records) {
  adxl::MutexLock lock(&link.mu);
  Status s = RefreshLocked(ctx, link, refresh);
  if (s == LLM_SUCCESS) *records = link.records ? link.records : std::make_shared<const std::vector<CacheRecord>>();
  return s;
}

namespace {

// Connect + metadata probe of one cluster, no lock of the manager held.
// `announce`: tell the peer it was linked (a LinkClusters); a reverse link
// (EnsureReverse) is not announced.  `quiet`: LinkClusters' (WARN lines).
Status LinkOne(const OpContext &ctx, const ClusterInfo &c, int32_t timeout_ms, bool announce,
               std::shared_ptr<RemoteLink> *out, bool quiet = false) {
  Status s = ctx.engine->Connect(c.remote_engine.c_str(), timeout_ms);
  const bool connected_here = s == adxl::SUCCESS;
  if (s == adxl::ALREADY_CONNECTED) s = adxl::SUCCESS;  // a shared engine's existing link
  if (s != adxl::SUCCESS) {
    if (announce) {
      LINK_LOG(quiet, "LinkClusters: connecting to %s (cluster %lu) failed: engine status %u",
               c.remote_engine.c_str(), static_cast<unsigned long>(c.remote_cluster_id), s);
    } else {  // the caller's refusal is the one ERROR line
      ADXL_WARN("connecting back to %s (cluster %lu, which linked to this one) failed: engine status %u",
                c.remote_engine.c_str(), static_cast<unsigned long>(c.remote_cluster_id), s);
    }
    // The peer cannot be reached: the vendor's LLM_LINK_FAILED (a deadline
    // that passed stays LLM_TIMEOUT, a malformed name LLM_PARAM_INVALID).
    return s == adxl::TIMEOUT || s == adxl::PARAM_INVALID ? FromEngine(s) : LLM_LINK_FAILED;
  }
  auto rc = std::make_shared<RemoteLink>(c.remote_cluster_id, c.remote_engine, !announce);
  OpContext probe = ctx;
  probe.timeout_ms = timeout_ms;
  {
    // The table came with the handshake; asked for once more when the link
    // existed already (a shared engine), so it is current.
    adxl::MutexLock lock(&rc->mu);  // nobody else has it yet; RefreshLocked wants it
    s = RefreshLocked(probe, *rc, !connected_here, quiet);
  }
  if (s == LLM_SUCCESS) {
    if (announce) {
      // "<id>" or "<id> <listen name>": the peer can reach back when we listen.
      const std::string msg = std::to_string(ctx.cluster_id) + (ctx.listen.empty() ? "" : " " + ctx.listen);
      ctx.engine->SendNotify(c.remote_engine.c_str(), {kLinkNotify, msg.c_str()}, timeout_ms);
    }
    *out = std::move(rc);
    return s;
  }
  if (announce) {
    LINK_LOG(quiet, "LinkClusters: %s: its cache table is not usable (status %u)", c.remote_engine.c_str(), s);
  } else {
    ADXL_WARN("connecting back to %s: its cache table is not usable (status %u)", c.remote_engine.c_str(), s);
  }
  if (connected_here) ctx.engine->Disconnect(c.remote_engine.c_str(), timeout_ms);
  return s == LLM_FAILED ? LLM_LINK_FAILED : s;
}

// Links (or unlinks) one cluster; no lock of the manager is held.
using ClusterStep = std::function<Status(CacheManager::Impl *impl, const OpContext &ctx, const ClusterInfo &c,
                                         int32_t timeout_ms)>;

// What LinkClusters and UnlinkClusters share: the start of the call, the
// timeout check, one `step` per cluster with its status in rets, and the
// last failure as the result (as the vendor's LLMLinkManager).  `quiet`:
// LinkClusters' (a refused start is a WARN line).
Status ForEachCluster(CacheManager::Impl *impl, const char *what, const std::vector<ClusterInfo> &clusters,
                      std::vector<Status> &rets, int32_t timeout_ms, const ClusterStep &step, bool quiet = false)
    ADXL_EXCLUDES(impl->mu, impl->peers.mu) {
  rets.assign(clusters.size(), LLM_FAILED);
  OpContext ctx;
  OpGuard guard(impl);
  Status s = impl->Begin(what, &ctx, &guard, quiet);
  if (s != LLM_SUCCESS) return s;
  if (timeout_ms <= 0) {
    ADXL_ERROR("%s: timeout %d ms must be > 0", what, timeout_ms);
    rets.assign(clusters.size(), LLM_PARAM_INVALID);
    return LLM_PARAM_INVALID;
  }
  std::vector<std::string> stale;
  {
    adxl::MutexLock lock(&impl->peers.mu);
    impl->peers.DrainNotifiesLocked(*ctx.engine);
    stale.swap(impl->peers.stale);
  }
  for (const std::string &name : stale) ctx.engine->Disconnect(name.c_str(), timeout_ms);
  Status result = LLM_SUCCESS;
  for (size_t i = 0; i < clusters.size(); ++i) {
    rets[i] = step(impl, ctx, clusters[i], timeout_ms);
    if (rets[i] != LLM_SUCCESS) result = rets[i];  // the vendor's: the last failure
  }
  return result;
}

// Reserves the cluster id (so that a concurrent call sees it as linked),
// connects and reads the peer's table without the lock, then records the
// link or drops the reservation.  `quiet`: LinkClusters'.
Status LinkStep(CacheManager::Impl *impl, const OpContext &ctx, const ClusterInfo &c, int32_t timeout_ms,
                bool quiet) ADXL_EXCLUDES(impl->peers.mu) {
  LinkTable &peers = impl->peers;
  {
    adxl::MutexLock lock(&peers.mu);
    if (c.remote_cluster_id == ctx.cluster_id) {
      ADXL_ERROR("LinkClusters: cluster %lu is this process's own cluster",
                 static_cast<unsigned long>(c.remote_cluster_id));
      return LLM_PARAM_INVALID;
    }
    if (peers.links.count(c.remote_cluster_id) != 0 || peers.linking.count(c.remote_cluster_id) != 0) {
      LINK_LOG(quiet, "LinkClusters: cluster %lu is already linked", static_cast<unsigned long>(c.remote_cluster_id));
      return LLM_ALREADY_LINK;
    }
    peers.linking.insert(c.remote_cluster_id);  // reserved while we connect without the lock
  }
  std::shared_ptr<RemoteLink> rc;
  Status s = LinkOne(ctx, c, timeout_ms, /*announce=*/true, &rc, quiet);
  adxl::MutexLock lock(&peers.mu);
  peers.linking.erase(c.remote_cluster_id);
  if (s == LLM_SUCCESS) peers.links.emplace(c.remote_cluster_id, std::move(rc));
  return s;
}

// The vendor's unforced unlink of a cluster with no link either way still
// goes to the peer at the address given (its LinkMsgHandler connects and
// sends a disconnect; the peer's DestroyEntity of nothing succeeds):
// LLM_SUCCESS when the peer answers, LLM_UNLINK_FAILED when it cannot be
// reached.
Status AskPeerToUnlink(const OpContext &ctx, const ClusterInfo &c, int32_t timeout_ms) {
  const Status s = ctx.engine->Connect(c.remote_engine.c_str(), timeout_ms);
  if (s != adxl::SUCCESS && s != adxl::ALREADY_CONNECTED) {
    // The engine's ERROR line says why the connect failed; this one says what it was for.
    ADXL_WARN("UnlinkClusters: cluster %lu is not linked either way, and %s, where it is asked, cannot be "
              "reached: engine status %u", static_cast<unsigned long>(c.remote_cluster_id), c.remote_engine.c_str(),
              s);
    return LLM_UNLINK_FAILED;
  }
  TellUnlinked(*ctx.engine, c.remote_engine, ctx.cluster_id, timeout_ms);
  if (s == adxl::SUCCESS) ctx.engine->Disconnect(c.remote_engine.c_str(), timeout_ms);  // only what we opened
  ADXL_INFO("UnlinkClusters: cluster %lu: no link either way; told %s", static_cast<unsigned long>(c.remote_cluster_id),
            c.remote_engine.c_str());
  return LLM_SUCCESS;
}

// Takes the link out of the table (new transfers see LLM_NOT_YET_LINK from
// then on), tells the peer and disconnects without the lock.  The record of
// an incoming link from the cluster goes too.  `force` (the vendor's
// force_flag): the link is dropped here whatever the peer answers, and a
// cluster with no link either way is LLM_SUCCESS, as the vendor's forced
// unlink only destroys what exists locally.  `outgoing_only` (UndoLinks,
// forced): the incoming link stays, made by the cluster and not ours to undo.
Status UnlinkStep(CacheManager::Impl *impl, const OpContext &ctx, const ClusterInfo &c, int32_t timeout_ms,
                  bool force, bool outgoing_only = false) ADXL_EXCLUDES(impl->peers.mu) {
  LinkTable &peers = impl->peers;
  std::shared_ptr<RemoteLink> link;
  bool had_incoming = false;
  bool two_way = false;
  {
    adxl::MutexLock lock(&peers.mu);
    two_way = peers.two_way;
    if (!force && two_way && c.remote_engine.empty()) {
      // The vendor's default backend asks the peer at the one address given;
      // refused before anything is dropped.
      ADXL_ERROR("UnlinkClusters: cluster %lu: without force_flag exactly one remote ip info (ip and port) is "
                 "needed; nothing unlinked", static_cast<unsigned long>(c.remote_cluster_id));
      return LLM_PARAM_INVALID;
    }
    auto it = peers.links.find(c.remote_cluster_id);
    if (it != peers.links.end()) {
      link = std::move(it->second);
      peers.links.erase(it);
    }
    had_incoming = !outgoing_only && peers.incoming.erase(c.remote_cluster_id) != 0;
  }
  if (!link) {
    if (force || had_incoming) {
      ADXL_INFO("UnlinkClusters: cluster %lu: %s", static_cast<unsigned long>(c.remote_cluster_id),
                had_incoming ? "its incoming link is dropped here" : "no link either way (forced: nothing to do)");
      return LLM_SUCCESS;
    }
    if (two_way) return AskPeerToUnlink(ctx, c, timeout_ms);
    ADXL_ERROR("UnlinkClusters: cluster %lu is not linked", static_cast<unsigned long>(c.remote_cluster_id));
    return LLM_NOT_YET_LINK;
  }
  if (!link->reverse) TellUnlinked(*ctx.engine, link->engine, ctx.cluster_id, timeout_ms);
  const Status d = ctx.engine->Disconnect(link->engine.c_str(), timeout_ms);
  adxl::MutexLock lock(&link->mu);  // a metadata refresh in flight on this link ends first
  if (d == adxl::SUCCESS || d == adxl::NOT_CONNECTED) return LLM_SUCCESS;
  if (force) {
    ADXL_INFO("UnlinkClusters: cluster %lu: disconnecting %s: engine status %u; dropped here (forced)",
              static_cast<unsigned long>(c.remote_cluster_id), link->engine.c_str(), d);
    return LLM_SUCCESS;
  }
  ADXL_ERROR("UnlinkClusters: cluster %lu: disconnecting %s failed: engine status %u",
             static_cast<unsigned long>(c.remote_cluster_id), link->engine.c_str(), d);
  return LLM_UNLINK_FAILED;
}

}  // namespace

Status CacheManager::LinkClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                                  int32_t timeout_ms, bool quiet) {
  ListenToBeReachedBack(clusters, quiet);
  return ForEachCluster(impl_.get(), "LinkClusters", clusters, rets, timeout_ms,
                        [quiet](CacheManager::Impl *impl, const OpContext &ctx, const ClusterInfo &c, int32_t t) {
                          return LinkStep(impl, ctx, c, t, quiet);
                        },
                        quiet);
}

Status CacheManager::UnlinkClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                                    int32_t timeout_ms, bool force) {
  return ForEachCluster(impl_.get(), "UnlinkClusters", clusters, rets, timeout_ms,
                        [force](CacheManager::Impl *impl, const OpContext &ctx, const ClusterInfo &c, int32_t t) {
                          return UnlinkStep(impl, ctx, c, t, force);
                        });
}

Status CacheManager::UndoLinks(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                               int32_t timeout_ms) {
  return ForEachCluster(impl_.get(), "UnlinkClusters", clusters, rets, timeout_ms,
                        [](CacheManager::Impl *impl, const OpContext &ctx, const ClusterInfo &c, int32_t t) {
                          return UnlinkStep(impl, ctx, c, t, /*force=*/true, /*outgoing_only=*/true);
                        });
}

void CacheManager::Impl::EnsureReverse(const char *what, uint64_t cluster) {
  OpContext ctx;
  OpGuard guard(this);
  {
    adxl::MutexLock lock(&mu);
    if (!live || stopping) return;  // the caller's checks report
    if (BeginLocked(what, &ctx, &guard) != LLM_SUCCESS) return;
  }
  std::vector<std::string> gone;
  std::string name;
  {
    adxl::MutexLock lock(&peers.mu);
    // First: a new link or an unlink from `cluster` ends an old reverse connection.
    peers.DrainNotifiesLocked(*ctx.engine);
    if (peers.links.count(cluster) != 0 && peers.stale.empty()) return;
    gone.swap(peers.stale);
    auto in = peers.incoming.find(cluster);
    if (peers.two_way && peers.links.count(cluster) == 0 && in != peers.incoming.end() && !in->second.empty() &&
        peers.linking.count(cluster) == 0) {
      name = in->second;
      peers.linking.insert(cluster);  // reserved while we connect without the lock
    }
  }
  for (const std::string &g : gone) ctx.engine->Disconnect(g.c_str(), ctx.timeout_ms);
  if (name.empty()) return;
  std::shared_ptr<RemoteLink> rc;
  const Status s = LinkOne(ctx, ClusterInfo{cluster, name}, ctx.timeout_ms, /*announce=*/false, &rc);
  bool keep = false;
  {
    adxl::MutexLock lock(&peers.mu);
    peers.linking.erase(cluster);
    peers.DrainNotifiesLocked(*ctx.engine);
    // Still linked from there (no unlink arrived meanwhile) and no link made here meanwhile.
    keep = s == LLM_SUCCESS && peers.incoming.count(cluster) != 0 && peers.links.count(cluster) == 0;
    if (keep) peers.links.emplace(cluster, rc);
  }
  if (s == LLM_SUCCESS && !keep) ctx.engine->Disconnect(name.c_str(), ctx.timeout_ms);
  if (s == LLM_SUCCESS) {
    ADXL_INFO("%s: cluster %lu linked to this cluster; connected back to it at %s", what,
              static_cast<unsigned long>(cluster), name.c_str());
  }
}

// Is the link healthy?  (check_link_status in Python)
Status CacheManager::CheckLinkStatus(uint64_t remote_cluster_id) {
  // GetLinkInfo only reads the engine's link table (no network I/O); it
  // runs outside mu all the same, as every call into the engine does.
  OpContext ctx;
  OpGuard guard(impl_.get());  // Finalize waits for us before the engine goes
  std::string name;
  {
    adxl::MutexLock lock(&impl_->mu);
    if (impl_->live) {
      adxl::MutexLock links_lock(&impl_->peers.mu);
      auto it = impl_->peers.links.find(remote_cluster_id);
      if (it == impl_->peers.links.end()) {
        ADXL_ERROR("CheckLinkStatus: cluster %lu is not linked", static_cast<unsigned long>(remote_cluster_id));
        return LLM_NOT_YET_LINK;
      }
      name = it->second->engine;
    }
    if (impl_->BeginLocked("CheckLinkStatus", &ctx, &guard) != LLM_SUCCESS) return LLM_FAILED;
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

}  // namespace llm_datadist::internal
