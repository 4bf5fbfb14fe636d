// PathFailover: takes failed network paths out of the links that use them
// and puts them back when they return (the RDMA lane over several paths,
// net_paths.h; connection states in path_link.h).
//
// A path connection fails when UCP reports its endpoint's failure, when its
// wire-up probe fails, or when its interface loses carrier (LinkWatch: the
// whole path, every link on it).  The worker then, outside any UCP callback:
//  1. closes the connection (kUp -> kClosing: no new post takes it; Fence,
//     force-close, Abandon on the path's AM transport: every batch part on it
//     ends, with ERR_IO, and no READ byte of theirs lands here afterwards);
//  2. re-posts the ended parts, queued by their completions (Reissue), on
//     connections still up (net_paths.cc, RepostPart: a WRITE's batch then
//     completes no earlier than the failed part's target deadline, so no
//     byte of it can land after the caller saw the batch end);
//  3. reconnects the connection while its interface has carrier: a new UCP
//     endpoint to the peer's path and a probe; the probe's answer puts it
//     back to kUp; a failure, or no answer within kProbeBudget, closes it
//     again and backs off (kRetryMin doubling to kRetryMax).
// Silent paths.  A path can keep its carrier and stop moving data without
// its connection failing (a dead switch port further on, a route or filter
// that drops everything): TCP keeps retransmitting for minutes, and every
// part striped over it would wait for its call's deadline.  A connection
// therefore also fails when it has parts in flight and, for kStallAfter
// (plus three 1 MiB messages' time at its path's rate, plus
// kFirstAnswerExtra until it was first answered), (a) the peer answered
// none of its messages while (b) another connection of the same link, i.e.
// the same peer, was answered after this one's last sign of life and is
// idle or still being answered (the peer is alive and reachable), and (c)
// its path answered no message of any link (a path busy with other peers'
// batches is slow for this link, not dead).  A pass of the check that comes
// late (this thread starved) judges nobody.  A peer that stops, or a
// machine too loaded to run it, mostly shows on every path at once; but in
// a striped call one connection finishes its part first, and a peer that
// stops in that tail for longer than the budget gets the other connection
// judged silent: that costs a reconnection and, for a WRITE, the failed
// part's hold (its slice budget), not a transfer.  Where no other
// connection moves (a call small enough to go whole on one connection), a
// connection silent for kStallAfter has the link's idle connections sent an
// empty probe each, whose answer is the witness (a stopped peer answers
// none).  Not detected: a peer silent on one path while that path answers
// other peers.
//
// Where it runs: Run() from the plugin's progress thread, between
// ucp_worker_progress calls (PathsMover, which owns it, is a progress source
// of the context: core/progress_source.h); the queues are filled from UCP
// callbacks (any thread, under a worker lock).
//
// Locks: mu_ guards the link registry and the queues; a leaf, taken under
// any UCP worker lock and any AmTransport lock (from callbacks), never held
// across a call out of this class.
//
// Thread-safety: Init/Shutdown from the plugin's open/close (PathsMover's
// Open/Stop); Run from one thread at a time; the rest from any thread.
#ifndef ADXL_PLUGIN_UCX_PATHS_PATH_FAILOVER_H_
#define ADXL_PLUGIN_UCX_PATHS_PATH_FAILOVER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <ucp/api/ucp.h>

#include "common/thread_annotations.h"
#include "paths/link_watch.h"
#include "paths/path_link.h"

class NetPath;
struct UcpCore;

class PathFailover {
 public:
  // A failed connection's first reconnect attempt, and the longest wait
  // between attempts (doubling from the first).
  static constexpr auto kRetryMin = std::chrono::milliseconds(200);
  static constexpr auto kRetryMax = std::chrono::seconds(5);
  // How long an interface must have had carrier again before its
  // connections are made again: a flapping link is left alone meanwhile.
  static constexpr auto kHoldDown = std::chrono::milliseconds(500);
  // How long a reconnect probe may take before the connection counts as
  // failed again.
  static constexpr auto kProbeBudget = std::chrono::seconds(5);
  // How long a connection with parts in flight may show no life while its
  // link's other connections move before it counts as failed (above,
  // "Silent paths"): above TCP's retransmission back-off for a loss or two
  // on a live path (0.2 s, then 0.4 s).  kStallTick: how often it is checked
  // while parts are in flight.
  static constexpr auto kStallAfter = std::chrono::seconds(1);
  static constexpr auto kStallTick = std::chrono::milliseconds(100);
  // Added to a connection's budget until it was first answered (after it
  // was made or remade): over a non-blocking connect, TCP retransmits a
  // lost SYN after 1 s, then 2 s more.
  static constexpr auto kFirstAnswerExtra = std::chrono::seconds(3);
  // A re-post from the queue.
  using RepostFn = void (*)(void *part);

  // Opens the carrier watch (logged when the kernel refuses it: failures
  // are then found by UCP alone).  `core` (the context's: log, wake-up) and
  // `paths` (PathsMover's, fixed while it is open) outlive this object.
  void Init(const UcpCore *core, const std::vector<std::unique_ptr<NetPath>> *paths);
  void Shutdown() { watch_.Close(); }
  // The carrier watch's fd for the progress thread's epoll set (-1: none).
  int watch_fd() const { return watch_.fd(); }

  // A link with paths; forgotten when it expires (EpDestroy drops it).
  void AddLink(const std::shared_ptr<PathLink> &link) ADXL_EXCLUDES(mu_);

  // Queue work for Run() and wake the progress thread.  Callable from UCP
  // callbacks.
  // `generation`: that of the endpoint that failed (PathConn::generation);
  // a report about an endpoint the connection no longer has (closed, or
  // replaced by a reconnection) is dropped.
  void ConnFailed(PathConn *conn, uint64_t generation) ADXL_EXCLUDES(mu_);
  void Repost(RepostFn fn, void *part) ADXL_EXCLUDES(mu_);
  // The carrier watch's fd is readable.
  void WatchReadable() { due_.store(true); }
  // A connection went busy: the stall check runs within kStallTick.  The
  // caller wakes the progress thread (or is it).
  void ArmStallCheck();

  // Whether Run() has work now; the epoll timeout (ms) until it has some
  // (-1: none pending).
  bool Due() const { return due_.load(std::memory_order_acquire) || NowNs() >= next_timer_ns_.load(); }
  int TimeoutMs() const;
  // Does the queued and timed work (see the header comment).  Outside
  // ucp_worker_progress.
  void Run() ADXL_EXCLUDES(mu_);

  static int64_t NowNs();

 private:
  void FailConn(PathLink &link, PathConn &conn, const char *why);
  void Reconnect(PathLink &link, PathConn &conn, int64_t now);
  // Fails the silent connections of `link` ("Silent paths"); lowers *next
  // to when to look again.
  // late: this pass came long after the last one; judges nobody.
  void CheckStalls(PathLink &link, int64_t now, bool late, int64_t *next);
  // Posts an empty probe on each idle connection of `link` but `silent`
  // (one at a time per connection), so that a live one shows it.
  void ProbeSiblings(PathLink &link, const PathConn &silent, int64_t now);
  static void ProbeDone(void *arg, int status);
  std::vector<std::shared_ptr<PathLink>> Links() ADXL_EXCLUDES(mu_);

  const UcpCore *core_ = nullptr;
  const std::vector<std::unique_ptr<NetPath>> *paths_ = nullptr;
  LinkWatch watch_;
  std::atomic<bool> due_{false};
  std::atomic<int64_t> next_timer_ns_{INT64_MAX};  // a connection waits to reconnect
  int64_t last_run_ns_ = 0;  // Run's thread only
  adxl::Mutex mu_;
  std::vector<std::weak_ptr<PathLink>> links_ ADXL_GUARDED_BY(mu_);
  struct Failed {
    std::shared_ptr<PathLink> link;
    PathConn *conn;
    uint64_t generation;  // see ConnFailed
  };
  std::vector<Failed> failed_ ADXL_GUARDED_BY(mu_);
  std::vector<std::pair<RepostFn, void *>> reposts_ ADXL_GUARDED_BY(mu_);
};

// The UCP error callback of a path connection (`arg`: its PathConn).
void PathConnError(void *arg, ucp_ep_h ep, ucs_status_t status);
// The AmTransport::ClosedFn of a path connection (`arg`: its PathConn): the
// path's AM transport closed its endpoint (am_transport.h, "Owned
// endpoints"); the connection fails as on a UCP error (FailConn then closes
// nothing more, and reconnects it later).
void PathConnClosed(void *arg, ucp_ep_h ep);

#endif  // ADXL_PLUGIN_UCX_PATHS_PATH_FAILOVER_H_
