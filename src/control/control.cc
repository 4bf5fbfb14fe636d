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

void ControlWaker::WantWrite(int fd) {
  MutexLock l(&mu_);
  if (wake_fd_ < 0) return;  // the loop stopped
  if (std::find(want_.begin(), want_.end(), fd) != want_.end()) return;  // the loop was told already
  const bool first = want_.empty();
  want_.push_back(fd);
  if (first) {
    uint64_t one = 1;
    ssize_t rc = write(wake_fd_, &one, sizeof(one));
    (void)rc;  // EAGAIN: the counter is full, the loop wakes anyway
  }
}

std::vector<int> ControlWaker::Take() {
  MutexLock l(&mu_);
  std::vector<int> out;
  out.swap(want_);
  return out;
}

void ControlWaker::Stop() {
  MutexLock l(&mu_);
  wake_fd_ = -1;
  want_.clear();
}

ControlConn::ControlConn(Fd fd, Role role, std::string peer_desc)
    : fd_(std::move(fd)), role_(role), desc_(std::move(peer_desc)) {
  created_ms = ControlLoop::NowMs();
  last_rx_ms.store(created_ms);
  // Clients only ever send small messages to a server.
  if (role == Role::kServer) reader.set_max_payload(wire::kMaxClientPayload);
}

ControlConn::~ControlConn() = default;

std::string ControlConn::peer_name() const {
  MutexLock l(&mu_);
  return peer_name_;
}

void ControlConn::set_peer_name(const std::string &n) {
  MutexLock l(&mu_);
  peer_name_ = n;
}

bool ControlConn::Encode(const wire::Body &body, uint64_t seq, Frame *frame) const {
  frame->type = wire::TypeOf(body);
  frame->bytes.clear();
  if (wire::Encode(seq, body, &frame->bytes)) return true;
  ADXL_ERROR("control %s: %s message over the wire limits, not sent", desc_.c_str(), wire::TypeName(frame->type));
  return false;
}

bool ControlConn::EncodePost(const wire::Body &body, Frame *frame) {
  return Encode(body, next_seq_.fetch_add(1), frame);
}

void ControlConn::Enqueue(std::string frame, Clock::time_point deadline, bool answer) {
  if (!out_.empty()) deadline = std::max(deadline, out_.back().deadline);
  out_bytes_ += frame.size() + kFrameCost;
  enqueued_ += frame.size();
  out_.push_back(OutFrame{std::move(frame), deadline, answer});
}

size_t ControlConn::QueuedBehind() const {
  return out_.empty() ? 0 : out_bytes_ - (out_.front().bytes.size() + kFrameCost);
}

bool ControlConn::Send(const wire::Body &body, uint64_t seq, Clock::time_point deadline) {
  Frame frame;
  if (!Encode(body, seq, &frame)) return false;
  return SendEncoded(std::move(frame), deadline);
}

bool ControlConn::SendEncoded(Frame frame, Clock::time_point deadline) {
  const wire::Type type = frame.type;
  FlushResult r = FlushResult::kPending;
  uint64_t end = 0;
  size_t behind = 0;
  std::shared_ptr<ControlWaker> waker;
  bool loop_told = false;
  {
    MutexLock q(&out_mu_);
    if (closed_.load()) return false;
    // With frames waiting and a loop, the loop was told of them already (or
    // is about to write a handshake answer) and writes this one behind
    // them: no write attempt that would find the socket full.
    loop_told = !out_.empty() && waker_ != nullptr;
    Enqueue(std::move(frame.bytes), deadline, false);
    end = enqueued_;
    if (!loop_told) r = WriteQueue();
    behind = QueuedBehind();
    waker = waker_;
  }
  if (r == FlushResult::kBroken) {
    ADXL_WARN("control %s: send of %s failed (connection broken); closing", desc_.c_str(), wire::TypeName(type));
    Close();
    return false;
  }
  if (behind > kMaxQueuedBehind) {
    // A peer that keeps talking but does not read what it is sent: the
    // queue would grow without bound.
    ADXL_WARN("control %s: peer does not read what is sent to it and more than %zu bytes wait; closing",
              desc_.c_str(), kMaxQueuedBehind);
    Close();
    return false;
  }
  if (r == FlushResult::kDrained || loop_told) return true;
  if (waker) {
    waker->WantWrite(fd_.get());
    return true;
  }
  return WriteOut(end, deadline, type);
}

bool ControlConn::WriteOut(uint64_t end, Clock::time_point deadline, wire::Type type) {
  while (true) {
    std::shared_ptr<ControlWaker> waker;
    FlushResult r = FlushResult::kPending;
    {
      MutexLock q(&out_mu_);
      if (closed_.load()) return false;
      if (written_ >= end) return true;
      waker = waker_;
      if (!waker) {
        r = WriteQueue();
        if (written_ >= end) return true;
      }
    }
    if (waker) {
      // Added to a loop meanwhile: the loop writes the rest.
      waker->WantWrite(fd_.get());
      return true;
    }
    const auto now = Clock::now();
    if (r == FlushResult::kBroken || now >= deadline) {
      // A partial frame leaves the stream unusable.
      ADXL_WARN("control %s: send of %s failed (%s); closing", desc_.c_str(), wire::TypeName(type),
                r == FlushResult::kBroken ? "connection broken" : "peer not reading");
      Close();
      return false;
    }
    // Socket space, not a lock: a loop that adds the connection, or Close(),
    // may write or end the queue meanwhile (hence the short slices).
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    pollfd p{fd_.get(), POLLOUT, 0};
    poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 20)));
  }
}

ControlConn::Outcome ControlConn::Request(const wire::Body &body, Clock::time_point deadline, uint32_t *ack_status) {
  const uint64_t seq = StartRequest(body, deadline);
  if (seq == 0) return Clock::now() >= deadline ? Outcome::kTimeout : Outcome::kClosed;
  return AwaitAck(seq, deadline, ack_status);
}

uint64_t ControlConn::StartRequest(const wire::Body &body, Clock::time_point deadline) {
  const uint64_t seq = next_seq_.fetch_add(1);
  {
    MutexLock l(&mu_);
    pending_[seq] = -1;
  }
  if (Send(body, seq, deadline)) return seq;
  MutexLock l(&mu_);
  pending_.erase(seq);
  return 0;
}

ControlConn::Outcome ControlConn::AwaitAck(uint64_t seq, Clock::time_point deadline, uint32_t *ack_status) {
  MutexLock l(&mu_);
  {
    WaitLock w{&mu_};
    while (pending_[seq] < 0 && !closed_.load()) {
      if (cv_.wait_until(w, deadline) == std::cv_status::timeout) break;
    }
  }
  Outcome out = Outcome::kClosed;
  if (pending_[seq] >= 0) {
    *ack_status = static_cast<uint32_t>(pending_[seq]);
    out = Outcome::kAcked;
  } else if (Clock::now() >= deadline) {
    // Also when the connection was closed for it: a frame not written by its
    // deadline closes the connection (the loop, or Send itself).
    out = Outcome::kTimeout;
  }
  pending_.erase(seq);
  return out;
}

bool ControlConn::Post(const wire::Body &body, Clock::time_point deadline) {
  return Send(body, next_seq_.fetch_add(1), deadline);
}

bool ControlConn::PostToLoop(const wire::Body &body, Clock::time_point deadline) {
  Frame frame;
  if (!EncodePost(body, &frame)) return false;
  size_t behind = 0;
  std::shared_ptr<ControlWaker> waker;
  {
    MutexLock q(&out_mu_);
    if (closed_.load()) return false;
    if (waker_ != nullptr) {  // else not in a loop: nobody else would write it
      Enqueue(std::move(frame.bytes), deadline, false);
      behind = QueuedBehind();
      waker = waker_;
    }
  }
  if (!waker) return SendEncoded(std::move(frame), deadline);
  if (behind > kMaxQueuedBehind) {
    ADXL_WARN("control %s: peer does not read what is sent to it and more than %zu bytes wait; closing",
              desc_.c_str(), kMaxQueuedBehind);
    Close();
    return false;
  }
  waker->WantWrite(fd_.get());
  return true;
}

bool ControlConn::StartQueued(const wire::Body &body, uint64_t seq, Clock::time_point deadline) {
  Frame frame;
  if (!Encode(body, seq, &frame)) return false;
  StartQueuedEncoded(std::move(frame), deadline);
  return true;
}

void ControlConn::StartQueuedEncoded(Frame frame, Clock::time_point deadline) {
  MutexLock q(&out_mu_);
  Enqueue(std::move(frame.bytes), deadline, true);
}

void ControlConn::WakeWriter() {
  std::shared_ptr<ControlWaker> waker;
  {
    MutexLock q(&out_mu_);
    if (!out_.empty()) waker = waker_;
  }
  if (waker) waker->WantWrite(fd_.get());
}

bool ControlConn::queued() const {
  MutexLock q(&out_mu_);
  return !out_.empty();
}

bool ControlConn::AttachWaker(std::shared_ptr<ControlWaker> waker) {
  MutexLock q(&out_mu_);
  waker_ = std::move(waker);
  return !out_.empty();
}

ControlConn::FlushResult ControlConn::Flush() {
  if (closed_.load()) return FlushResult::kBroken;
  MutexLock q(&out_mu_);
  return WriteQueue();
}

ControlConn::FlushResult ControlConn::WriteQueue() {
  while (!out_.empty()) {
    const OutFrame &f = out_.front();
    ssize_t n = send(fd_.get(), f.bytes.data() + out_off_, f.bytes.size() - out_off_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return FlushResult::kPending;
      return FlushResult::kBroken;
    }
    out_off_ += static_cast<size_t>(n);
    if (out_off_ == f.bytes.size()) {
      if (f.answer) answer_sent_.store(true);
      out_bytes_ -= f.bytes.size() + kFrameCost;
      written_ += f.bytes.size();
      out_.pop_front();
      out_off_ = 0;
    }
  }
  return FlushResult::kDrained;
}

bool ControlConn::QueueOverdue(Clock::time_point now) const {
  MutexLock q(&out_mu_);
  return !out_.empty() && now >= out_.front().deadline;
}

Clock::time_point ControlConn::QueueDeadline() const {
  MutexLock q(&out_mu_);
  return out_.empty() ? Clock::time_point::max() : out_.front().deadline;
}

void ControlConn::CompleteAck(uint64_t seq, uint32_t status) {
  MutexLock l(&mu_);
  auto it = pending_.find(seq);
  if (it == pending_.end()) return;  // late or unsolicited: ignored
  it->second = status;
  cv_.notify_all();
}

void ControlConn::Close() {
  if (closed_.exchange(true)) return;
  {
    // What is queued and fits the socket now still leaves (a refusal, or a
    // HelloAck queued just before a protocol violation closed the
    // connection), without waiting; the rest is dropped.
    MutexLock q(&out_mu_);
    WriteQueue();
    out_.clear();
    out_off_ = 0;
    out_bytes_ = 0;
  }
  shutdown(fd_.get(), SHUT_RDWR);  // the loop sees EOF and drops it; the fd closes with the object
  MutexLock l(&mu_);
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
