// PathLink: a link's connections over the RDMA lane's network paths
// (net_paths.h), one PathConn per paired path, and the state each
// connection is in as paths fail and return (path_failover.h).
//
// State of a connection, and who moves it:
//     kDown --(failover worker: ucp_ep_create + probe posted)--> kProbing
//     kProbing --(probe answered)--> kUp
//     kUp / kProbing --(failover worker or EpDestroy)--> kClosing --> kDown
// Only kUp connections take new operations.  A transition out of kUp or
// kProbing is won by one compare-and-swap to kClosing; the winner closes the
// UCP endpoint once no post reads it any more (`users`):
//   poster:  users++, then read state; kUp: post on `ep`; users--.
//   closer:  state = kClosing, then wait until users == 0; close `ep`.
// (Both sides use sequentially consistent atomics, so either the poster
// sees kClosing and stays off, or the closer sees its count and waits.)
// `ep` is written only by the thread that holds the connection in a state
// no poster reads it in (kDown, kClosing; kProbing by the failover worker).
// `generation` names which endpoint `ep` is: raised before each new one is
// made, so that a failure reported about an earlier one is told apart even
// when UCP hands the new endpoint the old one's address (it reuses them).
//
// The link's `closing` flag (EpDestroy) stops the failover worker from
// touching the link: the worker counts itself in `busy` around every use and
// checks `closing` after; EpDestroy sets `closing` and waits for busy == 0
// before it tears the connections down.
//
// Locks: none; atomics as above.  A PathLink is shared (shared_ptr) by its
// endpoint, the striped batches in flight on it and the failover worker's
// queues, any of which may outlive the endpoint: after EpDestroy it is
// inert (every connection kDown, `closing` set).
#ifndef ADXL_PLUGIN_UCX_PATHS_PATH_LINK_H_
#define ADXL_PLUGIN_UCX_PATHS_PATH_LINK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ucp/api/ucp.h>

#include "paths/stripe.h"

class NetPath;
class PathFailover;
class PathLink;
struct UcpCore;

struct PathConn {
  enum State : int { kDown = 0, kProbing = 1, kUp = 2, kClosing = 3 };

  PathLink *link = nullptr;  // the owner
  NetPath *path = nullptr;
  size_t index = 0;          // the path's among PathsMover's paths (and in adxl_plugin_mem::path_memh)
  size_t slot = 0;           // this connection's in PathLink::conns (and the link's rates)
  std::string peer_ucp;      // the peer path's worker address, for reconnecting
  ucp_ep_h ep = nullptr;     // see the header comment
  std::atomic<uint64_t> generation{0};  // of `ep` (header comment); 0: none made yet
  std::atomic<int> state{kDown};
  std::atomic<int> users{0};
  // Failover worker: when to try to reconnect next, the back-off (reset by
  // a part that moved data, not by a probe: a path that answers probes but
  // loses data is not retried at the shortest interval), and when a
  // reconnect probe (kProbing) counts as failed.
  std::atomic<int64_t> retry_at_ns{0};
  std::atomic<int64_t> backoff_ns{0};
  std::atomic<int64_t> probe_deadline_ns{0};
  // Silent-path detection (path_failover.h, "Silent paths"): parts posted
  // on this connection and not ended; when it last showed life (an answer
  // to a message of one of its parts, or its first part after being idle);
  // since when the failover worker has seen another connection of the link
  // move while this one showed none (0: not seen).
  std::atomic<int> inflight{0};
  std::atomic<int64_t> alive_ns{0};
  std::atomic<int64_t> behind_since_ns{0};
  // A part or probe on this connection was answered since it was made (or
  // remade); until then its silence is judged with a longer budget.
  std::atomic<bool> heard{false};
  // An empty probe posted by the silent-path check is pending on it.
  std::atomic<bool> sibling_probe{false};

  // Takes the connection for one post: true (and `ep` may be used until
  // Release) when it is up.
  bool Acquire() {
    users.fetch_add(1);
    if (state.load() == kUp) return true;
    users.fetch_sub(1);
    return false;
  }
  void Release() { users.fetch_sub(1); }
};

class PathLink : public std::enable_shared_from_this<PathLink> {
 public:
  PathLink(const UcpCore *c, PathFailover *f, uint64_t i) : core(c), failover(f), id(i) {}

  // The context's (log, wake-up) and PathsMover's failover: both outlive
  // every link (the failover is freed by the context's close, when no
  // endpoint and no batch is left).
  const UcpCore *const core;
  PathFailover *const failover;
  const uint64_t id;  // the endpoint's id: names the link to every path's AM transport
  // Fixed once ConnectPaths made them (each connection's own state changes).
  std::vector<std::unique_ptr<PathConn>> conns;
  std::unique_ptr<stripe::PathRates> rates;
  // Small batches: the connection of the next one, per direction (0 READ,
  // 1 WRITE): with one counter, calls alternating WRITE and READ put every
  // WRITE on one path and every READ on the other.
  std::atomic<uint32_t> next_whole[2] = {{0}, {0}};
  std::atomic<bool> closing{false};
  std::atomic<int> busy{0};

  // Counts the failover worker in (see the header comment); false when the
  // link is closing (and nothing was counted).
  bool Enter() {
    busy.fetch_add(1);
    if (!closing.load()) return true;
    busy.fetch_sub(1);
    return false;
  }
  void Leave() { busy.fetch_sub(1); }
};

#endif  // ADXL_PLUGIN_UCX_PATHS_PATH_LINK_H_
