// CacheManager's links (cache_manager.h LinkClusters, UnlinkClusters,
// CheckLinkStatus) and the metadata reads over them: connecting, reading the
// peer's cache table (RefreshLink), and telling the peer (notifies).  No lock
// of the manager is held across a Connect, Disconnect, notify or read.
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

// Decodes the table the engine holds of link's peer (asking the peer for
// its current one first with `refresh`) when its version moved.
Status RefreshLocked(const OpContext &ctx, RemoteLink &rc, bool refresh) ADXL_REQUIRES(rc.mu) {
  std::string blob;
  uint64_t version = 0;
  Status s = adxl::ext::GetPeerMetadata(*ctx.engine, rc.engine.c_str(), kMetadataName, blob, version,
                                        refresh ? ctx.timeout_ms : 0);
  if (s != adxl::SUCCESS) {
    ADXL_ERROR("metadata of %s: engine status %u", rc.engine.c_str(), s);
    return FromEngine(s);
  }
  if (version == 0) {
    ADXL_ERROR("%s publishes no cache-layer metadata (not a cache layer, or not initialized)", rc.engine.c_str());
    return LLM_FAILED;
  }
  if (version == rc.version) return LLM_SUCCESS;
  uint64_t owner = 0;
  auto records = std::make_shared<std::vector<CacheRecord>>();
  if (!DecodeTable(blob, &owner, records.get())) {
    ADXL_ERROR("metadata of %s is malformed", rc.engine.c_str());
    return LLM_FAILED;
  }
  if (owner != rc.cluster) {
    ADXL_ERROR("%s is cluster %lu, not %lu", rc.engine.c_str(), static_cast<unsigned long>(owner),
               static_cast<unsigned long>(rc.cluster));
    return LLM_PARAM_INVALID;
  }
  rc.records = std::move(records);
  rc.version = version;
  return LLM_SUCCESS;
}

}  // namespace

Status RefreshLink(const OpContext &ctx, RemoteLink &link, bool refresh,
                   std::shared_ptr<const std::vector<CacheRecord>> *records) {
  adxl::MutexLock lock(&link.mu);
  Status s = RefreshLocked(ctx, link, refresh);
  if (s == LLM_SUCCESS) *records = link.records ? link.records : std::make_shared<const std::vector<CacheRecord>>();
  return s;
}

namespace {

// Connect + metadata probe of one cluster, no lock of the manager held.
Status LinkOne(const OpContext &ctx, const ClusterInfo &c, int32_t timeout_ms, std::shared_ptr<RemoteLink> *out) {
  Status s = ctx.engine->Connect(c.remote_engine.c_str(), timeout_ms);
  const bool connected_here = s == adxl::SUCCESS;
  if (s == adxl::ALREADY_CONNECTED) s = adxl::SUCCESS;  // a shared engine's existing link
  if (s != adxl::SUCCESS) {
    ADXL_ERROR("LinkClusters: connecting to %s failed: engine status %u", c.remote_engine.c_str(), s);
    return FromEngine(s);
  }
  auto rc = std::make_shared<RemoteLink>(c.remote_cluster_id, c.remote_engine);
  OpContext probe = ctx;
  probe.timeout_ms = timeout_ms;
  {
    // The table came with the handshake; asked for once more when the link
    // existed already (a shared engine), so it is current.
    adxl::MutexLock lock(&rc->mu);  // nobody else has it yet; RefreshLocked wants it
    s = RefreshLocked(probe, *rc, !connected_here);
  }
  if (s == LLM_SUCCESS) {
    ctx.engine->SendNotify(c.remote_engine.c_str(), {kLinkNotify, std::to_string(ctx.cluster_id).c_str()},
                           timeout_ms);
    *out = std::move(rc);
    return s;
  }
  ADXL_ERROR("LinkClusters: %s: its cache table is not usable (status %u)", c.remote_engine.c_str(), s);
  if (connected_here) ctx.engine->Disconnect(c.remote_engine.c_str(), timeout_ms);
  return s;
}

}  // namespace

Status CacheManager::LinkClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                                  int32_t timeout_ms) {
  rets.assign(clusters.size(), LLM_FAILED);
  OpContext ctx;
  OpGuard guard(impl_.get());
  {
    adxl::MutexLock lock(&impl_->mu);
    Status s = impl_->BeginLocked(&ctx);
    if (s != LLM_SUCCESS) return s;
    guard.Activate();
  }
  if (timeout_ms <= 0) {
    ADXL_ERROR("LinkClusters: timeout %d ms must be > 0", timeout_ms);
    rets.assign(clusters.size(), LLM_PARAM_INVALID);
    return LLM_PARAM_INVALID;
  }
  Status first = LLM_SUCCESS;
  for (size_t i = 0; i < clusters.size(); ++i) {
    const ClusterInfo &c = clusters[i];
    Status s = LLM_SUCCESS;
    {
      adxl::MutexLock lock(&impl_->mu);
      if (c.remote_cluster_id == impl_->cluster_id) {
        ADXL_ERROR("LinkClusters: cluster %lu is this process's own cluster",
                 static_cast<unsigned long>(c.remote_cluster_id));
        s = LLM_PARAM_INVALID;
      } else if (impl_->links.count(c.remote_cluster_id) != 0 || impl_->linking.count(c.remote_cluster_id) != 0) {
        ADXL_ERROR("LinkClusters: cluster %lu is already linked", static_cast<unsigned long>(c.remote_cluster_id));
        s = LLM_ALREADY_LINK;
      } else {
        impl_->linking.insert(c.remote_cluster_id);  // reserved while we connect without the lock
      }
    }
    if (s == LLM_SUCCESS) {
      std::shared_ptr<RemoteLink> rc;
      s = LinkOne(ctx, c, timeout_ms, &rc);
      adxl::MutexLock lock(&impl_->mu);
      impl_->linking.erase(c.remote_cluster_id);
      if (s == LLM_SUCCESS) impl_->links.emplace(c.remote_cluster_id, std::move(rc));
    }
    rets[i] = s;
    if (first == LLM_SUCCESS) first = s;
  }
  return first;
}

Status CacheManager::UnlinkClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                                    int32_t timeout_ms) {
  rets.assign(clusters.size(), LLM_FAILED);
  OpContext ctx;
  OpGuard guard(impl_.get());
  {
    adxl::MutexLock lock(&impl_->mu);
    Status s = impl_->BeginLocked(&ctx);
    if (s != LLM_SUCCESS) return s;
    guard.Activate();
  }
  if (timeout_ms <= 0) {
    ADXL_ERROR("UnlinkClusters: timeout %d ms must be > 0", timeout_ms);
    rets.assign(clusters.size(), LLM_PARAM_INVALID);
    return LLM_PARAM_INVALID;
  }
  Status first = LLM_SUCCESS;
  for (size_t i = 0; i < clusters.size(); ++i) {
    std::shared_ptr<RemoteLink> link;
    {
      adxl::MutexLock lock(&impl_->mu);
      auto it = impl_->links.find(clusters[i].remote_cluster_id);
      if (it != impl_->links.end()) {
        link = std::move(it->second);
        impl_->links.erase(it);  // new transfers see LLM_NOT_YET_LINK from here on
      }
    }
    Status s = LLM_SUCCESS;
    if (!link) {
      ADXL_ERROR("UnlinkClusters: cluster %lu is not linked",
               static_cast<unsigned long>(clusters[i].remote_cluster_id));
      s = LLM_NOT_YET_LINK;
    } else {
      ctx.engine->SendNotify(link->engine.c_str(), {kUnlinkNotify, std::to_string(ctx.cluster_id).c_str()},
                             timeout_ms);
      Status d = ctx.engine->Disconnect(link->engine.c_str(), timeout_ms);
      if (d != adxl::SUCCESS && d != adxl::NOT_CONNECTED) s = FromEngine(d);
      adxl::MutexLock lock(&link->mu);  // a metadata refresh in flight on this link ends first
    }
    rets[i] = s;
    if (first == LLM_SUCCESS) first = s;
  }
  return first;
}

// Python-surface addition (issue 14): is the link healthy?
Status CacheManager::CheckLinkStatus(uint64_t remote_cluster_id) {
  // GetLinkInfo only reads the engine's link table (no network I/O); it
  // runs outside mu all the same, as every call into the engine does.
  OpContext ctx;
  OpGuard guard(impl_.get());  // Finalize waits for us before the engine goes
  std::string name;
  {
    adxl::MutexLock lock(&impl_->mu);
    auto it = impl_->links.find(remote_cluster_id);
    if (impl_->live && it == impl_->links.end()) {
      ADXL_ERROR("CheckLinkStatus: cluster %lu is not linked", static_cast<unsigned long>(remote_cluster_id));
      return LLM_NOT_YET_LINK;
    }
    if (impl_->BeginLocked(&ctx) != LLM_SUCCESS) return LLM_FAILED;
    guard.Activate();
    name = it->second->engine;
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
