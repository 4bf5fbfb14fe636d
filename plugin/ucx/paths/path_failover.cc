// Failed network paths out of their links, and back (path_failover.h).
#include "paths/path_failover.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "core/ucp_endpoint.h"
#include "paths/net_path.h"
#include "core/ucp_core.h"

namespace {

constexpr int64_t ToNs(std::chrono::nanoseconds d) { return d.count(); }

}  // namespace

int64_t PathFailover::NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void PathFailover::Init(const UcpCore *core, const std::vector<std::unique_ptr<NetPath>> *paths) {
  core_ = core;
  paths_ = paths;
  std::string why;
  if (!watch_.Open(&why)) {
    core->log(ADXL_PLUGIN_LOG_WARN, "network paths: carrier changes not watched (%s); failed paths are found by UCX",
             why.c_str());
  }
}

void PathFailover::AddLink(const std::shared_ptr<PathLink> &link) {
  bool timer = false;
  {
    adxl::MutexLock l(&mu_);
    links_.erase(std::remove_if(links_.begin(), links_.end(), [](const std::weak_ptr<PathLink> &w) { return w.expired(); }),
                 links_.end());
    links_.push_back(link);
  }
  for (const auto &c : link->conns) timer = timer || c->state.load() == PathConn::kDown;
  if (timer) {
    next_timer_ns_.store(NowNs());
    core_->Wake();
  }
}

void PathFailover::ConnFailed(PathConn *conn, uint64_t generation) {
  std::shared_ptr<PathLink> link = conn->link->shared_from_this();
  {
    adxl::MutexLock l(&mu_);
    failed_.push_back({std::move(link), conn, generation});
  }
  due_.store(true, std::memory_order_release);
  core_->Wake();
}

void PathFailover::Repost(RepostFn fn, void *part) {
  {
    adxl::MutexLock l(&mu_);
    reposts_.emplace_back(fn, part);
  }
  due_.store(true, std::memory_order_release);
  core_->Wake();
}

void PathFailover::ArmStallCheck() {
  const int64_t at = NowNs() + ToNs(kStallTick);
  int64_t cur = next_timer_ns_.load();
  while (at < cur && !next_timer_ns_.compare_exchange_weak(cur, at)) {
  }
}

int PathFailover::TimeoutMs() const {
  const int64_t at = next_timer_ns_.load();
  if (at == INT64_MAX) return -1;
  const int64_t left = at - NowNs();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left / 1000000 + 1, 1000));
}

std::vector<std::shared_ptr<PathLink>> PathFailover::Links() {
  std::vector<std::shared_ptr<PathLink>> out;
  adxl::MutexLock l(&mu_);
  for (const auto &w : links_) {
    if (auto s = w.lock()) out.push_back(std::move(s));
  }
  return out;
}

void PathFailover::Run() {
  due_.store(false);
  next_timer_ns_.store(INT64_MAX);
  // 1. Carrier changes: a path that lost it fails on every link.
  std::vector<std::pair<unsigned, bool>> changes;
  watch_.Drain(&changes);
  std::vector<NetPath *> lost;
  for (const auto &ch : changes) {
    for (const auto &p : *paths_) {
      if (ch.first != 0 && ch.first != p->ifindex()) continue;
      const bool running = ch.first == 0 ? LinkWatch::Running(p->ifindex()) : ch.second;
      if (p->running.exchange(running) == running) continue;
      if (running) p->carrier_since_ns.store(NowNs());
      core_->log(running ? ADXL_PLUGIN_LOG_INFO : ADXL_PLUGIN_LOG_WARN, "network path %s: carrier %s",
                p->device().c_str(), running ? "back" : "lost");
      if (!running) lost.push_back(p.get());
    }
  }
  const std::vector<std::shared_ptr<PathLink>> links = Links();
  for (NetPath *p : lost) {
    for (const auto &link : links) {
      if (!link->Enter()) continue;
      for (const auto &c : link->conns) {
        if (c->path == p) FailConn(*link, *c, "its interface lost carrier");
      }
      link->Leave();
    }
  }
  // 2. Connections UCP or a probe reported failed.
  std::vector<Failed> failed;
  std::vector<std::pair<RepostFn, void *>> reposts;
  {
    adxl::MutexLock l(&mu_);
    failed.swap(failed_);
  }
  for (Failed &f : failed) {
    if (!f.link->Enter()) continue;
    // A new endpoint is made only here (and by EpDestroy, once the link is
    // closing): a report about an earlier one is stale.
    if (f.conn->generation.load() == f.generation) {
      FailConn(*f.link, *f.conn, "its connection failed");
    } else {
      core_->log(ADXL_PLUGIN_LOG_INFO, "network path %s of link %llu: a failure of an endpoint it has since closed, "
                "not of its current one", f.conn->path->device().c_str(),
                static_cast<unsigned long long>(f.link->id));
    }
    f.link->Leave();
  }
  // 3. Parts ended by those failures (and any others): on the paths left.
  // Taken after the closes above, whose Abandon queued them.
  {
    adxl::MutexLock l(&mu_);
    reposts.swap(reposts_);
  }
  for (const auto &r : reposts) r.first(r.second);
  // 4. Connections to bring back.
  const int64_t now = NowNs();
  int64_t next = INT64_MAX;
  // A pass that comes late (this thread starved, or held up by a close)
  // judges no connection silent: their answers may be waiting unread.
  const bool late = last_run_ns_ != 0 && now - last_run_ns_ > 3 * ToNs(kStallTick);
  last_run_ns_ = now;
  for (const auto &link : links) {
    if (!link->Enter()) continue;
    CheckStalls(*link, now, late, &next);
    for (const auto &c : link->conns) {
      const int s = c->state.load();
      if (s == PathConn::kProbing) {
        if (now >= c->probe_deadline_ns.load()) {
          FailConn(*link, *c, "no answer to its probe");
        } else {
          next = std::min(next, c->probe_deadline_ns.load());
        }
      }
      if (c->state.load() != PathConn::kDown) continue;
      const int64_t steady_at = c->path->carrier_since_ns.load() + ToNs(kHoldDown);
      if (c->path->running.load() && now >= c->retry_at_ns.load() && now >= steady_at) Reconnect(*link, *c, now);
      if (c->state.load() == PathConn::kDown) {
        next = std::min(next, std::max({c->retry_at_ns.load(), steady_at, now + ToNs(kRetryMin)}));
      } else if (c->state.load() == PathConn::kProbing) {
        next = std::min(next, c->probe_deadline_ns.load());
      }
    }
    link->Leave();
  }
  if (next != INT64_MAX) {
    int64_t cur = next_timer_ns_.load();
    while (next < cur && !next_timer_ns_.compare_exchange_weak(cur, next)) {
    }
  }
}

namespace {

// A probe of an idle connection for CheckStalls: holds the link until it ends.
struct SiblingProbe {
  std::shared_ptr<PathLink> link;
  PathConn *conn;
};

// The probe of a reconnected connection for ProbeDone: which endpoint it
// probes (generation); holds the link until it ends.
struct ReconnectProbe {
  std::shared_ptr<PathLink> link;
  PathConn *conn;
  uint64_t generation;
};

void SiblingProbeDone(void *arg, int) {
  std::unique_ptr<SiblingProbe> p(static_cast<SiblingProbe *>(arg));
  p->conn->sibling_probe.store(false);
}

}  // namespace

void PathFailover::ProbeSiblings(PathLink &link, const PathConn &silent, int64_t now) {
  for (const auto &o : link.conns) {
    if (o.get() == &silent || o->inflight.load() != 0 || o->sibling_probe.exchange(true)) continue;
    bool posted = false;
    if (o->Acquire()) {  // `ep` stays while acquired
      auto probe = std::make_unique<SiblingProbe>(SiblingProbe{link.shared_from_this(), o.get()});
      // Its answer is stamped into alive_ns, as a part's would be.
      posted = o->path->am.Post(link.id, &o->ep, 1, false, nullptr, 0,
                                static_cast<uint64_t>(now + ToNs(kProbeBudget)), SiblingProbeDone, probe.get(),
                                &o->alive_ns);
      if (posted) probe.release();  // SiblingProbeDone frees it
      o->Release();
    }
    if (!posted) o->sibling_probe.store(false);
  }
}

void PathFailover::CheckStalls(PathLink &link, int64_t now, bool late, int64_t *next) {
  if (link.conns.size() < 2) return;
  std::vector<double> rates;
  for (const auto &c : link.conns) {
    if (c->state.load() != PathConn::kUp || c->inflight.load() == 0 || late) {
      c->behind_since_ns.store(0);
      if (late && c->inflight.load() != 0) *next = std::min(*next, now + ToNs(kStallTick));
      continue;
    }
    *next = std::min(*next, now + ToNs(kStallTick));  // checked while busy
    const int64_t alive = c->alive_ns.load();
    // (b): another connection answered after this one's last sign of life
    // and is idle (all answered) or still answered recently.
    const PathConn *witness = nullptr;
    for (const auto &o : link.conns) {
      if (o.get() == c.get() || o->state.load() != PathConn::kUp) continue;
      const int64_t o_alive = o->alive_ns.load();
      if (o_alive > alive && (o->inflight.load() == 0 || now - o_alive < ToNs(kStallAfter))) witness = o.get();
    }
    if (witness == nullptr) {
      c->behind_since_ns.store(0);
      // Silent for the budget's base and no other connection moving: a
      // call small enough to go whole on this one.  Probe the idle others;
      // an answer makes a witness.
      if (now - std::max(alive, c->path->am.LastAnswerNs()) >= ToNs(kStallAfter)) ProbeSiblings(link, *c, now);
      continue;
    }
    int64_t since = c->behind_since_ns.load();
    if (since == 0 || since < alive) {
      since = now;
      c->behind_since_ns.store(now);
    }
    if (rates.empty()) rates = link.rates->Weights();
    const double rate = c->slot < rates.size() ? rates[c->slot] : 0.0;
    const int64_t budget = ToNs(kStallAfter) +
                           (rate > 0 ? static_cast<int64_t>(3e9 * AmTransport::kMaxMessageBytes / rate) : 0) +
                           (c->heard.load() ? 0 : ToNs(kFirstAnswerExtra));
    // (a) silent for the budget since the witness was seen, (c) its path
    // silent as long.
    const int64_t path_quiet_since = std::max(alive, c->path->am.LastAnswerNs());
    if (now - since >= budget && now - path_quiet_since >= budget) {
      char why[160];
      snprintf(why, sizeof why, "no answer for %.1f s while path %s of the same peer answered",
               static_cast<double>(now - alive) / 1e9, witness->path->device().c_str());
      FailConn(link, *c, why);
    } else {
      *next = std::min(*next, std::max(since, path_quiet_since) + budget);
    }
  }
}

void PathFailover::FailConn(PathLink &link, PathConn &conn, const char *why) {
  int s = conn.state.load();
  while ((s == PathConn::kUp || s == PathConn::kProbing) && !conn.state.compare_exchange_weak(s, PathConn::kClosing)) {
  }
  if (s != PathConn::kUp && s != PathConn::kProbing) return;  // down already, or being closed by EpDestroy
  while (conn.users.load() != 0) std::this_thread::yield();   // posts are short and never wait
  core_->log(ADXL_PLUGIN_LOG_WARN, "network path %s of link %llu failed (%s): its operations move over the others",
            conn.path->device().c_str(), static_cast<unsigned long long>(link.id), why);
  conn.path->am.Fence(link.id, ADXL_PLUGIN_ERR_IO);
  // Not when the path's AM transport closed it already (PathConnClosed).
  if (conn.path->am.Disown(conn.ep, link.id)) CloseUcpEp(core_, conn.path->worker(), conn.ep, true);
  conn.path->am.Abandon(link.id, ADXL_PLUGIN_ERR_IO);
  conn.ep = nullptr;
  conn.backoff_ns.store(std::min(std::max(conn.backoff_ns.load() * 2, ToNs(kRetryMin)), ToNs(kRetryMax)));
  conn.retry_at_ns.store(NowNs() + conn.backoff_ns.load());
  conn.behind_since_ns.store(0);
  conn.heard.store(false);
  conn.state.store(PathConn::kDown);
}

void PathFailover::Reconnect(PathLink &link, PathConn &conn, int64_t now) {
  ucs_status_t st = UCS_OK;
  conn.retry_at_ns.store(now + std::max(conn.backoff_ns.load(), ToNs(kRetryMin)));
  // Raised before the endpoint exists: its error callback may run on
  // another thread as soon as it does, and reads the generation.
  const uint64_t generation = conn.generation.fetch_add(1) + 1;
  ucp_ep_h e = nullptr;
  {
    // core/owned_endpoints.h.  Not while a mem_dereg closes the path's
    // peer endpoints: this thread drives every worker and must not wait.
    OwnedEndpoints::Creating creating(conn.path->am, /*wait=*/false);
    if (!creating.started()) return;  // tried again at retry_at_ns
    e = CreateUcpEp(core_, conn.path->worker(), conn.peer_ucp, PathConnError, &conn, &st);
    if (e != nullptr) conn.path->am.Own(e, link.id, PathConnClosed, &conn);
  }
  if (e == nullptr) return;  // logged; tried again at retry_at_ns
  conn.ep = e;
  const int64_t deadline = NowNs() + ToNs(kProbeBudget);
  conn.probe_deadline_ns.store(deadline);
  conn.state.store(PathConn::kProbing);
  // The probe: one empty READ answered over the peer's reply endpoint
  // (am_transport.h, "Wire-up"); ProbeDone moves the connection on.
  auto probe = std::make_unique<ReconnectProbe>(ReconnectProbe{link.shared_from_this(), &conn, generation});
  if (conn.path->am.Post(link.id, &conn.ep, 1, false, nullptr, 0, static_cast<uint64_t>(deadline), ProbeDone,
                         probe.get())) {
    probe.release();  // ProbeDone's
  } else {
    FailConn(link, conn, "its probe could not be sent");
  }
  core_->Wake();
}

void PathFailover::ProbeDone(void *arg, int status) {
  std::unique_ptr<ReconnectProbe> probe(static_cast<ReconnectProbe *>(arg));
  PathConn *conn = probe->conn;
  const UcpCore *core = conn->link->core;
  // The probe of an endpoint the connection has since closed (and maybe
  // replaced): it says nothing about the current one.
  if (conn->generation.load() != probe->generation) return;
  if (status == ADXL_PLUGIN_OK) {
    int s = PathConn::kProbing;
    conn->heard.store(true);
    if (conn->state.compare_exchange_strong(s, PathConn::kUp)) {
      core->log(ADXL_PLUGIN_LOG_INFO, "network path %s of link %llu is back", conn->path->device().c_str(),
               static_cast<unsigned long long>(conn->link->id));
    }
    return;
  }
  if (conn->state.load() == PathConn::kProbing) conn->link->failover->ConnFailed(conn, probe->generation);
}

void PathConnError(void *arg, ucp_ep_h, ucs_status_t status) {
  auto *conn = static_cast<PathConn *>(arg);
  conn->link->core->log(ADXL_PLUGIN_LOG_WARN, "UCX endpoint of network path %s failed: %s",
                       conn->path->device().c_str(), ucs_status_string(status));
  // UCP calls this only for an endpoint not closed yet, under its worker
  // lock, which closing takes too; a next endpoint is made only after this
  // one is closed.  So the endpoint that failed is the current generation.
  conn->link->failover->ConnFailed(conn, conn->generation.load());
}

void PathConnClosed(void *arg, ucp_ep_h) {
  auto *conn = static_cast<PathConn *>(arg);
  conn->link->core->log(ADXL_PLUGIN_LOG_WARN,
                       "UCX endpoint of network path %s closed: a peer's request on it used memory being deregistered",
                       conn->path->device().c_str());
  // Its current endpoint: the owner disowns it (FailConn, ClosePaths)
  // before making another, and that waits for this call.
  conn->link->failover->ConnFailed(conn, conn->generation.load());
}
