// Connector: opening and closing links (docs/contract.md §5), and finding
// the link of a transfer or notify, with AutoConnect (§5.8).
//
// Connect claims the peer's name in the LinkTable (one Connect per peer at a
// time; concurrent callers wait for its outcome; a failed link is replaced),
// runs the client side of the handshake (control/handshake.h), creates the
// transport endpoint on the lanes that may reach the peer
// (transport/lane_select.h) and starts its wire-up, unpacks the peer's
// regions meanwhile, waits for the wire-up inside the caller's deadline
// (without progressing the transport: its progress thread does), hands the
// control connection to the ControlLoop and pings the peer at once (the
// peer admits its next client then, core/admission.h).  A failed Connect
// gives an endpoint in mid wire-up to the WireupReaper instead of closing
// it.  Everything runs on the caller's thread and waits at most until its
// deadline, or until Finalize (Stop) ends it.
//
// The channel pool (GlobalResourceConfig channel_pool.*, docs/contract.md
// §5.10): with it on, the links this engine opened (outgoing; inbound peers
// are capped by adxl.MaxInboundPeers) are at most max_channel.  A Connect
// that would take their count above high_waterline * max_channel first
// evicts idle links (LinkTable::TakeEvictable: nothing in progress and
// nothing for kPoolIdleMs; never-used first, then least recently used)
// until low_waterline * max_channel remain; at max_channel it evicts one
// idle link or waits for one (or a Disconnect) until its deadline, then
// answers RESOURCE_EXHAUSTED.  An evicted link is closed as Disconnect
// closes it (the peer is told with Bye and drops its end), and a transfer
// or notify to an evicted peer reconnects by itself (the AutoConnect path,
// whatever AutoConnect says) until the user Disconnects that peer.
//
// Thread-safety: any thread.  Its own state is the set of evicted peers
// under evicted_mu_, a leaf (never held across a call out of this class);
// the LinkTable and the WireupReaper lock themselves; Stop's signal to the
// Connects in flight (stopping_, stop_fd_) takes no lock.
#ifndef ADXL_SRC_CORE_CONNECTOR_H_
#define ADXL_SRC_CORE_CONNECTOR_H_

#include <atomic>
#include <memory>
#include <set>
#include <string>

#include "adxl/adxl_types.h"
#include "common/engine_name.h"
#include "common/fd.h"
#include "common/thread_annotations.h"
#include "config/options.h"
#include "control/control.h"
#include "control/handshake.h"
#include "core/link_table.h"
#include "core/wireup_reaper.h"
#include "transport/transport.h"

namespace adxl {

class Connector {
 public:
  // `loop` and `links` must outlive the connector.
  Connector(HandshakeIdentity self, const EngineOptions &options, std::shared_ptr<Transport> transport,
            ControlLoop *loop, LinkTable *links);

  Status Connect(const std::string &remote, int32_t timeout_ms);
  // From Finalize, before it waits for the calls in flight: Connect and
  // AutoConnect's reconnects refuse (FAILED) from now on, and every
  // connected link is closed as Disconnect closes it (Bye within
  // `deadline`, the control connection closed, so that a SendNotify or a
  // metadata refresh waiting for the peer's answer wakes; the endpoint
  // cancelled, which ends every transfer on it).  A Connect in flight ends
  // at once with FAILED: one in its TCP connect or handshake is woken
  // through stop_fd_, one waiting for its transport wire-up sees stopping_
  // within a millisecond (its endpoint goes to the reaper), one waiting
  // for a concurrent Connect wakes when that one ends, and one whose link
  // got ready meanwhile closes it again.  Does not block but for the Byes.
  void Stop(Clock::time_point deadline);
  Status Disconnect(const std::string &remote, int32_t timeout_ms);
  // The link a transfer or notify uses.  Without AutoConnect: NOT_CONNECTED
  // when there is none, FAILED when it failed.  With AutoConnect: a missing
  // link is connected, a failed one dropped and connected again, before
  // `deadline`.  Logs one ERROR line (prefixed with `api`) on failure.
  Status AcquireLink(const char *api, const std::string &remote, Clock::time_point deadline,
                     std::shared_ptr<Link> *link);
  // Removes a failed link from the table and closes its control connection
  // (AutoConnect: the next call reconnects).  Idempotent.
  void DropLink(const std::shared_ptr<Link> &link);
  bool auto_connect() const { return auto_connect_; }
  // How long a link must have been idle (no transfer or notify, nor its
  // Connect) before the channel pool may evict it.
  static constexpr int64_t kPoolIdleMs = 1000;
  // Endpoints of failed Connects whose wire-up had not ended yet.
  WireupReaper &reaper() { return reaper_; }

 private:
  Status ConnectOnce(const std::shared_ptr<Link> &link, const EngineName &peer, Clock::time_point deadline);
  // The channel pool, before a Connect creates a link: evicts down to the
  // low mark when the new link takes the count above the high mark.
  void EvictAboveHighMark(const std::string &remote);
  // Closes evicted links as Disconnect does (Bye, then close), and
  // remembers their peers for the reconnect on demand.
  void Evict(const std::vector<std::shared_ptr<Link>> &victims, const std::string &remote, const char *why);
  // Sends Bye on a connected link, closes it and shuts it down.
  void CloseLink(const std::shared_ptr<Link> &link, Clock::time_point deadline);
  bool WasEvicted(const std::string &remote) const ADXL_EXCLUDES(evicted_mu_);

  // Set by Stop; never cleared (a new Initialize makes a new Connector).
  std::atomic<bool> stopping_{false};
  // An eventfd that Stop writes once and nobody reads: readable from then
  // on, so every wait of a Connect's TCP connect and handshake, which poll
  // it beside their socket (control/socket.h), ends at once.  Invalid when
  // eventfd failed (those waits then run to their deadline).  Set in the
  // constructor only.
  Fd stop_fd_;
  // Whether Stop ran; logs `api`'s refusal when it did.
  bool Stopping(const char *api, const std::string &remote) const;

  const HandshakeIdentity self_;
  const bool auto_connect_;
  const std::vector<std::string> protocols_;
  const std::shared_ptr<Transport> transport_;
  ControlLoop *const loop_;
  LinkTable *const links_;
  WireupReaper reaper_;
  // The channel pool (channel_pool.*); pool_max_ 0: off.
  const size_t pool_max_;
  const size_t pool_high_;  // links above which a Connect evicts; pool_max_ without waterlines
  const size_t pool_low_;   // links kept by that eviction
  mutable Mutex evicted_mu_;
  std::set<std::string> evicted_ ADXL_GUARDED_BY(evicted_mu_);
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_CONNECTOR_H_
