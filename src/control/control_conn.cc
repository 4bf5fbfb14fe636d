// ControlWaker and ControlConn (control/control.h): one connection's outbound
// queue, requests and their Acks; the loop that reads them is control.cc.
#include "control/control.h"

#include <poll.h>
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

ControlConn::Outcome ControlConn::AwaitAck(uint64_t seq, Clock::time_point deadline, uint32_t *ack_status,
                                           const std::atomic<bool> *stop) {
  MutexLock l(&mu_);
  const auto stopped = [stop] { return stop != nullptr && stop->load(); };
  {
    WaitLock w{&mu_};
    while (pending_[seq] < 0 && !closed_.load() && !stopped()) {
      if (cv_.wait_until(w, deadline) == std::cv_status::timeout) break;
    }
  }
  Outcome out = Outcome::kClosed;
  if (pending_[seq] >= 0) {
    *ack_status = static_cast<uint32_t>(pending_[seq]);
    out = Outcome::kAcked;
  } else if (stopped()) {
    out = Outcome::kStopped;
  } else if (Clock::now() >= deadline) {
    // Also when the connection was closed for it: a frame not written by its
    // deadline closes the connection (the loop, or Send itself).
    out = Outcome::kTimeout;
  }
  pending_.erase(seq);
  return out;
}

void ControlConn::WakeWaiters() {
  // Under mu_: a waiter that read its flag before it was raised is waiting
  // on cv_ by the time this takes mu_.
  MutexLock l(&mu_);
  cv_.notify_all();
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

}  // namespace adxl
