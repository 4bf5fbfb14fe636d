// The control channel: TCP connections carrying wire.h frames, and the one
// thread per engine that reads them.
//
// ControlConn is one connection, either the client end of a link (this
// engine connected out) or a server end (a peer connected in).  Any thread
// may Send() on it (one sender at a time, whole frames) or issue a Request()
// and wait for its Ack; only the loop thread reads.
//
// Queued sending.  A server end answers a Hello with StartQueued(): the
// answer becomes the first frame of an outbound queue, and until the queue
// is empty every Send() from any thread appends its frame to the queue, in
// call order, instead of writing the socket.  The loop thread writes the
// queue as the socket accepts it (EPOLLOUT, non-blocking), then the
// connection is back to direct sends.  So no thread waits on a client that
// does not read its handshake answer, the answer is never preceded by
// another frame, and frames sent after it keep their order.  A queue not
// drained by its deadline closes the connection (checked every tick).
//
// Locks of a ControlConn: send_mu_ (held across a direct send with its
// deadline), out_mu_ (the queue; held across non-blocking writes only), mu_
// (peer name, pending requests).  The one nesting is send_mu_ -> out_mu_ (a
// failed send closes the connection, and Close() writes what is queued);
// none is held while calling out.
//
// ControlLoop owns an epoll set with the listening socket and every
// registered connection.  It accepts, reads, decodes, completes Acks itself
// and hands every other message to a ControlHandler, on its own thread, in
// arrival order per connection.  It also calls OnTick() every tick_ms (the
// heartbeat).  A connection that sends an undecodable frame is closed.
#ifndef ADXL_SRC_CONTROL_CONTROL_H_
#define ADXL_SRC_CONTROL_CONTROL_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "control/socket.h"
#include "control/wire.h"

namespace adxl {

class ControlConn {
 public:
  enum class Role { kClient, kServer };
  enum class Outcome { kAcked, kTimeout, kClosed };

  ControlConn(Fd fd, Role role, std::string peer_desc);
  ~ControlConn();
  ControlConn(const ControlConn &) = delete;
  ControlConn &operator=(const ControlConn &) = delete;

  int fd() const { return fd_.get(); }
  Role role() const { return role_; }
  // For server ends: the client's engine name once its Hello was accepted.
  std::string peer_name() const;
  void set_peer_name(const std::string &n);
  bool hello_done() const { return hello_done_.load(); }
  void set_hello_done() { hello_done_.store(true); }

  // Sends one frame (seq as given); false when the connection is closed or
  // broke (then it is closed).  In queued mode the frame is appended to the
  // queue and true returned at once.
  bool Send(const wire::Body &body, uint64_t seq, Clock::time_point deadline);
  // Sends a request and waits for its Ack.
  Outcome Request(const wire::Body &body, Clock::time_point deadline, uint32_t *ack_status);
  // The two halves of Request, for waiting on several connections at once:
  // StartRequest sends and returns the seq to await (0: not sent, the
  // connection is closed); AwaitAck waits for it and forgets it.  Every
  // started request must be awaited.
  uint64_t StartRequest(const wire::Body &body, Clock::time_point deadline);
  Outcome AwaitAck(uint64_t seq, Clock::time_point deadline, uint32_t *ack_status);
  // Sends a request under a fresh seq without waiting for (or tracking) its Ack.
  bool Post(const wire::Body &body, Clock::time_point deadline);

  // Queued sending (see the top of this file).  Encodes `body` as the first
  // frame of the queue and enters queued mode; the queue must be drained by
  // `deadline`.  No socket I/O, so callers may hold their own locks.  Only
  // for a server end no other thread knows of yet (no send can be under
  // way), and only once.  False: the frame is over the wire limits, nothing
  // is queued.  The loop (ControlLoop) arms writing when the handler returns.
  bool StartQueued(const wire::Body &body, uint64_t seq, Clock::time_point deadline);
  // Frames wait in the queue.
  bool queued() const;
  // The first queued frame (the handshake answer) was written completely.
  bool answer_sent() const { return answer_sent_.load(); }
  // Loop thread: writes what the socket takes now.
  enum class FlushResult { kDrained, kPending, kBroken };
  FlushResult Flush();
  // Frames are still queued past the queue's deadline.
  bool QueueOverdue(Clock::time_point now) const;
  // Called by the loop for an incoming Ack.
  void CompleteAck(uint64_t seq, uint32_t status);

  // Shuts the connection down; pending and future Requests end kClosed.
  // Queued frames that the socket takes at once still leave first.
  void Close();
  bool closed() const { return closed_.load(); }

  // Loop-thread state.
  wire::FrameReader reader;
  // Server ends, between an authenticating Hello and the client's
  // AuthResponse (adxl.AuthToken): what both proofs are computed over.
  struct PendingAuth {
    bool active = false;
    std::string from, to, client_nonce, server_nonce;
  } pending_auth;
  std::atomic<int64_t> last_rx_ms{0};
  int64_t created_ms = 0;
  const std::string &desc() const { return desc_; }

 private:
  Fd fd_;
  Role role_;
  std::string desc_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> hello_done_{false};
  std::atomic<bool> answer_sent_{false};
  mutable std::mutex out_mu_;  // queued_, out_, out_off_, out_deadline_
  bool queued_ = false;
  std::deque<std::string> out_;  // whole frames; the front one written up to out_off_
  size_t out_off_ = 0;
  size_t queued_after_answer_ = 0;  // bytes queued behind the handshake answer
  // Bound on queued_after_answer_: region updates and answers of a peer that
  // has not read its handshake answer yet.
  static constexpr size_t kMaxQueuedAfterAnswer = 64 << 10;
  Clock::time_point out_deadline_{};
  FlushResult FlushQueue();  // Flush without the closed check (Close uses it)
  // Encodes one frame; false (logged) when it is over the wire limits.
  bool EncodeFrame(const wire::Body &body, uint64_t seq, std::string *frame) const;
  std::mutex send_mu_;
  mutable std::mutex mu_;  // peer_name_, pending_
  std::condition_variable cv_;
  std::string peer_name_;
  std::map<uint64_t, int64_t> pending_;  // seq -> ack status, -1 while waiting
  std::atomic<uint64_t> next_seq_{1};
};

class ControlHandler {
 public:
  virtual ~ControlHandler() = default;
  virtual void OnMessage(const std::shared_ptr<ControlConn> &conn, wire::Message &msg) = 0;
  // The connection is gone (EOF, error, protocol violation, Close()).
  virtual void OnClosed(const std::shared_ptr<ControlConn> &conn) = 0;
  virtual void OnTick() = 0;
};

class ControlLoop {
 public:
  ControlLoop() = default;
  ~ControlLoop() { Stop(); }
  // listen_fd may be invalid (client-only engine).  A peer that has not
  // completed its Hello within hello_timeout_ms is disconnected (slow loris).
  bool Start(Fd listen_fd, ControlHandler *handler, int tick_ms, int hello_timeout_ms, std::string *why);
  // Starts reading a connection (any thread).  A connection whose handler
  // left frames queued (ControlConn::StartQueued) is written as the socket
  // takes them; one whose queue is overdue is closed at the next tick.
  bool Add(const std::shared_ptr<ControlConn> &conn);
  // Closes every connection and joins the thread.  Idempotent.
  void Stop();
  static int64_t NowMs();

 private:
  void Run();
  void Accept();
  void ReadFrom(const std::shared_ptr<ControlConn> &conn);
  void Drop(const std::shared_ptr<ControlConn> &conn);
  // Watches a connection for writability (its queue) or stops.
  void WatchWrites(const std::shared_ptr<ControlConn> &conn, bool on);
  void FlushTo(const std::shared_ptr<ControlConn> &conn);
  void CloseStaleHandshakes();
  void SetListening(bool on);

  Fd listen_fd_;
  Fd epoll_fd_;
  Fd wake_fd_;
  ControlHandler *handler_ = nullptr;
  int tick_ms_ = 1000;
  int hello_timeout_ms_ = 3000;
  bool listening_ = false;  // the listening socket is in the epoll set
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::map<int, std::shared_ptr<ControlConn>> conns_;
};

}  // namespace adxl

#endif  // ADXL_SRC_CONTROL_CONTROL_H_
