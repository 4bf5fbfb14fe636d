// The RDMA lane over several network paths, for the ABI entries (net_paths.h).
#include "paths/net_paths.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "am/am_transport.h"
#include "core/ucp_endpoint.h"
#include "paths/net_path.h"
#include "paths/path_failover.h"
#include "paths/path_link.h"
#include "paths/stripe.h"

namespace {

// A WRITE part's slice deadline (the target places none of its bytes after
// it): kSliceBudgetMin plus kSliceBudgetFactor times the part's time at its
// path's measured rate (kAssumedRate before one is measured), doubled per
// earlier attempt, and never past the batch's own deadline.  Short, so that
// a failed path's part can be re-posted without waiting for the batch's
// deadline (RepostPart); generous, so that a slow but live path meets it.
// The budget is also how long a re-posted WRITE's batch waits after the
// failure at most (RepostPart), hence no more generous than that.
constexpr int64_t kSliceBudgetMinNs = 250 * 1000 * 1000;
constexpr double kSliceBudgetFactor = 3.0;
constexpr double kAssumedRate = 100e6;  // bytes/s
// Posts of one part at most (the first and the re-posts).
constexpr int kMaxAttempts = 8;

struct StripedBatch;

// The operations of a batch one connection moves: re-posted on another when
// that connection fails.
struct Part {
  StripedBatch *parent = nullptr;
  PathConn *conn = nullptr;  // null: the main endpoint's wire-up probe
  uint64_t generation = 0;   // conn's endpoint's when posted (a failure names it)
  size_t bytes = 0;
  std::vector<AmTransport::Op> ops;
  int64_t start_ns = 0;
  int64_t slice_deadline_ns = 0;  // WRITE: as posted (0: none)
  int attempts = 0;
};

// One plugin batch striped over the connections: freed by the last part to
// end.
struct StripedBatch {
  std::shared_ptr<PathLink> link;
  adxl_plugin_batch *batch = nullptr;  // one reference, dropped at the end
  bool put = false;
  bool probe = false;     // the wire-up probe of every connection
  uint64_t deadline_ns = 0;
  std::atomic<size_t> remaining{0};
  std::atomic<int> error{ADXL_PLUGIN_OK};
  std::atomic<int> probes_ok{0};       // path connections whose probe was answered
  std::atomic<int64_t> ready_at_ns{0};  // see adxl_plugin_batch::ready_at_ns
  std::vector<Part> parts;  // sized before the first post, never resized
};

void PartDone(void *arg, int status);

uint64_t SliceDeadline(const StripedBatch &sb, const Part &part, size_t slot) {
  if (!sb.put) return sb.deadline_ns;
  const std::vector<double> w = sb.link->rates->Weights();
  const double rate = slot < w.size() && w[slot] > 0 ? w[slot] : kAssumedRate;
  int64_t budget = kSliceBudgetMinNs + static_cast<int64_t>(kSliceBudgetFactor * 1e9 * part.bytes / rate);
  budget <<= std::min(part.attempts, 4);
  const uint64_t d = static_cast<uint64_t>(PathFailover::NowNs() + budget);
  return sb.deadline_ns != 0 ? std::min(d, sb.deadline_ns) : d;
}

// Posts `part` on `conn`, which the caller acquired; false: nothing started.
// Counted in conn->inflight until PartDone (the silent-path check,
// path_failover.h).
bool PostPart(StripedBatch *sb, Part *part, PathConn *conn) {
  part->conn = conn;
  part->generation = conn->generation.load();  // acquired: stable
  ++part->attempts;
  part->start_ns = PathFailover::NowNs();
  part->slice_deadline_ns = static_cast<int64_t>(SliceDeadline(*sb, *part, conn->slot));
  if (conn->inflight.fetch_add(1) == 0) {
    conn->alive_ns.store(part->start_ns);  // idle until now: silent from here on at most
    sb->link->failover->ArmStallCheck();
  }
  return conn->path->am.Post(sb->link->id, &conn->ep, 1, sb->put, part->ops.data(), part->ops.size(),
                             static_cast<uint64_t>(part->slice_deadline_ns), PartDone, part, &conn->alive_ns);
}

// One part ended for good; the last ends the plugin batch.
void FinishPart(StripedBatch *sb) {
  if (sb->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::unique_ptr<StripedBatch> last(sb);
  int status = last->error.load();
  // The wire-up: the link works when one path connection does (those that
  // failed are closed and reconnected by the failover worker).
  if (last->probe) status = last->probes_ok.load() > 0 ? ADXL_PLUGIN_OK : ADXL_PLUGIN_ERR_IO;
  last->batch->ready_at_ns.store(last->ready_at_ns.load());
  last->batch->status.store(status, std::memory_order_release);
  last->batch->Unref();
}

// Whether a part that ended with `status` goes again on another connection.
bool Reissuable(const StripedBatch &sb, const Part &part, int status) {
  if (status != ADXL_PLUGIN_ERR_IO && status != ADXL_PLUGIN_ERR_NO_RESOURCE && status != ADXL_PLUGIN_ERR_CANCELED) {
    return false;  // the target refused the operations themselves
  }
  if (sb.link->closing.load() || part.attempts >= kMaxAttempts) return false;
  return sb.deadline_ns == 0 || static_cast<uint64_t>(PathFailover::NowNs()) < sb.deadline_ns;
}

// A WRITE part's attempt ended in failure: the batch, however it ends,
// does not end before nothing of that attempt can land.  Its messages
// carried the slice deadline as a budget measured when each was sent (after
// start_ns); the target places none of their bytes later than that budget
// after the message's header arrived, which was before now.  So nothing of
// it lands after now + (slice deadline - start).
void HoldForFailedWrite(StripedBatch *sb, const Part &part) {
  if (!sb->put || part.slice_deadline_ns == 0) return;
  const int64_t safe = PathFailover::NowNs() + (part.slice_deadline_ns - part.start_ns);
  int64_t cur = sb->ready_at_ns.load();
  while (safe > cur && !sb->ready_at_ns.compare_exchange_weak(cur, safe)) {
  }
}

// The failover worker's re-post of a part whose connection failed (or that
// ended with a transport error): on a connection up now, another than the
// failed one where there is one.
void RepostPart(void *arg) {
  auto *part = static_cast<Part *>(arg);
  StripedBatch *sb = part->parent;
  // Held here: once the part is posted, another thread may end the batch
  // and free it with its reference.
  const std::shared_ptr<PathLink> hold = sb->link;
  PathLink &link = *hold;
  if (!link.Enter()) {
    sb->error.store(ADXL_PLUGIN_ERR_CANCELED);
    FinishPart(sb);
    return;
  }
  PathConn *to = nullptr;
  const size_t n = link.conns.size();
  const size_t from = part->conn != nullptr ? part->conn->slot : 0;
  for (size_t i = 1; i <= n && to == nullptr; ++i) {
    PathConn *c = link.conns[(from + i) % n].get();  // the failed one last
    if (c->Acquire()) to = c;
  }
  if (to == nullptr) {
    link.Leave();
    link.core->log(ADXL_PLUGIN_LOG_WARN, "link %llu: no network path left for %zu bytes of a batch",
                  static_cast<unsigned long long>(link.id), part->bytes);
    int none = ADXL_PLUGIN_OK;
    sb->error.compare_exchange_strong(none, ADXL_PLUGIN_ERR_IO);
    FinishPart(sb);
    return;
  }
  link.core->log(ADXL_PLUGIN_LOG_INFO, "link %llu: %zu bytes of a %s re-posted from path %s on path %s (attempt %d)%s",
                static_cast<unsigned long long>(link.id), part->bytes, sb->put ? "WRITE" : "READ",
                part->conn != nullptr ? part->conn->path->device().c_str() : "-", to->path->device().c_str(),
                part->attempts + 1, sb->put ? "; the batch ends after the failed attempt's deadline" : "");
  if (part->conn == nullptr || part->conn->path != to->path) {
    for (AmTransport::Op &op : part->ops) op.local_memh = nullptr;  // the old path's registration
  }
  const bool posted = PostPart(sb, part, to);
  to->Release();
  link.Leave();
  if (!posted) PartDone(part, ADXL_PLUGIN_ERR_NO_RESOURCE);
}

// AmTransport::DoneFn of one part (from a UCP callback, a posting thread or the
// progress thread; outside the AM transport's locks).
void PartDone(void *arg, int status) {
  auto *part = static_cast<Part *>(arg);
  StripedBatch *sb = part->parent;
  if (part->conn != nullptr) part->conn->inflight.fetch_sub(1);  // counted by PostPart
  if (sb->probe) {
    if (part->conn != nullptr) {
      if (status == ADXL_PLUGIN_OK) {
        part->conn->heard.store(true);
        sb->probes_ok.fetch_add(1);
      } else {
        sb->link->failover->ConnFailed(part->conn, part->generation);
      }
    }
    FinishPart(sb);
    return;
  }
  if (status == ADXL_PLUGIN_OK) {
    const double took = static_cast<double>(PathFailover::NowNs() - part->start_ns) / 1e9;
    sb->link->rates->Record(part->conn->slot, part->bytes, took);
    part->conn->heard.store(true);
    part->conn->backoff_ns.store(0);  // the path moves data: a next failure retries soon
  } else {
    HoldForFailedWrite(sb, *part);  // re-posted or not
    if (Reissuable(*sb, *part, status)) {
      sb->link->failover->Repost(RepostPart, part);
      return;
    }
    int none = ADXL_PLUGIN_OK;
    sb->error.compare_exchange_strong(none, status);
  }
  FinishPart(sb);
}

}  // namespace

bool ConnectPaths(adxl_plugin_ep *ep, const ucx_blob::Address &peer, const std::vector<std::unique_ptr<NetPath>> &paths,
                  PathFailover *failover, const UcpCore &core) {
  if (paths.empty() || peer.paths.empty()) {
    if (!paths.empty() || !peer.paths.empty()) {
      core.log(ADXL_PLUGIN_LOG_INFO, "RDMA lane: %s has network paths, %s not: the link uses one connection",
               paths.empty() ? "the peer" : "this side", paths.empty() ? "this side" : "the peer");
    }
    return false;
  }
  auto link = std::make_shared<PathLink>(&core, failover, ep->id);
  std::vector<bool> used(peer.paths.size(), false);
  size_t up = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    NetPath *p = paths[i].get();
    size_t j = 0;
    while (j < peer.paths.size() && (used[j] || !p->Reaches(peer.paths[j].ipv4))) ++j;
    if (j == peer.paths.size()) {
      core.log(ADXL_PLUGIN_LOG_INFO, "RDMA lane: no path of the peer in the subnet of path %s", p->device().c_str());
      continue;
    }
    used[j] = true;
    auto c = std::make_unique<PathConn>();
    c->link = link.get();
    c->path = p;
    c->index = i;
    c->slot = link->conns.size();
    c->peer_ucp = peer.paths[j].ucp;
    // A path without carrier joins the link when it returns (the failover
    // worker reconnects it); so does one whose connection cannot be made.
    if (p->running.load()) {
      ucs_status_t st = UCS_OK;
      c->generation.store(1);  // before the endpoint exists (path_failover.cc, Reconnect)
      {
        // The peer's path requests may come back on it (core/owned_endpoints.h).
        OwnedEndpoints::Creating creating(p->am);
        c->ep = CreateUcpEp(&core, p->worker(), c->peer_ucp, PathConnError, c.get(), &st);
        if (c->ep != nullptr) p->am.Own(c->ep, ep->id, PathConnClosed, c.get());
      }
      if (c->ep == nullptr) {
        core.log(ADXL_PLUGIN_LOG_WARN, "RDMA lane: no connection over path %s (%s) for now",
                 p->device().c_str(), ucs_status_string(st));
      }
    } else {
      core.log(ADXL_PLUGIN_LOG_WARN, "RDMA lane: path %s has no carrier; the link starts without it",
               p->device().c_str());
    }
    if (c->ep != nullptr) ++up;
    c->state.store(c->ep != nullptr ? PathConn::kUp : PathConn::kDown);
    link->conns.push_back(std::move(c));
  }
  if (link->conns.empty()) {
    core.log(ADXL_PLUGIN_LOG_WARN, "RDMA lane: no network path pairs with the peer's; the link uses one connection");
    return false;
  }
  link->rates = std::make_unique<stripe::PathRates>(link->conns.size());
  ep->paths = link;
  failover->AddLink(link);
  if (up == 0) core.log(ADXL_PLUGIN_LOG_WARN, "RDMA lane: no network path of the link is up for now");
  return true;
}

void ClosePaths(adxl_plugin_ep *ep, bool force) {
  PathLink &link = *ep->paths;
  // The failover worker leaves the link alone from here on.
  link.closing.store(true);
  while (link.busy.load() != 0) std::this_thread::yield();
  std::vector<PathConn *> open;
  for (const auto &c : link.conns) {
    int s = c->state.load();
    while ((s == PathConn::kUp || s == PathConn::kProbing) && !c->state.compare_exchange_weak(s, PathConn::kClosing)) {
    }
    if (s == PathConn::kUp || s == PathConn::kProbing) open.push_back(c.get());
  }
  for (PathConn *c : open) {
    while (c->users.load() != 0) std::this_thread::yield();
    c->path->am.Fence(link.id, ADXL_PLUGIN_ERR_CANCELED);  // nothing more is sent from a callback
  }
  for (PathConn *c : open) {
    // Not one the path's AM transport closed already (am_transport.h, "Owned endpoints").
    if (c->path->am.Disown(c->ep, link.id)) CloseUcpEp(link.core, c->path->worker(), c->ep, force);
  }
  // No byte of an ended batch lands after this.
  for (PathConn *c : open) {
    c->path->am.Abandon(link.id, ADXL_PLUGIN_ERR_CANCELED);
    c->ep = nullptr;
    c->state.store(PathConn::kDown);
  }
}

void PostOnPaths(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
                 adxl_plugin_batch *batch, AmTransport &main) {
  PathLink &link = *ep->paths;
  // The connections up now, held until every part is posted.
  std::vector<PathConn *> up;
  for (const auto &c : link.conns) {
    if (c->Acquire()) up.push_back(c.get());
  }
  const size_t n = up.size();
  if (n == 0 && count > 0) {
    batch->status.store(ADXL_PLUGIN_ERR_IO);  // every path is down: the failover worker logged it
    return;
  }
  // Part k < n: connection up[k].  count 0 (the wire-up): every connection
  // up probed and, as part n, the main endpoint.
  auto sb = std::make_unique<StripedBatch>();
  sb->link = ep->paths;
  sb->batch = batch;
  sb->put = put && count > 0;
  sb->probe = count == 0;
  sb->deadline_ns = deadline_ns;
  sb->parts.resize(count == 0 ? n + 1 : n);
  for (size_t k = 0; k < sb->parts.size(); ++k) {
    sb->parts[k].parent = sb.get();
    sb->parts[k].conn = k < n ? up[k] : nullptr;
  }
  size_t posting = sb->parts.size();
  if (count > 0) {
    std::vector<size_t> lens(count);
    for (size_t i = 0; i < count; ++i) lens[i] = static_cast<size_t>(iov[i].length);
    const std::vector<double> all = link.rates->Weights();
    std::vector<double> weights(n);
    for (size_t k = 0; k < n; ++k) weights[k] = all[up[k]->slot];
    const size_t whole_on = link.next_whole[put ? 1 : 0].fetch_add(1, std::memory_order_relaxed) % n;
    const std::vector<std::vector<stripe::Piece>> slices = stripe::StripeOps(lens.data(), count, weights, whole_on);
    posting = 0;
    for (size_t k = 0; k < n; ++k) {
      // Each connection's operations, with its path's registration of the local side.
      Part &part = sb->parts[k];
      const size_t path = up[k]->index;
      for (const stripe::Piece &pc : slices[k]) {
        const adxl_plugin_iov_t &v = iov[pc.op];
        ucp_mem_h memh = v.local != nullptr && path < v.local->path_memh.size() ? v.local->path_memh[path] : nullptr;
        part.ops.push_back({reinterpret_cast<void *>(static_cast<uintptr_t>(v.local_addr + pc.offset)), memh,
                            v.remote_addr + pc.offset, pc.len});
        part.bytes += pc.len;
      }
      if (!part.ops.empty()) ++posting;
    }
  }
  // What to post, listed before the first post: once the last part is
  // posted, any thread (a completion, the failover worker's re-post) may end
  // it and free the batch, so the loop below reads only this list.
  std::vector<std::pair<Part *, PathConn *>> to_post;  // conn null: the main endpoint's probe
  for (size_t k = 0; k < sb->parts.size(); ++k) {
    if (count == 0 || !sb->parts[k].ops.empty()) to_post.emplace_back(&sb->parts[k], k < n ? up[k] : nullptr);
  }
  batch->refs.fetch_add(1);  // held until the last part ends
  sb->remaining.store(posting, std::memory_order_relaxed);
  StripedBatch *owned = sb.release();  // the last part to end frees it
  const uint64_t link_id = link.id;
  for (const auto &tp : to_post) {
    Part *part = tp.first;
    bool posted;
    if (tp.second != nullptr) {
      posted = PostPart(owned, part, tp.second);
    } else {
      part->start_ns = PathFailover::NowNs();
      posted = main.Post(link_id, &ep->ep, 1, false, nullptr, 0, deadline_ns, PartDone, part);
    }
    if (!posted) PartDone(part, ADXL_PLUGIN_ERR_NO_RESOURCE);  // nothing started on this connection
  }
  for (PathConn *c : up) c->Release();
  link.core->Wake();
}

std::string DescribePaths(const adxl_plugin_ep *ep) {
  std::string s;
  for (const auto &c : ep->paths->conns) {
    if (!s.empty()) s += "+";
    if (c->Acquire()) {
      {
        // Held open while read, unless its AM transport closed it (am_transport.h).
        OwnedEndpoints::Use use(c->path->am, c->ep, ep->id);
        s += use.open() ? DescribeUcpEp(c->ep) : "closed/" + c->path->device();
      }
      c->Release();
    } else {
      s += "down/" + c->path->device();
    }
  }
  return s;
}
