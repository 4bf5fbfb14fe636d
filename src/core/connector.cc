#include "core/connector.h"

#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

#include "common/log.h"
#include "control/socket.h"
#include "transport/lane_select.h"

namespace adxl {

Connector::Connector(HandshakeIdentity self, const EngineOptions &options, std::shared_ptr<Transport> transport,
                     ControlLoop *loop, LinkTable *links)
    : self_(std::move(self)),
      auto_connect_(options.auto_connect),
      protocols_(options.protocols),
      transport_(std::move(transport)),
      loop_(loop),
      links_(links),
      pool_max_(options.pool_on ? options.pool_max_channel : 0),
      pool_high_(options.pool_high_waterline > 0
                     ? static_cast<size_t>(options.pool_high_waterline * options.pool_max_channel)
                     : options.pool_max_channel),
      pool_low_(options.pool_low_waterline > 0
                    ? static_cast<size_t>(options.pool_low_waterline * options.pool_max_channel)
                    : options.pool_max_channel) {
  // Without it (no descriptors left) Finalize still refuses new Connects,
  // but one in its handshake runs to its own deadline, as before.
  stop_fd_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!stop_fd_.valid()) {
    ADXL_WARN("eventfd: %s; a Connect in its handshake when Finalize comes runs to its own deadline",
              strerror(errno));
  }
}

void Connector::CloseLink(const std::shared_ptr<Link> &link, Clock::time_point deadline) {
  if (link->state() == LinkState::kConnected) link->conn->Send(wire::Bye{}, 0, deadline);
  link->conn->Close();
  link->Shutdown();
}

void Connector::Stop(Clock::time_point deadline) {
  stopping_.store(true);
  // Ends every Connect in its TCP connect or handshake (they poll stop_fd_
  // beside their socket), now and later: the eventfd is never read, so it
  // stays readable.  One write, no lock and no socket of theirs touched.
  if (stop_fd_.valid()) {
    const uint64_t one = 1;
    if (write(stop_fd_.get(), &one, sizeof(one)) != static_cast<ssize_t>(sizeof(one))) {
      ADXL_WARN("Finalize: waking the Connects in their handshake failed (%s); they end at their deadline",
                strerror(errno));
    }
  }
  for (const auto &link : links_->Connected()) CloseLink(link, deadline);
}

bool Connector::Stopping(const char *api, const std::string &remote) const {
  if (!stopping_.load()) return false;
  ADXL_ERROR("%s to '%s': refused, Finalize is running", api, remote.c_str());
  return true;
}

void Connector::Evict(const std::vector<std::shared_ptr<Link>> &victims, const std::string &remote,
                      const char *why) {
  for (const auto &link : victims) {
    {
      MutexLock l(&evicted_mu_);
      evicted_.insert(link->remote());
    }
    const int64_t used = link->last_used_ns.load();
    CloseLink(link, Clock::now() + std::chrono::milliseconds(1000));
    ADXL_INFO("channel pool: evicted the idle link to '%s' (%s; %s) for the Connect to '%s'; a transfer to it "
              "reconnects", link->remote().c_str(), used == 0 ? "never used" : "least recently used", why,
              remote.c_str());
  }
}

void Connector::EvictAboveHighMark(const std::string &remote) {
  const size_t n = links_->size();
  if (n + 1 <= pool_high_ || n <= pool_low_) return;
  std::vector<std::shared_ptr<Link>> victims = links_->TakeEvictable(n - pool_low_, Link::NowNs() - kPoolIdleMs * 1000000);
  if (victims.empty()) return;
  Evict(victims, remote, "above channel_pool.high_waterline");
  ADXL_INFO("channel pool: %zu links after evicting %zu (max_channel %zu, high mark %zu, low mark %zu)",
            links_->size(), victims.size(), pool_max_, pool_high_, pool_low_);
}

bool Connector::WasEvicted(const std::string &remote) const {
  MutexLock l(&evicted_mu_);
  return evicted_.count(remote) != 0;
}

Status Connector::Connect(const std::string &remote, int32_t timeout_ms) {
  if (timeout_ms <= 0) {
    ADXL_ERROR("Connect to '%s': timeout %d ms must be > 0", remote.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  EngineName peer;
  std::string why;
  if (!ParseEngineName(remote, &peer, &why)) {
    ADXL_ERROR("Connect: invalid remote engine name %s", why.c_str());
    return PARAM_INVALID;
  }
  if (!peer.listens()) {
    ADXL_ERROR("Connect to '%s': no port, so that engine is client only and cannot be connected to", remote.c_str());
    return PARAM_INVALID;
  }
  if (remote == self_.name) {
    ADXL_ERROR("Connect to '%s': an engine cannot connect to itself", remote.c_str());
    return PARAM_INVALID;
  }
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  bool waiting = false;
  while (true) {
    if (Stopping("Connect", remote)) return FAILED;
    if (pool_max_ > 0 && !links_->Find(remote)) EvictAboveHighMark(remote);
    bool mine = false;
    std::shared_ptr<Link> link = links_->Claim(remote, &mine, pool_max_);
    if (!link) {
      // The pool is full: an idle link makes room, or one becomes idle, or
      // someone disconnects, before the deadline.
      std::vector<std::shared_ptr<Link>> victims =
          links_->TakeEvictable(1, Link::NowNs() - kPoolIdleMs * 1000000);
      if (!victims.empty()) {
        Evict(victims, remote, "channel_pool.max_channel reached");
        continue;
      }
      const Clock::time_point now = Clock::now();
      if (now >= deadline) {
        ADXL_ERROR("Connect to '%s': the channel pool holds channel_pool.max_channel = %zu links and none was idle "
                   "(each has a transfer in progress or one in the last %lld ms) within the timeout of %d ms",
                   remote.c_str(), pool_max_, static_cast<long long>(kPoolIdleMs), timeout_ms);
        return RESOURCE_EXHAUSTED;
      }
      if (!waiting) {
        ADXL_INFO("Connect to '%s': the channel pool is full (%zu links, none idle); waiting up to %d ms",
                  remote.c_str(), pool_max_, timeout_ms);
        waiting = true;
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(20)));
      continue;
    }
    if (!mine) {
      // Another call is connecting, or a link exists.
      if (!link->WaitSettled(deadline)) {
        ADXL_ERROR("Connect to '%s': timed out waiting for a concurrent Connect", remote.c_str());
        return TIMEOUT;
      }
      if (links_->Find(remote) == link) {
        if (link->state() == LinkState::kFailed) {
          // The peer died, restarted under the same name, or a transfer
          // timed out: the failed link is dropped with everything of it
          // (endpoint, keys, the peer's regions) and a new one is made, so
          // that nothing of the old peer is mixed with the new one and
          // nobody has to Disconnect first.
          ADXL_INFO("Connect to '%s': replacing the failed link", remote.c_str());
          links_->Remove(link);
          if (link->conn) link->conn->Close();
          link->Shutdown();
          continue;
        }
        ADXL_INFO("Connect to '%s': already connected", remote.c_str());
        return ALREADY_CONNECTED;
      }
      continue;  // the other attempt failed: try ourselves
    }
    Status st = ConnectOnce(link, peer, deadline);
    if (st == SUCCESS) {
      link->connected_ns.store(Link::NowNs());
      if (!link->SetConnected()) {
        // Failed between the loop taking its connection and here (the peer
        // said Bye or closed): a failed connect, not a connected dead link.
        ADXL_ERROR("Connect to '%s': the link failed as it was set up", remote.c_str());
        st = FAILED;
      } else if (stopping_.load()) {
        // Finalize came while the link was being made: Stop may have looked
        // for connected links before this one was, so it is undone here (the
        // calls in flight end with an error, docs/contract.md §3.3).  Set
        // connected first, then this check: Stop sets stopping_ before it
        // looks, so one of the two always sees the other.
        ADXL_ERROR("Connect to '%s': Finalize came before the link was ready; closed", remote.c_str());
        st = FAILED;
      }
    }
    link->stats->RecordConnect(st == SUCCESS);  // stats hook (link_stats.h)
    if (st != SUCCESS) {
      links_->Remove(link);
      if (link->conn) link->conn->Close();
      link->Shutdown();
      return st;
    }
    return SUCCESS;
  }
}

Status Connector::ConnectOnce(const std::shared_ptr<Link> &link, const EngineName &peer,
                              Clock::time_point deadline) {
  const std::string &remote = peer.text;
  const Clock::time_point start = Clock::now();
  Fd fd;
  std::string why;
  Clock::time_point phase_start = Clock::now();  // stats hook: each phase is timed when it completes
  auto phase_done = [&](ConnectPhase phase) {
    const Clock::time_point now = Clock::now();
    link->stats->RecordPhase(phase, now - phase_start);
    phase_start = now;
  };
  // The TCP connect and the handshake poll stop_fd_ too: Finalize ends
  // them at once (Stop), FAILED.
  NetResult nr = ConnectTcp(peer.host, peer.ipv6, peer.port, deadline, &fd, &why, stop_fd_.get());
  if (nr != NetResult::kOk) {
    ADXL_ERROR("Connect to '%s': %s%s", remote.c_str(), why.c_str(),
               nr == NetResult::kCancelled ? ", Finalize is running" : "");
    return nr == NetResult::kTimeout ? TIMEOUT : FAILED;
  }
  phase_done(ConnectPhase::kTcp);
  wire::HelloAck ack;
  Status st = RunClientHandshake(fd.get(), self_, remote, deadline, &ack, stop_fd_.get());
  auto conn = std::make_shared<ControlConn>(std::move(fd), ControlConn::Role::kClient, remote);
  link->conn = conn;
  if (st != SUCCESS) return st;
  phase_done(ConnectPhase::kHandshake);
  const bool same_node = ack.node_id == self_.node_id;
  const uint32_t lanes = AllowedLanes(same_node, protocols_);
  if (lanes == 0) {
    ADXL_ERROR("Connect to '%s': no lane allowed by comm_resource_config.protocol_desc reaches a peer on %s node",
               remote.c_str(), same_node ? "the same" : "another");
    return FAILED;
  }
  std::shared_ptr<Endpoint> ep;
  int rc = Endpoint::Create(transport_, ack.transport_address, lanes, &ep);
  if (rc != ADXL_PLUGIN_OK) {
    ADXL_ERROR("Connect to '%s': no allowed lane reaches the peer (transport status %d)", remote.c_str(), rc);
    return FAILED;
  }
  link->endpoint = ep;
  link->peer_node_id = ack.node_id;
  // The transport's wire-up starts now and runs while the peer's keys are
  // unpacked.  From here on a failed Connect never closes the endpoint in
  // mid wire-up: the reaper does once it ended (wireup_reaper.h).
  const Clock::time_point wireup_start = Clock::now();
  std::unique_ptr<Batch> flush;
  rc = ep->Post(ADXL_PLUGIN_PUT, nullptr, 0, &flush);
  const Status st_wireup = [&]() -> Status {
    for (const wire::Region &r : ack.regions) {
      if (link->AddRegion(r) != SUCCESS) return FAILED;
    }
    for (wire::Metadata &m : ack.metadata) {
      if (link->SetMetadata(std::move(m)) != SUCCESS) return FAILED;
    }
    // The plugin's progress thread drives the wire-up (it sleeps on the
    // worker's events): this thread only looks, with a growing pause and
    // without progressing the transport itself.  Hundreds of peers
    // connecting at once to one engine on a small machine would otherwise
    // spin and starve that engine's progress thread, which answers all of
    // their wire-ups.
    auto pause = std::chrono::microseconds(20);
    while (rc == ADXL_PLUGIN_OK && flush->Test() == ADXL_PLUGIN_IN_PROGRESS) {
      if (stopping_.load()) {
        // Finalize: it must not wait for this Connect's deadline.  The
        // endpoint goes to the reaper below, as for a timeout.
        ADXL_ERROR("Connect to '%s': transport wire-up cancelled, Finalize is running", remote.c_str());
        return FAILED;
      }
      if (Clock::now() >= deadline) {
        ADXL_ERROR("Connect to '%s': transport wire-up timed out", remote.c_str());
        return TIMEOUT;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
    if (rc == ADXL_PLUGIN_OK) rc = flush->Test();
    if (rc != ADXL_PLUGIN_OK) {
      ADXL_ERROR("Connect to '%s': transport wire-up failed (status %d)", remote.c_str(), rc);
      return FAILED;
    }
    return SUCCESS;
  }();
  if (st_wireup != SUCCESS) {
    if (flush && flush->Test() == ADXL_PLUGIN_IN_PROGRESS) {
      reaper_.Adopt(std::move(ep), std::move(flush));
      link->endpoint.reset();  // so that the failed link's Shutdown leaves it alone
    }
    return st_wireup;
  }
  phase_done(ConnectPhase::kWireup);  // endpoint, the peer's keys and the first flush
  const auto ms = [](Clock::time_point a, Clock::time_point b) {
    return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count());
  };
  link->transports = ep->Describe();
  links_->Bind(link);
  if (!loop_->Add(conn)) {
    ADXL_ERROR("Connect to '%s': the peer closed the connection during the handshake", remote.c_str());
    return FAILED;
  }
  // Tells the peer at once that our link is set up: it admits the next
  // client wiring up (core/admission.h) and judges our silence from now on.
  conn->Send(wire::Ping{}, 0, Clock::now() + std::chrono::seconds(1));
  ADXL_INFO("Connect: linked to '%s' (%s node, %zu regions) on the %s lane over %s; handshake %lld ms, "
            "wire-up %lld ms",
            remote.c_str(), same_node ? "same" : "other", ack.regions.size(), LaneName(ep->lane()),
            link->transports.c_str(), ms(start, wireup_start), ms(wireup_start, Clock::now()));
  return SUCCESS;
}

Status Connector::Disconnect(const std::string &remote, int32_t timeout_ms) {
  if (timeout_ms <= 0) {
    ADXL_ERROR("Disconnect from '%s': timeout %d ms must be > 0", remote.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  bool evicted = false;
  if (pool_max_ > 0) {
    MutexLock l(&evicted_mu_);
    evicted = evicted_.erase(remote) != 0;
  }
  std::shared_ptr<Link> link = links_->TakeSettled(remote);
  if (!link) {
    if (evicted) {
      // The pool closed the link already; now it is not reconnected on demand.
      ADXL_INFO("Disconnect: the channel pool had evicted the link to '%s'; forgotten", remote.c_str());
      return SUCCESS;
    }
    ADXL_ERROR("Disconnect from '%s': not connected", remote.c_str());
    return NOT_CONNECTED;
  }
  CloseLink(link, Clock::now() + std::chrono::milliseconds(timeout_ms));
  ADXL_INFO("Disconnect: link to '%s' closed", remote.c_str());
  return SUCCESS;
}

Status Connector::AcquireLink(const char *api, const std::string &remote, Clock::time_point deadline,
                              std::shared_ptr<Link> *out) {
  // Two rounds: a link made by our connect may fail before we use it.
  for (int round = 0;; ++round) {
    std::shared_ptr<Link> link = links_->Find(remote);
    if (link && link->state() == LinkState::kConnected) {
      link->last_used_ns.store(Link::NowNs());
      *out = std::move(link);
      return SUCCESS;
    }
    // A peer whose link the channel pool evicted is reconnected on demand.
    const bool on_demand = auto_connect_ || (pool_max_ > 0 && !link && WasEvicted(remote));
    if (!on_demand) {
      if (!link || link->state() == LinkState::kConnecting) {
        ADXL_ERROR("%s to '%s': not connected", api, remote.c_str());
        return NOT_CONNECTED;
      }
      ADXL_ERROR("%s to '%s': the link failed earlier; Disconnect and Connect again", api, remote.c_str());
      return FAILED;
    }
    if (Stopping(api, remote)) return FAILED;
    if (round == 2) {
      ADXL_ERROR("%s to '%s': AutoConnect made a link that failed at once; giving up", api, remote.c_str());
      return FAILED;
    }
    if (link && link->state() == LinkState::kFailed) DropLink(link);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      ADXL_ERROR("%s to '%s': AutoConnect: the call's deadline passed before a link was made", api, remote.c_str());
      return TIMEOUT;
    }
    ADXL_INFO("%s to '%s': not connected; %s connects (%lld ms left)", api, remote.c_str(),
              auto_connect_ ? "AutoConnect" : "the channel pool (the link was evicted)", static_cast<long long>(left));
    const Status st = Connect(remote, static_cast<int32_t>(std::min<long long>(left, INT32_MAX)));
    if (st != SUCCESS && st != ALREADY_CONNECTED) {
      ADXL_ERROR("%s to '%s': AutoConnect could not connect (status %u)", api, remote.c_str(), st);
      return st;
    }
  }
}

void Connector::DropLink(const std::shared_ptr<Link> &link) {
  links_->Remove(link);
  if (link->conn) link->conn->Close();
  ADXL_INFO("AutoConnect: dropped the failed link to '%s'; the next call reconnects", link->remote().c_str());
}

}  // namespace adxl
