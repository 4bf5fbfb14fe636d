// The control channel: TCP connections carrying wire.h frames, and the one
// thread per engine that reads them.
//
// ControlConn is one connection, either the client end of a link (this
// engine connected out) or a server end (a peer connected in).  Any thread
// may Send() on it or issue a Request() and wait for its Ack; only the loop
// thread reads.
//
// Sending never waits on the peer.  Every frame is encoded and appended to
// the connection's outbound queue, then the queue is written as far as the
// socket takes it at once (non-blocking).  Whatever is left is written by the
// loop thread as the socket becomes writable (EPOLLOUT): Send() tells the
// loop through the ControlWaker it was given by ControlLoop::Add.  Frames
// leave whole, in the order of the Send() calls.  So no thread - the loop's
// own included, which answers Pings, Notifies and Fences - waits on a peer
// that does not read.  Such a peer is cut off instead:
//  - each queued frame carries its send deadline; once the frame being
//    written is past it the loop closes the connection (a frame's deadline
//    is never earlier than that of the frame ahead of it: it cannot leave
//    before that one);
//  - at most kMaxQueuedBehind bytes may wait behind the frame being written;
//    a Send() that would exceed it closes the connection (logged).
// A connection not (yet) added to a loop - the client end during its
// handshake, read synchronously by the connecting thread - has nobody to
// write its queue later: there Send() writes its frame out itself, waiting
// for socket space up to the frame's deadline (that thread is the API
// caller's, which may wait), and closes the connection when it cannot.
//
// The handshake answer.  A server end answers a Hello with StartQueued():
// the answer becomes the first frame of the queue without any socket I/O,
// and the loop writes it once the handler returns.  Frames sent after it wait
// behind it; answer_sent() turns true once it was written completely.
//
// Locks.  ControlConn::out_mu_ guards the outbound queue (frames, write
// offset, byte counts, the loop's waker) and is held across non-blocking
// writes only.  ControlConn::mu_ guards the peer name and pending requests
// (with cv_ for Request()).  ControlLoop::mu_ guards the connection map and
// the epoll registrations.  ControlWaker::mu_ guards the loop's "wants
// write" list and its eventfd.  No two of these are ever held together (each
// is a leaf: a method takes one, releases it, then may take another), and
// none is held while calling a ControlHandler.  Callers may hold their own
// locks around StartQueued() (no I/O) and Send() (no wait); the Registrar
// queues a handshake answer under its lock, encoded before it took it
// (core/registrar.h).
//
// ControlLoop owns an epoll set with the listening socket and every
// registered connection.  It accepts, reads, decodes, completes Acks itself
// and hands every other message to a ControlHandler, on its own thread, in
// arrival order per connection.  It writes what senders left queued, closes
// connections whose queue is overdue (its epoll wait ends by the earliest
// such deadline), and calls OnTick() every tick_ms (the heartbeat).  A
// connection that sends an undecodable frame is closed.
#ifndef ADXL_SRC_CONTROL_CONTROL_H_
#define ADXL_SRC_CONTROL_CONTROL_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "control/socket.h"
#include "control/wire.h"

namespace adxl {

// How connections tell their loop that frames wait to be written: the loop
// and every connection added to it share one.  Once the loop stops it does
// nothing, so a connection that outlives its loop never touches the loop's
// (closed, maybe reused) eventfd.
class ControlWaker {
 public:
  explicit ControlWaker(int wake_fd) : wake_fd_(wake_fd) {}
  // Any thread: connection `fd` has frames the socket did not take; the loop
  // wakes and writes them (and watches for EPOLLOUT until they are gone).
  void WantWrite(int fd) ADXL_EXCLUDES(mu_);
  // Loop thread: the connections named since the last call.
  std::vector<int> Take() ADXL_EXCLUDES(mu_);
  // The loop stops: from now on WantWrite does nothing.
  void Stop() ADXL_EXCLUDES(mu_);

 private:
  Mutex mu_;
  int wake_fd_ ADXL_GUARDED_BY(mu_);  // not owned; -1 once stopped
  std::vector<int> want_ ADXL_GUARDED_BY(mu_);
};

class ControlConn {
 public:
  enum class Role { kClient, kServer };
  // kStopped: the waiter's own stop flag was raised (AwaitAck).
  enum class Outcome { kAcked, kTimeout, kClosed, kStopped };

  ControlConn(Fd fd, Role role, std::string peer_desc);
  ~ControlConn();
  ControlConn(const ControlConn &) = delete;
  ControlConn &operator=(const ControlConn &) = delete;

  int fd() const { return fd_.get(); }
  Role role() const { return role_; }
  // For server ends: the client's engine name once its Hello was accepted.
  std::string peer_name() const ADXL_EXCLUDES(mu_);
  void set_peer_name(const std::string &n) ADXL_EXCLUDES(mu_);
  bool hello_done() const { return hello_done_.load(); }
  void set_hello_done() { hello_done_.store(true); }

  // Queues one frame (seq as given) to be written by `deadline` and writes
  // what the socket takes now (see the top of this file).  False only when
  // the connection is closed (also: it broke, or its peer reads too little,
  // and it was closed now) or the frame is over the wire limits.  On a
  // connection not added to a loop, waits until the frame is written, at
  // most until `deadline` (then closes).
  bool Send(const wire::Body &body, uint64_t seq, Clock::time_point deadline) ADXL_EXCLUDES(out_mu_, mu_);
  // Sends a request and waits for its Ack until `deadline` (kTimeout); kClosed
  // when the connection closed first.
  Outcome Request(const wire::Body &body, Clock::time_point deadline, uint32_t *ack_status)
      ADXL_EXCLUDES(out_mu_, mu_);
  // The two halves of Request, for waiting on several connections at once:
  // StartRequest sends and returns the seq to await (0: not sent, the
  // connection is closed); AwaitAck waits for it and forgets it.  Every
  // started request must be awaited.
  uint64_t StartRequest(const wire::Body &body, Clock::time_point deadline) ADXL_EXCLUDES(out_mu_, mu_);
  // `stop` (may be null): the waiter's flag; raised, and followed by
  // WakeWaiters, it ends the wait at once (kStopped), the connection left
  // as it is.
  Outcome AwaitAck(uint64_t seq, Clock::time_point deadline, uint32_t *ack_status,
                   const std::atomic<bool> *stop = nullptr) ADXL_EXCLUDES(out_mu_, mu_);
  // Wakes the AwaitAck calls on this connection to check their stop flags.
  void WakeWaiters() ADXL_EXCLUDES(mu_);
  // Sends a request under a fresh seq without waiting for (or tracking) its Ack.
  bool Post(const wire::Body &body, Clock::time_point deadline) ADXL_EXCLUDES(out_mu_, mu_);
  // Post, but the frame is only queued and the loop writes it (no socket
  // I/O on the caller's thread): for a message fanned out to hundreds of
  // peers by an API call (RegisterMem's RegionAdd), whose caller should not
  // pay a system call, and a wake-up of the peer, per peer.  Same order,
  // limits and deadlines as Send.  On a connection not added to a loop it is
  // Post.
  bool PostToLoop(const wire::Body &body, Clock::time_point deadline) ADXL_EXCLUDES(out_mu_, mu_);

  // The handshake answer (see the top of this file).  Encodes `body` as the
  // first frame of the queue, to be written by `deadline`.  No socket I/O,
  // so callers may hold their own locks.  Only for a server end no other
  // thread knows of yet (nothing is queued), and only once.  False: the
  // frame is over the wire limits, nothing is queued.  The loop (ControlLoop)
  // writes it when the handler returns.
  bool StartQueued(const wire::Body &body, uint64_t seq, Clock::time_point deadline) ADXL_EXCLUDES(out_mu_);

  // Frames encoded ahead, so that a caller encodes a large message (a table
  // of thousands of regions) outside its own locks and only queues it under
  // them.  Encode / EncodePost (a fresh seq, as Post) take no lock; false
  // (logged) when the message is over the wire limits.  SendEncoded is
  // Send of an encoded frame; StartQueuedEncoded is StartQueued of one.
  struct Frame {
    std::string bytes;
    wire::Type type = wire::Type::kAck;
  };
  bool Encode(const wire::Body &body, uint64_t seq, Frame *frame) const;
  bool EncodePost(const wire::Body &body, Frame *frame);
  bool SendEncoded(Frame frame, Clock::time_point deadline) ADXL_EXCLUDES(out_mu_, mu_);
  void StartQueuedEncoded(Frame frame, Clock::time_point deadline) ADXL_EXCLUDES(out_mu_);
  // Has the loop write what is queued (a handshake answer queued by
  // StartQueued while the loop handled another connection's message: the
  // loop writes only the handled connection's queue when the handler
  // returns).  No socket I/O here.
  void WakeWriter() ADXL_EXCLUDES(out_mu_);
  // Frames wait in the queue.
  bool queued() const ADXL_EXCLUDES(out_mu_);
  // The StartQueued() frame (the handshake answer) was written completely.
  bool answer_sent() const { return answer_sent_.load(); }
  // Loop thread: writes what the socket takes now.
  enum class FlushResult { kDrained, kPending, kBroken };
  FlushResult Flush() ADXL_EXCLUDES(out_mu_);
  // The frame being written is past its deadline.
  bool QueueOverdue(Clock::time_point now) const ADXL_EXCLUDES(out_mu_);
  // The deadline of the frame being written; time_point::max() when none is.
  Clock::time_point QueueDeadline() const ADXL_EXCLUDES(out_mu_);
  // Called by the loop for an incoming Ack.
  void CompleteAck(uint64_t seq, uint32_t status) ADXL_EXCLUDES(mu_);
  // Called by ControlLoop::Add: from now on the loop writes what Send()
  // leaves queued.  True when frames wait already (the caller wakes it).
  bool AttachWaker(std::shared_ptr<ControlWaker> waker) ADXL_EXCLUDES(out_mu_);

  // Shuts the connection down; pending and future Requests end kClosed.
  // Queued frames that the socket takes at once still leave first (a refusal
  // sent just before Close()); the rest is dropped.
  void Close() ADXL_EXCLUDES(out_mu_, mu_);
  bool closed() const { return closed_.load(); }

  // Bound on the bytes queued behind the frame being written, each frame
  // counted with kFrameCost more (what holding it costs besides its bytes:
  // a flood of tiny answers costs what it takes in memory).  One frame of
  // the largest size (wire::kMaxPayload: a metadata blob of up to
  // wire::kMaxMetadataBlob, a table) and 1 MiB more: far above what a
  // reading peer ever has waiting (answers, heartbeats, region pushes, one
  // large frame behind another, which is not yet written out), while a peer
  // that sends and does not read reaches it within a few reads of the loop.
  // At 1 MiB alone, one published 1 MiB blob queued behind any frame cut a
  // healthy peer off.
  static constexpr size_t kMaxQueuedBehind = wire::kMaxPayload + (1u << 20);
  static constexpr size_t kFrameCost = 64;

  // Loop-thread state.
  wire::FrameReader reader;
  // Server ends, between an authenticating Hello and the client's
  // AuthResponse (adxl.AuthToken): what both proofs are computed over.
  struct PendingAuth {
    bool active = false;
    std::string from, to, client_nonce, server_nonce;
    uint32_t heartbeat_ms = 0, dead_after_ms = 0;
  } pending_auth;
  std::atomic<int64_t> last_rx_ms{0};
  // Server ends (core/heartbeat.h): the silence after which the client is
  // dead, as its Hello said (0: not said, the server's own applies), and
  // whether a frame came after the handshake - the client's link is set up
  // and it pings.  Written by the loop thread, read by the heartbeat.
  std::atomic<uint32_t> peer_dead_after_ms{0};
  std::atomic<bool> peer_live{false};
  int64_t created_ms = 0;
  const std::string &desc() const { return desc_; }

 private:
  struct OutFrame {
    std::string bytes;
    Clock::time_point deadline;
    bool answer = false;  // the StartQueued() frame
  };
  // condition_variable_any's handle on mu_.  The analysis sees mu_ held
  // across a wait, as it is whenever the wait returns.
  struct WaitLock {
    Mutex *mu;
    void lock() ADXL_NO_THREAD_SAFETY_ANALYSIS { mu->Lock(); }
    void unlock() ADXL_NO_THREAD_SAFETY_ANALYSIS { mu->Unlock(); }
  };

  // Appends a frame; its deadline is raised to that of the frame ahead.
  void Enqueue(std::string frame, Clock::time_point deadline, bool answer) ADXL_REQUIRES(out_mu_);
  // Writes what the socket takes now.
  FlushResult WriteQueue() ADXL_REQUIRES(out_mu_);
  // Bytes queued behind the frame being written.
  size_t QueuedBehind() const ADXL_REQUIRES(out_mu_);
  // No loop: writes the queue up to stream offset `end` (the end of the
  // caller's frame), waiting for socket space until `deadline`.
  bool WriteOut(uint64_t end, Clock::time_point deadline, wire::Type type) ADXL_EXCLUDES(out_mu_, mu_);

  Fd fd_;
  Role role_;
  std::string desc_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> hello_done_{false};
  std::atomic<bool> answer_sent_{false};

  mutable Mutex out_mu_;
  std::deque<OutFrame> out_ ADXL_GUARDED_BY(out_mu_);  // whole frames; the front one written up to out_off_
  size_t out_off_ ADXL_GUARDED_BY(out_mu_) = 0;
  size_t out_bytes_ ADXL_GUARDED_BY(out_mu_) = 0;      // sum over out_'s frames of size + kFrameCost
  uint64_t enqueued_ ADXL_GUARDED_BY(out_mu_) = 0;     // stream bytes ever queued
  uint64_t written_ ADXL_GUARDED_BY(out_mu_) = 0;      // stream bytes of frames written completely
  std::shared_ptr<ControlWaker> waker_ ADXL_GUARDED_BY(out_mu_);  // set once added to a loop

  mutable Mutex mu_;
  std::condition_variable_any cv_;  // with mu_: an Ack arrived, or the connection closed
  std::string peer_name_ ADXL_GUARDED_BY(mu_);
  std::map<uint64_t, int64_t> pending_ ADXL_GUARDED_BY(mu_);  // seq -> ack status, -1 while waiting
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
  // Starts reading a connection (any thread) and writing what is queued on
  // it (ControlConn::Send, StartQueued) as the socket takes it; one whose
  // queue is overdue is closed.
  bool Add(const std::shared_ptr<ControlConn> &conn) ADXL_EXCLUDES(mu_);
  // Closes every connection and joins the thread.  Idempotent.
  void Stop() ADXL_EXCLUDES(mu_);
  static int64_t NowMs();

 private:
  void Run() ADXL_EXCLUDES(mu_);
  void Accept() ADXL_EXCLUDES(mu_);
  void ReadFrom(const std::shared_ptr<ControlConn> &conn) ADXL_EXCLUDES(mu_);
  void Drop(const std::shared_ptr<ControlConn> &conn) ADXL_EXCLUDES(mu_);
  std::shared_ptr<ControlConn> Find(int fd) ADXL_EXCLUDES(mu_);
  // Watches a connection for writability (its queue) or stops.
  void WatchWrites(const std::shared_ptr<ControlConn> &conn, bool on) ADXL_EXCLUDES(mu_);
  void FlushTo(const std::shared_ptr<ControlConn> &conn) ADXL_EXCLUDES(mu_);
  // Closes connections whose queue is overdue: of `conns`, or of writers_.
  void CloseOverdue(const std::vector<std::shared_ptr<ControlConn>> &conns) ADXL_EXCLUDES(mu_);
  void CloseStaleHandshakes() ADXL_EXCLUDES(mu_);
  // Milliseconds until the next tick or the earliest deadline of writers_.
  int WaitMs(int64_t next_tick) const;
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
  Mutex mu_;
  std::map<int, std::shared_ptr<ControlConn>> conns_ ADXL_GUARDED_BY(mu_);
  // Set by Start (before the thread runs), shared with the added connections.
  std::shared_ptr<ControlWaker> waker_ ADXL_GUARDED_BY(mu_);
  // Loop thread only: connections watched for EPOLLOUT (their queue waits).
  std::map<int, std::shared_ptr<ControlConn>> writers_;
};

}  // namespace adxl

#endif  // ADXL_SRC_CONTROL_CONTROL_H_
