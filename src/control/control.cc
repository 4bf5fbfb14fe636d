#include "control/control.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/log.h"

namespace adxl {

int64_t ControlLoop::NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

bool ControlLoop::Start(Fd listen_fd, ControlHandler *handler, int tick_ms, int hello_timeout_ms,
                        std::string *why) {
  listen_fd_ = std::move(listen_fd);
  handler_ = handler;
  tick_ms_ = tick_ms;
  hello_timeout_ms_ = hello_timeout_ms;
  epoll_fd_ = Fd(epoll_create1(EPOLL_CLOEXEC));
  wake_fd_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll_fd_.valid() || !wake_fd_.valid()) {
    *why = std::string("epoll/eventfd: ") + strerror(errno);
    listen_fd_ = Fd();  // a failed Initialize leaves its port free (contract §3.2)
    epoll_fd_ = Fd();
    wake_fd_ = Fd();
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_.get();
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &ev);
  listening_ = false;
  SetListening(true);
  {
    MutexLock l(&mu_);
    waker_ = std::make_shared<ControlWaker>(wake_fd_.get());
  }
  stop_.store(false);
  thread_ = std::thread([this] { Run(); });
  return true;
}

bool ControlLoop::Add(const std::shared_ptr<ControlConn> &conn) {
  std::shared_ptr<ControlWaker> waker;
  {
    MutexLock l(&mu_);
    if (stop_.load() || conn->closed() || !waker_) return false;
    conns_[conn->fd()] = conn;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = conn->fd();
    if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, conn->fd(), &ev) != 0) {
      conns_.erase(conn->fd());
      return false;
    }
    waker = waker_;
  }
  // Frames queued before (a client's, during its handshake) go out now.
  if (conn->AttachWaker(waker)) waker->WantWrite(conn->fd());
  return true;
}

void ControlLoop::Stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  std::shared_ptr<ControlWaker> waker;
  {
    MutexLock l(&mu_);
    waker = waker_;
  }
  // Before the eventfd closes: connections that outlive the loop must not
  // write to it (nor to a descriptor that reuses its number).
  waker->Stop();
  uint64_t one = 1;
  ssize_t rc = write(wake_fd_.get(), &one, sizeof(one));
  (void)rc;
  thread_.join();
  writers_.clear();
  std::map<int, std::shared_ptr<ControlConn>> conns;
  {
    MutexLock l(&mu_);
    conns.swap(conns_);
  }
  for (auto &kv : conns) kv.second->Close();
  listen_fd_.Reset();
  epoll_fd_.Reset();
  wake_fd_.Reset();
}

int ControlLoop::WaitMs(int64_t next_tick) const {
  int64_t wait = next_tick - NowMs();
  if (!writers_.empty()) {
    Clock::time_point first = Clock::time_point::max();
    for (const auto &kv : writers_) first = std::min(first, kv.second->QueueDeadline());
    if (first != Clock::time_point::max()) {
      // Rounded up: woken before the deadline, nothing would be overdue yet.
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(first - Clock::now()).count();
      wait = std::min<int64_t>(wait, left <= 0 ? 0 : (left + 999) / 1000);
    }
  }
  return wait < 0 ? 0 : static_cast<int>(wait);
}

void ControlLoop::Run() {
  std::shared_ptr<ControlWaker> waker;
  {
    MutexLock l(&mu_);
    waker = waker_;
  }
  std::vector<epoll_event> events(64);
  int64_t next_tick = NowMs() + tick_ms_;
  while (!stop_.load()) {
    int n = epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()), WaitMs(next_tick));
    for (int i = 0; i < n && !stop_.load(); ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_.get()) {
        uint64_t v;
        ssize_t rc = read(fd, &v, sizeof(v));
        (void)rc;
      } else if (fd == listen_fd_.get()) {
        Accept();
      } else {
        std::shared_ptr<ControlConn> conn = Find(fd);
        if (!conn) continue;
        if ((events[i].events & EPOLLOUT) != 0) FlushTo(conn);
        // ReadFrom also drops a connection that was closed meanwhile.
        if ((events[i].events & ~static_cast<uint32_t>(EPOLLOUT)) != 0) ReadFrom(conn);
      }
    }
    if (stop_.load()) break;
    // Frames that senders could not write at once.  (A descriptor reused by
    // a newer connection meanwhile only gets a needless write attempt.)
    for (int fd : waker->Take()) {
      if (std::shared_ptr<ControlConn> conn = Find(fd)) FlushTo(conn);
    }
    if (!writers_.empty()) {
      std::vector<std::shared_ptr<ControlConn>> writers;
      for (const auto &kv : writers_) writers.push_back(kv.second);
      CloseOverdue(writers);
    }
    if (NowMs() >= next_tick && !stop_.load()) {
      SetListening(true);  // resumes accepting after descriptor exhaustion
      CloseStaleHandshakes();
      handler_->OnTick();
      next_tick = NowMs() + tick_ms_;
    }
  }
}

std::shared_ptr<ControlConn> ControlLoop::Find(int fd) {
  MutexLock l(&mu_);
  auto it = conns_.find(fd);
  return it == conns_.end() ? nullptr : it->second;
}

void ControlLoop::Accept() {
  while (true) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int fd = accept4(listen_fd_.get(), reinterpret_cast<sockaddr *>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // The pending connection stays queued and the socket stays readable:
        // stop watching it until the next tick instead of spinning.
        ADXL_WARN("accept: %s; not accepting for %d ms", strerror(errno), tick_ms_);
        SetListening(false);
      } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        ADXL_WARN("accept: %s", strerror(errno));
      }
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char host[INET6_ADDRSTRLEN] = "?";
    uint16_t port = 0;
    if (ss.ss_family == AF_INET) {
      auto *a = reinterpret_cast<sockaddr_in *>(&ss);
      inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
      port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      auto *a = reinterpret_cast<sockaddr_in6 *>(&ss);
      inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
      port = ntohs(a->sin6_port);
    }
    auto conn = std::make_shared<ControlConn>(Fd(fd), ControlConn::Role::kServer,
                                              std::string(host) + ":" + std::to_string(port));
    Add(conn);
  }
}

void ControlLoop::SetListening(bool on) {
  if (!listen_fd_.valid() || listening_ == on) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_.get();
  epoll_ctl(epoll_fd_.get(), on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, listen_fd_.get(), &ev);
  listening_ = on;
}

void ControlLoop::CloseStaleHandshakes() {
  const int64_t now = NowMs();
  std::vector<std::shared_ptr<ControlConn>> all;
  {
    MutexLock l(&mu_);
    for (const auto &kv : conns_) all.push_back(kv.second);
  }
  for (const auto &c : all) {
    if (c->role() == ControlConn::Role::kServer && !c->hello_done() && now - c->created_ms > hello_timeout_ms_) {
      ADXL_WARN("control connection from %s sent no Hello within %d ms; closing it", c->desc().c_str(),
                hello_timeout_ms_);
      Drop(c);
    }
  }
  // Peers that do not read what is queued for them.
  CloseOverdue(all);
}

void ControlLoop::CloseOverdue(const std::vector<std::shared_ptr<ControlConn>> &conns) {
  const Clock::time_point t = Clock::now();
  for (const auto &c : conns) {
    if (c->closed() || !c->QueueOverdue(t)) continue;
    if (c->role() == ControlConn::Role::kServer) {
      ADXL_WARN("control connection from %s ('%s') does not read what is sent to it; closing it", c->desc().c_str(),
                c->peer_name().c_str());
    } else {
      ADXL_WARN("control connection to '%s' does not read what is sent to it; closing it", c->desc().c_str());
    }
    Drop(c);
  }
}

void ControlLoop::WatchWrites(const std::shared_ptr<ControlConn> &conn, bool on) {
  auto w = writers_.find(conn->fd());
  const bool watched = w != writers_.end() && w->second == conn;
  if (watched == on) return;
  {
    MutexLock l(&mu_);
    auto it = conns_.find(conn->fd());
    if (it == conns_.end() || it->second != conn) return;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0u);
    ev.data.fd = conn->fd();
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, conn->fd(), &ev);
  }
  if (on) {
    writers_[conn->fd()] = conn;
  } else {
    writers_.erase(w);
  }
}

void ControlLoop::FlushTo(const std::shared_ptr<ControlConn> &conn) {
  switch (conn->Flush()) {
    case ControlConn::FlushResult::kDrained:
      WatchWrites(conn, false);
      break;
    case ControlConn::FlushResult::kPending:
      WatchWrites(conn, true);
      break;
    case ControlConn::FlushResult::kBroken:
      Drop(conn);
      break;
  }
}

void ControlLoop::ReadFrom(const std::shared_ptr<ControlConn> &conn) {
  char buf[64 << 10];
  bool eof = false;
  // At most a few reads per wake-up: a peer that never stops sending must
  // not starve the others (epoll is level-triggered and comes back to it).
  for (int rounds = 0; rounds < 4; ++rounds) {
    ssize_t n = recv(conn->fd(), buf, sizeof(buf), 0);
    if (n > 0) {
      conn->reader.Feed(buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof(buf)) break;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    eof = true;
    break;
  }
  conn->last_rx_ms.store(NowMs());
  wire::Message msg;
  std::string why;
  while (!conn->closed()) {
    wire::FrameReader::Result r = conn->reader.Next(&msg, &why);
    if (r == wire::FrameReader::Result::kNeedMore) break;
    if (r == wire::FrameReader::Result::kError) {
      ADXL_ERROR("control connection from %s: %s; closing it", conn->desc().c_str(), why.c_str());
      eof = true;
      break;
    }
    if (auto *ack = std::get_if<wire::Ack>(&msg.body)) {
      conn->CompleteAck(msg.seq, ack->status);
    } else {
      handler_->OnMessage(conn, msg);
    }
  }
  if (eof || conn->closed()) {
    Drop(conn);
  } else if (conn->queued()) {
    FlushTo(conn);  // what the socket takes now (a handshake answer); the rest when it is writable
  }
}

void ControlLoop::Drop(const std::shared_ptr<ControlConn> &conn) {
  {
    MutexLock l(&mu_);
    auto it = conns_.find(conn->fd());
    if (it == conns_.end() || it->second != conn) return;
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, conn->fd(), nullptr);
    conns_.erase(it);
  }
  auto w = writers_.find(conn->fd());
  if (w != writers_.end() && w->second == conn) writers_.erase(w);
  conn->Close();
  handler_->OnClosed(conn);
}

}  // namespace adxl
