// The cache layer's links and what it knows of its peers: one of the three
// parts of CacheManager's state (cache_manager_impl.h), with the local
// caches (local_caches.h) and the layer-wise tasks (task_workers.h).
//
// Locks, and what each guards:
//  - LinkTable::mu: the outgoing links (`links`, `linking`), the clusters
//    that linked to this one (`incoming`), the backend's direction
//    (`two_way`), reverse connections to drop (`stale`) and the engine
//    notifies kept for GetNotifies (`kept`).  Held for table work and for
//    the engine's GetNotifies (DrainNotifiesLocked: a local read, no peer);
//    never across a Connect, Disconnect, SendNotify or metadata read: a step
//    that links reserves the cluster in `linking`, drops the lock for the
//    I/O and takes it again to record the result.
//  - RemoteLink::mu (one per link): that link's decoded cache table.  Held
//    across the link's metadata refresh (GetPeerMetadata, which may wait for
//    the peer up to the caller's timeout, so a second caller on the same
//    link waits for the refresh it would have made anyway); taken with no
//    other lock of the cache layer held, never with another link's lock.
//    Callers on different links share no lock held across I/O.
// Order: CacheManager::Impl::mu -> LinkTable::mu -> the engine's locks.
// LinkTable::mu is never held with LocalCaches::mu or TaskWorkers::mu;
// RemoteLink::mu is a leaf taken without any other lock of the cache layer.
#ifndef LLM_DATADIST_SRC_LINK_TABLE_H_
#define LLM_DATADIST_SRC_LINK_TABLE_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "cache_types.h"
#include "common/thread_annotations.h"
#include "metadata.h"

namespace llm_datadist::internal {

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

class LinkTable {
 public:
  mutable adxl::Mutex mu;
  std::map<uint64_t, std::shared_ptr<RemoteLink>> links ADXL_GUARDED_BY(mu);
  std::set<uint64_t> linking ADXL_GUARDED_BY(mu);  // a LinkClusters / UnlinkClusters is under way
  // Clusters that linked to this one (their link notify), with the name the
  // opener listens on ("" when it is a client only).
  std::map<uint64_t, std::string> incoming ADXL_GUARDED_BY(mu);
  // Links are two-way (the vendor's default backend): a cluster that linked
  // to this one can be pulled from / pushed to over a reverse connection.
  // One-way with llm.TransferBackend "hixl".
  bool two_way ADXL_GUARDED_BY(mu) = true;
  // Engine names of dropped reverse links, disconnected without the lock later.
  std::vector<std::string> stale ADXL_GUARDED_BY(mu);
  std::vector<adxl::NotifyDesc> kept ADXL_GUARDED_BY(mu);

  // Reads `engine`'s notifies: the cache layer's link / unlink notifies
  // update `incoming` (and end reverse links they make stale); the others
  // are kept for GetNotifies.
  void DrainNotifiesLocked(adxl::AdxlEngine &engine) ADXL_REQUIRES(mu);
  // No link either way and none under way (Rebind's condition).
  bool NoneLocked() const ADXL_REQUIRES(mu) { return links.empty() && incoming.empty() && linking.empty(); }
};

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_SRC_LINK_TABLE_H_
