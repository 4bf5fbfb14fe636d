#include "control/control.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

ControlConn::ControlConn(Fd fd, Role role, std::string peer_desc)
    : fd_(std::move(fd)), role_(role), desc_(std::move(peer_desc)) {
  created_ms = ControlLoop::NowMs();
  last_rx_ms.store(created_ms);
  // Clients only ever send small messages to a server.
  if (role == Role::kServer) reader.set_max_payload(wire::kMaxClientPayload);
}

ControlConn::~ControlConn() = default;

std::string ControlConn::peer_name() const {
  std::lock_guard<std::mutex> l(mu_);
  return peer_name_;
}

void ControlConn::set_peer_name(const std::string &n) {
  std::lock_guard<std::mutex> l(mu_);
  peer_name_ = n;
}

bool ControlConn::EncodeFrame(const wire::Body &body, uint64_t seq, std::string *frame) const {
  if (wire::Encode(wire::Message{seq, body}, frame)) return true;
  ADXL_ERROR("control %s: %s message over the wire limits, not sent", desc_.c_str(),
             wire::TypeName(wire::TypeOf(body)));
  return false;
}

bool ControlConn::Send(const wire::Body &body, uint64_t seq, Clock::time_point deadline) {
  std::string frame;
  if (!EncodeFrame(body, seq, &frame)) return false;
  {
    std::lock_guard<std::mutex> q(out_mu_);
    if (closed_.load()) return false;
    if (queued_ && queued_after_answer_ + frame.size() <= kMaxQueuedAfterAnswer) {
      queued_after_answer_ += frame.size();
      out_.push_back(std::move(frame));
      return true;
    }
  }
  if (queued()) {
    // A peer that keeps talking but does not read its handshake answer: the
    // queue would grow without bound.  Closing it is what a direct send to a
    // peer that does not read does too.
    ADXL_WARN("control %s: peer does not read its handshake answer and more than %zu bytes wait behind it; closing",
              desc_.c_str(), kMaxQueuedAfterAnswer);
    Close();
    return false;
  }
  std::lock_guard<std::mutex> l(send_mu_);
  if (closed_.load()) return false;
  NetResult r = SendAll(fd_.get(), frame.data(), frame.size(), deadline);
  if (r != NetResult::kOk) {
    // A partial frame leaves the stream unusable.
    ADXL_WARN("control %s: send of %s failed (%s); closing", desc_.c_str(), wire::TypeName(wire::TypeOf(body)),
              r == NetResult::kTimeout ? "peer not reading" : "connection broken");
    Close();
    return false;
  }
  return true;
}

ControlConn::Outcome ControlConn::Request(const wire::Body &body, Clock::time_point deadline, uint32_t *ack_status) {
  const uint64_t seq = StartRequest(body, deadline);
  if (seq == 0) return Clock::now() >= deadline ? Outcome::kTimeout : Outcome::kClosed;
  return AwaitAck(seq, deadline, ack_status);
}

uint64_t ControlConn::StartRequest(const wire::Body &body, Clock::time_point deadline) {
  const uint64_t seq = next_seq_.fetch_add(1);
  {
    std::lock_guard<std::mutex> l(mu_);
    pending_[seq] = -1;
  }
  if (Send(body, seq, deadline)) return seq;
  std::lock_guard<std::mutex> l(mu_);
  pending_.erase(seq);
  return 0;
}

ControlConn::Outcome ControlConn::AwaitAck(uint64_t seq, Clock::time_point deadline, uint32_t *ack_status) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_until(l, deadline, [&] { return pending_[seq] >= 0 || closed_.load(); });
  Outcome out;
  if (pending_[seq] >= 0) {
    *ack_status = static_cast<uint32_t>(pending_[seq]);
    out = Outcome::kAcked;
  } else {
    out = closed_.load() ? Outcome::kClosed : Outcome::kTimeout;
  }
  pending_.erase(seq);
  return out;
}

bool ControlConn::Post(const wire::Body &body, Clock::time_point deadline) {
  return Send(body, next_seq_.fetch_add(1), deadline);
}

bool ControlConn::StartQueued(const wire::Body &body, uint64_t seq, Clock::time_point deadline) {
  std::string frame;
  if (!EncodeFrame(body, seq, &frame)) return false;
  std::lock_guard<std::mutex> q(out_mu_);
  queued_ = true;
  out_.push_back(std::move(frame));
  out_deadline_ = deadline;
  return true;
}

bool ControlConn::queued() const {
  std::lock_guard<std::mutex> q(out_mu_);
  return queued_;
}

ControlConn::FlushResult ControlConn::Flush() {
  if (closed_.load()) return FlushResult::kBroken;
  return FlushQueue();
}

ControlConn::FlushResult ControlConn::FlushQueue() {
  std::lock_guard<std::mutex> q(out_mu_);
  while (!out_.empty()) {
    const std::string &f = out_.front();
    ssize_t n = send(fd_.get(), f.data() + out_off_, f.size() - out_off_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return FlushResult::kPending;
      return FlushResult::kBroken;
    }
    out_off_ += static_cast<size_t>(n);
    if (out_off_ == f.size()) {
      if (answer_sent_.load()) queued_after_answer_ -= std::min(queued_after_answer_, f.size());
      out_.pop_front();
      out_off_ = 0;
      answer_sent_.store(true);
    }
  }
  queued_ = false;
  return FlushResult::kDrained;
}

bool ControlConn::QueueOverdue(Clock::time_point now) const {
  std::lock_guard<std::mutex> q(out_mu_);
  return queued_ && now >= out_deadline_;
}

void ControlConn::CompleteAck(uint64_t seq, uint32_t status) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = pending_.find(seq);
  if (it == pending_.end()) return;  // late or unsolicited: ignored
  it->second = status;
  cv_.notify_all();
}

void ControlConn::Close() {
  if (closed_.exchange(true)) return;
  // What is queued and fits the socket now still leaves (a HelloAck queued
  // just before a protocol violation closed the connection), without waiting.
  FlushQueue();
  shutdown(fd_.get(), SHUT_RDWR);  // the loop sees EOF and drops it; the fd closes with the object
  std::lock_guard<std::mutex> l(mu_);
  cv_.notify_all();
}

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
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_.get();
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &ev);
  listening_ = false;
  SetListening(true);
  stop_.store(false);
  thread_ = std::thread([this] { Run(); });
  return true;
}

bool ControlLoop::Add(const std::shared_ptr<ControlConn> &conn) {
  std::lock_guard<std::mutex> l(mu_);
  if (stop_.load() || conn->closed()) return false;
  conns_[conn->fd()] = conn;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = conn->fd();
  if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, conn->fd(), &ev) != 0) {
    conns_.erase(conn->fd());
    return false;
  }
  return true;
}

void ControlLoop::Stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  uint64_t one = 1;
  ssize_t rc = write(wake_fd_.get(), &one, sizeof(one));
  (void)rc;
  thread_.join();
  std::map<int, std::shared_ptr<ControlConn>> conns;
  {
    std::lock_guard<std::mutex> l(mu_);
    conns.swap(conns_);
  }
  for (auto &kv : conns) kv.second->Close();
  listen_fd_.Reset();
  epoll_fd_.Reset();
  wake_fd_.Reset();
}

void ControlLoop::Run() {
  std::vector<epoll_event> events(64);
  int64_t next_tick = NowMs() + tick_ms_;
  while (!stop_.load()) {
    int64_t wait = next_tick - NowMs();
    int n = epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()),
                       wait < 0 ? 0 : static_cast<int>(wait));
    for (int i = 0; i < n && !stop_.load(); ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_.get()) {
        uint64_t v;
        ssize_t rc = read(fd, &v, sizeof(v));
        (void)rc;
      } else if (fd == listen_fd_.get()) {
        Accept();
      } else {
        std::shared_ptr<ControlConn> conn;
        {
          std::lock_guard<std::mutex> l(mu_);
          auto it = conns_.find(fd);
          if (it != conns_.end()) conn = it->second;
        }
        if (!conn) continue;
        if ((events[i].events & EPOLLOUT) != 0) FlushTo(conn);
        // ReadFrom also drops a connection that was closed meanwhile.
        if ((events[i].events & ~static_cast<uint32_t>(EPOLLOUT)) != 0) ReadFrom(conn);
      }
    }
    if (NowMs() >= next_tick && !stop_.load()) {
      SetListening(true);  // resumes accepting after descriptor exhaustion
      CloseStaleHandshakes();
      handler_->OnTick();
      next_tick = NowMs() + tick_ms_;
    }
  }
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
  std::vector<std::shared_ptr<ControlConn>> stale;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto &kv : conns_) {
      const auto &c = kv.second;
      if (c->role() == ControlConn::Role::kServer && !c->hello_done() && now - c->created_ms > hello_timeout_ms_) {
        stale.push_back(c);
      }
    }
  }
  for (const auto &c : stale) {
    ADXL_WARN("control connection from %s sent no Hello within %d ms; closing it", c->desc().c_str(),
              hello_timeout_ms_);
    Drop(c);
  }
  // Peers that do not read what is queued for them (their handshake answer).
  const Clock::time_point t = Clock::now();
  std::vector<std::shared_ptr<ControlConn>> overdue;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto &kv : conns_) {
      if (kv.second->QueueOverdue(t)) overdue.push_back(kv.second);
    }
  }
  for (const auto &c : overdue) {
    ADXL_WARN("control connection from %s ('%s') does not read what is sent to it; closing it", c->desc().c_str(),
              c->peer_name().c_str());
    Drop(c);
  }
}

void ControlLoop::WatchWrites(const std::shared_ptr<ControlConn> &conn, bool on) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = conns_.find(conn->fd());
  if (it == conns_.end() || it->second != conn) return;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0u);
  ev.data.fd = conn->fd();
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, conn->fd(), &ev);
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
    FlushTo(conn);  // what the socket takes now; the rest when it is writable
  }
}

void ControlLoop::Drop(const std::shared_ptr<ControlConn> &conn) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = conns_.find(conn->fd());
    if (it == conns_.end() || it->second != conn) return;
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, conn->fd(), nullptr);
    conns_.erase(it);
  }
  conn->Close();
  handler_->OnClosed(conn);
}

}  // namespace adxl
