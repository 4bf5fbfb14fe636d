// LinkTable: the links this engine opened, by peer name and by control
// connection (docs/contract.md §5).
//
// At most one link per peer name.  A link is entered when a Connect claims
// the name (CONNECTING), bound to its control connection when the handshake
// succeeded (so the control thread finds the link of a message), and removed
// by Disconnect, a failed Connect, AutoConnect dropping a failed link, or
// Finalize.  Each link gets its peer's counters from the book (stats()),
// which outlives the links so that counts continue across reconnects.
// Thread-safety: any thread; mu_ is a leaf, never held across a call out of
// this class (the book is called before mu_ is taken).
#ifndef ADXL_SRC_CORE_LINK_TABLE_H_
#define ADXL_SRC_CORE_LINK_TABLE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/thread_annotations.h"
#include "control/control.h"
#include "core/link.h"
#include "core/link_stats.h"

namespace adxl {

class LinkTable {
 public:
  std::shared_ptr<Link> Find(const std::string &remote) const ADXL_EXCLUDES(mu_);
  std::shared_ptr<Link> FindByConn(const ControlConn *conn) const ADXL_EXCLUDES(mu_);
  // The link to `remote`; a new CONNECTING one when there is none, with
  // *created true: the caller connects it and settles it.
  // With `cap` > 0 (the channel pool's max_channel) no link is created
  // while the table holds `cap` links: null is returned.
  std::shared_ptr<Link> Claim(const std::string &remote, bool *created, size_t cap = 0) ADXL_EXCLUDES(mu_);
  size_t size() const ADXL_EXCLUDES(mu_);
  // The channel pool: removes and returns up to `n` connected links that
  // nothing but this table holds (no transfer, notify, Connect or request in
  // progress keeps a reference; checked under mu_, where a new reference
  // can only be taken) and that were neither connected nor used after
  // `idle_before_ns` (Link::NowNs); never-used links first (oldest first),
  // then the least recently used.  The caller closes them.
  std::vector<std::shared_ptr<Link>> TakeEvictable(size_t n, int64_t idle_before_ns) ADXL_EXCLUDES(mu_);
  // Makes messages on `link->conn` find `link`.
  void Bind(const std::shared_ptr<Link> &link) ADXL_EXCLUDES(mu_);
  // Removes `link` if it is still the one entered for its peer.
  void Remove(const std::shared_ptr<Link> &link) ADXL_EXCLUDES(mu_);
  // Removes and returns the settled link to `remote`; null when there is
  // none or it is still connecting (then nothing changes).
  std::shared_ptr<Link> TakeSettled(const std::string &remote) ADXL_EXCLUDES(mu_);
  std::vector<std::shared_ptr<Link>> Connected() const ADXL_EXCLUDES(mu_);
  // Removes and returns every link (Finalize).
  std::vector<std::shared_ptr<Link>> TakeAll() ADXL_EXCLUDES(mu_);
  // The counters of every peer ever linked (adxl_ext.h LinkStats).
  LinkStatsBook &stats() { return stats_; }

 private:
  LinkStatsBook stats_;
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<Link>> by_name_ ADXL_GUARDED_BY(mu_);
  std::map<const ControlConn *, std::weak_ptr<Link>> by_conn_ ADXL_GUARDED_BY(mu_);
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_LINK_TABLE_H_
