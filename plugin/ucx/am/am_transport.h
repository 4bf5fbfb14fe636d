// AmTransport: what the AM mover (am_mover.h) and each network path
// (net_path.h) move by on the RDMA lane over TCP — transfers as UCP active
// messages into addresses the receiving side validates, instead of UCP RMA.
//
// Why: UCP 1.13 emulates RMA over TCP with small active messages (~1 GB/s
// on loopback) and uses TCP's zero-copy path only for active-message and tag
// rendezvous.  Both sides accept an address only inside memory registered
// with this plugin (the registration table here), so a peer can reach
// nothing else.
//
// Protocol (am_protocol.h has the header layouts).  Post() cuts a batch into
// messages of up to kMaxMessageOps operations and kMaxMessageBytes bytes (an
// operation larger than that travels alone), all sent at once; with several
// UCP endpoints to the peer (ADXL_UCX_RDMA_CONNECTIONS), message i goes on
// endpoint i mod n, and the target answers each on the connection it came on:
//  - WRITE: one AM per message whose header lists the (target address,
//    length) of each operation and whose data is the operations' bytes, in
//    order.  Always rendezvous, so data moves only after the target asked for
//    it and only while the initiator's request lives: a force-closed endpoint
//    moves nothing more.  The target validates every address, receives the
//    data and answers with one acknowledgement per message.
//  - READ: one request AM per message listing (target address, length); the
//    target validates and answers with one AM carrying the data of those
//    addresses in order (eager when small, rendezvous when large: UCP
//    decides); the initiator places it into the local buffers it recorded
//    for that message.  Late data of an ended batch is dropped.
// Wire-up: a batch of no operations is a probe — one READ request listing
// nothing per endpoint, each answered with a READ answer of no data over
// the peer's reply endpoint.  The plugin posts it when a link is made (the
// engine's wire-up post), so that the link counts as up only once the
// peer's own endpoint to this side works: UCP 1.13 aborts a process whose
// endpoint fails while its wire-up reply is still queued (an assertion in
// ucp_request_send_state_ff, "got REP message"), which this side exiting
// or finalizing right after connecting would otherwise cause in the peer.
// A single-operation message moves straight between the two buffers.  A
// message of several operations is gathered into a contiguous staging
// buffer on the sending side: UCP 1.13 moves contiguous rendezvous data
// with TCP's zero-copy path but its iov datatype far slower (adxl-bench
// measured 2-3x), and a memcpy of at most kMaxMessageBytes costs much less
// than the wire.  The target receives WRITE data of several operations
// fragment by fragment straight into place (am_placement.h: UCP's generic
// datatype; over TCP, UCP copies each fragment out of its receive segment
// anyway, so this is the same single copy a contiguous receive makes).  A
// READ answer of several operations is placed the same way on the
// initiator, fragment by fragment while its batch has not ended.
//
// Life of a batch (initiator side).  Post() sends the first kWindowMessages
// messages; each answer lets the next one go (from the callback, outside
// mu_).  A batch ends — its DoneFn runs, exactly once, outside every lock —
// when Post() has returned (`posting`),
// UCP holds none of its sends (`sending`: UCP reads the batch's headers and
// iov arrays until then) and no READ-data receive of it is in flight
// (`receiving`), and either every message was answered or the batch was
// ended early: by Abandon() (the endpoint was force-closed) or by
// EndpointFailed() (UCP reported the endpoint's failure).  So a batch is never
// freed while Post() or UCP still reads from it, and no READ data of an
// ended batch is written here afterwards.
//
// Deadlines.  A force-closed endpoint sends nothing more, but bytes its
// socket had already queued in the kernel still reach the target when a
// lost path returns, and the target's pending receive would write them,
// seconds after the initiator reported TIMEOUT.  UCP gives no hold on its
// sockets, so the target enforces the deadline: a WRITE posted with one
// carries in its header the time left until it, measured when the message
// is sent; the target, when the header arrives (before any of the
// message's data moves), sets its own deadline = now + that budget, on its
// clock.  Such a write is received fragment by fragment (am_placement.h):
// each fragment is copied into place only if that deadline has not passed
// when it arrives (eager data: the whole message, on arrival); from the
// first late fragment on, the rest of the message is dropped and the
// message is answered with ERR_IO.  What was placed before the deadline
// stays, as with the earlier messages of the batch.  The target's deadline
// is later than the initiator's by at most the header's one-way delay.
// The check costs no copy; receiving such a write into staging and copying
// it into place instead costs a third copy of every byte on the target's
// busiest thread (adxl-bench measured WRITE at about half of a plain TCP
// stream that way).
// Writes without a deadline of one operation move as before, received by
// UCP into place.
//
// Target side.  WRITE data is received by ucp_am_recv_data_nbx, and a READ
// answered by a send, on the reply endpoint UCP made for the initiator.  When
// the initiator force-closes its endpoint (a TIMEOUT fence) such a request
// may never complete, and UCP refuses to destroy a worker with requests
// pending.  The lane therefore tracks every request it starts as a target,
// and ReleaseTargetOps() force-closes the reply endpoints of those still
// pending, which fails them: the plugin calls it before a registration such
// a request reads or writes goes away, and before the worker is destroyed.
// A request failed that way is not answered.
//
// Owned endpoints.  The reply endpoint is the one UCP pairs with the
// peer's endpoint to this worker, and UCP pairs the endpoints two workers
// make to each other: where this side made one to that peer too (a link in
// both directions), the reply endpoint IS this side's own — an
// adxl_plugin_ep's connection (the AM, RMA or same-node mover's), or a
// network path's (net_paths.h) — which its owner still posts on and closes
// at its teardown.  So the owners register each UCP endpoint they make
// (Own, in the Creating scope of its ucp_ep_create) and ask before closing
// one (Disown): the contract is core/owned_endpoints.h.  ReleaseTargetOps closes an owned endpoint
// the way its owner's forced teardown would: every batch of its ep_id
// fenced (nothing more is sent on it) and later Posts on that id failing
// with ERR_IO; the endpoint force-closed, once; those batches abandoned;
// then the owner told (its ClosedFn: it marks its endpoint failed, as when
// UCP reports a failure).  Its Disown then says the endpoint is closed
// already, and the owner does not close it again.  Owners that read an
// owned endpoint outside this transport's Post (ucp_ep_rkey_unpack,
// ucp_ep_print_info, the RMA mover's posts) do so in a Use
// (BeginUse/EndUse), which ReleaseTargetOps waits for.
// Endpoints UCP made itself for a peer (no endpoint of ours to it) are
// nobody's: ReleaseTargetOps just closes them.
//
// Locks and callbacks.  The AM handlers and request callbacks run inside
// ucp_worker_progress, under UCP's worker lock, on whichever thread
// progresses (the plugin's progress thread, or an API thread in
// Abandon/Progress).  UCP may also complete a request synchronously inside
// the call that posted it and run its callback there.  Hence the order
//     UCP worker lock  ->  mu_  ->  StagingPool::mu_   (mu_ is taken inside
//                                   callbacks; freeing a batch returns its
//                                   staging buffers under mu_)
//     regions_mu_                    (a leaf, never held with mu_)
// and the rule, checked by clang's thread-safety analysis: no method calls
// into UCP while holding mu_ (they are ADXL_EXCLUDES(mu_)).  Work a UCP
// callback would have to do under mu_ with further UCP calls — failing the
// batches of an endpoint UCP reported dead — is queued by EndpointFailed()
// and done by RunDeferred(), which the progress thread calls outside
// ucp_worker_progress.
// mu_ guards the batches, the target requests and the owned endpoints'
// table (owned_, dead_ids_, closing_, creating_, closers_).  Owners call
// Own, Disown, BeginUse, EndUse and make endpoints (a Creating scope)
// holding no lock of theirs (Disown waits, on owned_changed_ under mu_,
// for a close of that endpoint under way: a forced close and an Abandon,
// each bounded; a creation, for the closes of peers' endpoints under way,
// and such a close for the creations under way: ucp_ep_create, bounded);
// a ClosedFn runs with no lock of this class held,
// outside ucp_worker_progress, and may take its owner's locks (and mu_,
// through EndpointFailed) but must not Disown.
//
// Files: am_protocol.{h,cc} the wire format and buffer helpers; am_transport.cc
// set-up and the registration table; am_initiator.cc the batches this side
// posts; am_target.cc the requests peers post here; am_owned.cc the owned
// endpoints and their close by ReleaseTargetOps.
//
// Thread-safety: every public method may be called from any thread.
#ifndef ADXL_PLUGIN_UCX_AM_AM_TRANSPORT_H_
#define ADXL_PLUGIN_UCX_AM_AM_TRANSPORT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ucp/api/ucp.h>

#include "am/am_placement.h"
#include "am/staging_pool.h"
#include "common/thread_annotations.h"
#include "core/fault_injection.h"
#include "core/owned_endpoints.h"
#include "core/plugin_log.h"

class AmTransport final : public OwnedEndpoints {
 public:
  // Called exactly once per batch with its final status (ADXL_PLUGIN_*).
  using DoneFn = void (*)(void *arg, int status);

  struct Op {
    void *local;
    ucp_mem_h local_memh;  // may be null
    uint64_t remote;
    size_t len;
  };

  // Message limits: operations and bytes per message.  More operations per
  // message amortize the rendezvous handshake and the acknowledgement; a
  // bounded size keeps several messages in flight, so that the target
  // receives one while the next is on the wire.
  static constexpr size_t kMaxMessageOps = 256;
  static constexpr size_t kMaxMessageBytes = StagingPool::kBufferBytes;
  // Messages this side has in flight at once, over all batches and
  // endpoints; answers release the next, in the order batches were posted.
  // Bounds the staging held (kWindowMessages x kMaxMessageBytes) while
  // keeping the wire busy.
  static constexpr size_t kWindowMessages = 16;
  // Registered staging buffers per context (kMaxMessageBytes each): the
  // window of this side as initiator, and as many for what peers send it.
  static constexpr size_t kStagingBuffers = 2 * kWindowMessages;

  // Installs the AM handlers on the worker.
  bool Init(ucp_worker_h worker, PluginLog log, FaultInjection faults, std::string *why);
  // Registered staging buffers come from `ucp` (optional: without it staging
  // is heap memory).  Call once, after Init.
  void UseStagingFrom(ucp_context_h ucp) { staging_pool_.Init(ucp, kStagingBuffers); }
  // Releases the staging pool and the placement datatype; call when no
  // batch or target request is left (after ReleaseTargetOps), before the UCP
  // context goes.
  void Close() {
    staging_pool_.Close();
    placement_type_.Destroy();
  }

  // Memory this process registered: the only memory peers may reach.
  void AddRegion(void *addr, size_t len, ucp_mem_h memh) ADXL_EXCLUDES(regions_mu_);
  // Peers can no longer reach the region; target-side requests still using
  // it are failed first (ReleaseTargetOps), those a handler was accepting
  // when it went too: when it returns no byte of a peer's lands in it.
  // Progresses the worker: call outside ucp_worker_progress.
  void RemoveRegion(void *addr) ADXL_EXCLUDES(regions_mu_, mu_);

  // Starts a batch on endpoint `ep_id` (the plugin's id of `eps`, never
  // reused); done(arg, status) runs when it ends (possibly before Post
  // returns).  `eps` (n_eps >= 1) are UCP endpoints to the same peer, each
  // its own connection: message i of the batch goes on eps[i % n_eps], so
  // that a large batch keeps several connections busy.  They share one
  // ep_id: a Fence, Abandon or failure of any ends the batch.
  // count 0: the wire-up probe ("Wire-up" above; `write` is ignored).
  // deadline_ns: CLOCK_MONOTONIC nanoseconds (0: none); each WRITE message
  // tells the target the time left until it, and the target places nothing
  // after that ("Deadlines" above).  answered_ns (optional; must stay valid
  // until `done` runs) gets the CLOCK_MONOTONIC time of each answer the peer
  // sends to a message of the batch (an error too) and of each READ answer's
  // data received: the caller's sign that its connection moves.
  // Returns false when nothing was started (done is then not called).  On
  // an ep_id whose endpoint ReleaseTargetOps closed ("Owned endpoints"),
  // done(arg, ERR_IO) runs before it returns.
  bool Post(uint64_t ep_id, const ucp_ep_h *eps, size_t n_eps, bool write, const Op *ops, size_t count,
            uint64_t deadline_ns, DoneFn done, void *arg, std::atomic<int64_t> *answered_ns = nullptr)
      ADXL_EXCLUDES(mu_);

  // CLOCK_MONOTONIC time of the last answer (as for answered_ns) to any
  // message this side sent on the transport (0: none yet).
  int64_t LastAnswerNs() const { return last_answer_ns_.load(std::memory_order_relaxed); }

  // Stops every batch on ep_id (status `why`): nothing more of them is sent
  // and no answer of theirs is accepted; then waits until a message of
  // theirs that another thread had already taken to send is in UCP's hands
  // (a gather and one ucp_am_send_nbx: short, and never waiting on this
  // thread).  No UCP call: call it before closing the endpoint, so that no
  // send, from a callback or a post, touches it once closed.
  void Fence(uint64_t ep_id, int why) ADXL_EXCLUDES(mu_);

  // Ends every batch on ep_id with status `why` and waits (bounded by
  // kAbandonWait) until none of them posts, sends or receives any more;
  // after this no byte of those batches is written here.  Call after
  // force-closing the endpoint, from a thread that is not inside
  // ucp_worker_progress.
  void Abandon(uint64_t ep_id, int why) ADXL_EXCLUDES(mu_);

  // UCP reported the failure of endpoint ep_id (its error callback, inside
  // ucp_worker_progress): queues the failing of its batches for
  // RunDeferred().  Safe to call under UCP's worker lock.
  void EndpointFailed(uint64_t ep_id, int why) ADXL_EXCLUDES(mu_);
  // Whether RunDeferred() has work: a cheap check for the progress loop.
  bool HasDeferred() const { return deferred_pending_.load(std::memory_order_acquire); }
  // Does the queued work: ends the batches of failed endpoints (those still
  // posting, sending or receiving end when that finishes).  Call outside
  // ucp_worker_progress.
  void RunDeferred() ADXL_EXCLUDES(mu_);

  // Force-closes the reply endpoints of target-side requests still pending
  // on [addr, addr+len) (all of them when len is 0) and waits, bounded,
  // until those requests have ended.  An owned reply endpoint is closed as
  // "Owned endpoints" says (its owner's ClosedFn runs here).  Call outside
  // ucp_worker_progress.
  void ReleaseTargetOps(uintptr_t addr, size_t len) ADXL_EXCLUDES(mu_);

  // Owned endpoints (the header comment; the contract in
  // core/owned_endpoints.h).  Own: closed(owner, ep) runs if
  // ReleaseTargetOps closes `ep`.  Disown: the owner about to close `ep`
  // (fenced first, as for any close).  BeginUse/EndUse: the owner reads
  // `ep` outside this transport's Post (its own posts check dead_ids_).
  void Own(ucp_ep_h ep, uint64_t ep_id, ClosedFn closed, void *owner) override ADXL_EXCLUDES(mu_);
  bool Disown(ucp_ep_h ep, uint64_t ep_id) override ADXL_EXCLUDES(mu_);
  bool BeginUse(ucp_ep_h ep, uint64_t ep_id) override ADXL_EXCLUDES(mu_);
  void EndUse(ucp_ep_h ep, uint64_t ep_id) override ADXL_EXCLUDES(mu_);
  // Draining (the ABI's drain): a mark taken now, and whether a target
  // request started before that mark (a WRITE-data receive, a READ answer,
  // an acknowledgement a peer's message asked for) is still pending.
  uint64_t TargetOpMark() ADXL_EXCLUDES(mu_);
  bool TargetOpsBefore(uint64_t mark) ADXL_EXCLUDES(mu_);

 private:
  // A contiguous staging buffer: pooled and registered when the pool has
  // one, else from the heap (slower to move, but correct).
  struct Staging {
    StagingPool::Buffer pooled;
    std::unique_ptr<char[]> heap;
    char *data() const { return pooled.data() != nullptr ? pooled.data() : heap.get(); }
    ucp_mem_h memh() const { return pooled.memh(); }
  };
  // Staging for `n` bytes; data() is null when out of memory.
  Staging NewStaging(size_t n);

  // One message of a batch, as the initiator keeps it.
  struct Message {
    AmTransport *lane = nullptr;            // user data of its send and receive callbacks
    uint64_t token = 0;                // its batch
    std::vector<uint64_t> header;      // the AM header (UCP reads it until the send completes)
    std::vector<ucp_dt_iov_t> local;   // the local side of its operations
    size_t bytes = 0;
    ucp_mem_h memh = nullptr;          // single-operation messages: its memh
    // WRITE of several operations: their bytes gathered, the message's data.
    Staging staging;
    // READ of several operations: places the answer's fragments into
    // `local` while the batch has not ended (set when the answer arrives).
    std::unique_ptr<Placement> placement;
    bool answered = false;   // acknowledged / its data placed (or failed)
    bool send_done = false;  // UCP no longer holds its send
  };
  struct Batch {
    uint64_t ep_id = 0;
    std::vector<ucp_ep_h> eps;  // valid until ended (Fence precedes the close)
    bool write = false;
    uint64_t deadline_ns = 0;  // CLOCK_MONOTONIC; 0: none
    size_t next_send = 0;   // messages[next_send..] are not sent yet
    size_t in_window = 0;   // sent, not answered, not ended (counted in in_flight_)
    size_t remaining = 0;  // messages not yet answered
    int status = 0;        // first error, or ADXL_PLUGIN_OK
    DoneFn done = nullptr;
    void *arg = nullptr;
    std::atomic<int64_t> *answered_ns = nullptr;  // see Post()
    bool posting = true;    // Post() still sends it
    bool ended = false;     // abandoned / endpoint failed: nothing more is accepted
    bool done_called = false;  // Abandon() gave up waiting and reported it already
    size_t sending = 0;     // sends UCP still holds
    size_t receiving = 0;   // READ-data receives posted or being posted
    std::vector<Message> messages;
  };
  struct Region {
    size_t len;
    ucp_mem_h memh;
  };
  // A request this side started as a target (WRITE-data receive, READ-data
  // send, acknowledgement), pending in UCP.
  struct TargetOp {
    ucp_ep_h reply_ep;
    uintptr_t lo, hi;  // the registered memory it reads or writes ([0,0): none)
    bool released = false;  // its endpoint is being force-closed: no answer
  };
  using BatchIt = std::unordered_map<uint64_t, Batch>::iterator;
  // An owned endpoint ("Owned endpoints"), by (endpoint, ep_id): UCP reuses
  // a closed endpoint's address for a later one, which then has an entry
  // of its own (a new connection of a network path is made only after its
  // owner disowned the old one under the same ep_id).
  struct OwnedEp {
    enum State { kOpen, kClosing, kClosed };
    ClosedFn closed = nullptr;
    void *owner = nullptr;
    State state = kOpen;
    int users = 0;  // BeginUse .. EndUse
  };
  using OwnedKey = std::pair<ucp_ep_h, uint64_t>;

  static ucs_status_t OnWrite(void *arg, const void *header, size_t header_len, void *data, size_t len,
                              const ucp_am_recv_param_t *param);
  static ucs_status_t OnAck(void *arg, const void *header, size_t header_len, void *data, size_t len,
                            const ucp_am_recv_param_t *param);
  static ucs_status_t OnReadRequest(void *arg, const void *header, size_t header_len, void *data, size_t len,
                                    const ucp_am_recv_param_t *param);
  static ucs_status_t OnReadData(void *arg, const void *header, size_t header_len, void *data, size_t len,
                                 const ucp_am_recv_param_t *param);

  // Validates the (address, length) list of a request against the
  // registrations; fills *iov (and *memh for a single operation) and returns
  // the total, or false with *why.
  bool ResolveTargetOps(const uint64_t *pairs, size_t n, std::vector<ucp_dt_iov_t> *iov, ucp_mem_h *memh,
                        size_t *total) ADXL_EXCLUDES(regions_mu_);
  // A WRITE or READ request as the target reads it.
  struct TargetRequest {
    uint64_t token = 0;
    uint32_t msg = 0;
    size_t ops = 0;
    bool valid = false;  // every range inside one registered region
    std::vector<ucp_dt_iov_t> iov;
    ucp_mem_h memh = nullptr;  // single-operation requests
    size_t total = 0;
    uint64_t budget_us = 0;  // WRITE: time left until the initiator's deadline (0: none)
  };
  // Parses and validates a request header; false (logged) when it is
  // malformed and must be dropped unanswered.  `what` names it in the log;
  // probe_ok: it may list no operation (a READ request: the wire-up probe).
  bool ReadTargetRequest(const void *header, size_t header_len, const ucp_am_recv_param_t *param, const char *what,
                         bool probe_ok, TargetRequest *req) ADXL_EXCLUDES(regions_mu_);
  void SendAck(ucp_ep_h reply_ep, uint64_t token, uint32_t msg, int status) ADXL_EXCLUDES(mu_);
  // Whether WRITE data of `len` bytes complete now is past this side's
  // deadline until_ns (0: none): then it must not be placed (logged).
  bool Late(uint64_t until_ns, size_t len);

  // A batch's DoneFn call, taken out of the table under mu_ and made after
  // releasing it (the DoneFn may call into the transport).  Empty: nothing to call.
  struct Completion {
    DoneFn done = nullptr;
    void *arg = nullptr;
    int status = 0;
    void Run() const {
      if (done != nullptr) done(arg, status);
    }
  };

  // Batch bookkeeping; each ends the batch when it may end (TakeIfFinished)
  // and runs its DoneFn after releasing mu_, then sends what the window
  // now allows (Pump).  A Message* is alive while its send or receive is
  // counted; these calls may free it.
  void MessageDone(uint64_t token, uint32_t msg, int status) ADXL_EXCLUDES(mu_);
  void ReceiveDone(Message *m, int status) ADXL_EXCLUDES(mu_);
  void SendDone(Message *m) ADXL_EXCLUDES(mu_);
  void SendFailed(Message *m, int status) ADXL_EXCLUDES(mu_);
  void PostDone(uint64_t token) ADXL_EXCLUDES(mu_);
  // from_peer: the peer's answer (any status), not a local failure.
  void Answered(Batch &b, Message &m, int status, bool from_peer) ADXL_REQUIRES(mu_);
  // Sends the next messages of the posted batches while the window has room;
  // they may be any endpoint's.
  void Pump() ADXL_EXCLUDES(mu_);
  // Post's part under mu_: enters batch `token` of `messages` (taken) into
  // the table and the send queue; false (nothing entered) when out of memory.
  bool AddBatch(uint64_t token, uint64_t ep_id, const ucp_ep_h *eps, size_t n_eps, bool write, uint64_t deadline_ns,
                DoneFn done, void *arg, std::atomic<int64_t> *answered_ns, std::vector<Message> *messages)
      ADXL_REQUIRES(mu_);
  // Pump handed a message of endpoint ep_id to UCP (or failed it).
  void Handed(uint64_t ep_id) ADXL_EXCLUDES(mu_);
  // Marks the batches of ep_id ended; returns their tokens.
  std::vector<uint64_t> EndBatches(uint64_t ep_id, int why) ADXL_REQUIRES(mu_);
  // If batch `it` may end now, takes it out of the table into *finished
  // (to be run once mu_ is released).
  bool TakeIfFinished(BatchIt it, Completion *finished) ADXL_REQUIRES(mu_);
  // The shape of the bookkeeping calls: runs body(Batch &) on batch `token`
  // under mu_ (nothing when the batch is gone: it ended and was reported),
  // ends the batch if it may end now, then, with mu_ released, runs its
  // DoneFn and Pump().  `body` runs under mu_ (annotate the lambda
  // ADXL_REQUIRES(mu_)) and so must not call into UCP.
  template <typename Body>
  void UpdateBatch(uint64_t token, Body &&body) ADXL_EXCLUDES(mu_);

  // Sends an AM as a target, tracked until UCP is done with it; `header`
  // and `iov` are copied.  Returns false when it could not be sent.
  // Several iov entries are gathered into one contiguous buffer first.
  bool TargetSend(ucp_ep_h reply_ep, unsigned id, const void *header, size_t header_len,
                  std::vector<ucp_dt_iov_t> iov, ucp_mem_h memh) ADXL_EXCLUDES(mu_);
  // Registers a target request about to start; its id for TargetOpDone.
  // A request on an endpoint ReleaseTargetOps is closing starts released
  // (*live false, when given): it is not answered.
  uint64_t TargetOpStart(ucp_ep_h reply_ep, const std::vector<ucp_dt_iov_t> &iov, bool *live = nullptr)
      ADXL_EXCLUDES(mu_);
  // OwnedEndpoints::Creating: a creation waits for the closes under way
  // (closers_), a close for the creations under way (creating_).
  bool BeginCreate(bool wait) override ADXL_EXCLUDES(mu_);
  void EndCreate() override ADXL_EXCLUDES(mu_);
  // ReleaseTargetOps' part for the endpoints it closes (`eps`, its claim
  // in closing_): waits for the endpoint creations under way (one may be
  // handing an endpoint of `eps` to its owner), fences the owned ones'
  // ep_ids, waits until no owner uses them, closes them all (no creation
  // starting meanwhile), abandons the ep_ids' batches, tells the owners.
  void CloseReplyEndpoints(const std::vector<ucp_ep_h> &eps) ADXL_EXCLUDES(mu_);
  // The request's memory is still there to be written (not released).  A
  // released request's memory may be going away; ReleaseTargetOps waits
  // for TargetOpDone, so a write started after a true answer is safe.
  bool TargetOpLive(uint64_t id) ADXL_EXCLUDES(mu_);
  // The request ended; returns whether it may be answered (not released).
  bool TargetOpDone(uint64_t id) ADXL_EXCLUDES(mu_);
  // Placement gate of a READ answer (arg: its Message): whether its batch
  // still takes data, i.e. has not ended.  Abandon waits for the receive
  // before it returns, so a fragment let through is copied before that.
  static bool ReadStillWanted(void *arg) ADXL_EXCLUDES(mu_);

  ucp_worker_h worker_ = nullptr;
  PluginLog log_;
  FaultInjection faults_;  // seams of the test build (core/fault_injection.h)
  StagingPool staging_pool_;
  PlacementType placement_type_;  // WRITE receives placed fragment by fragment (am_placement.h)
  size_t max_message_ops_ = kMaxMessageOps;  // also bounded by UCP's AM header limit

  adxl::Mutex regions_mu_;
  std::map<uintptr_t, Region> regions_ ADXL_GUARDED_BY(regions_mu_);

  adxl::Mutex mu_;
  std::unordered_map<uint64_t, Batch> batches_ ADXL_GUARDED_BY(mu_);
  uint64_t next_token_ ADXL_GUARDED_BY(mu_) = 1;
  std::deque<uint64_t> unsent_ ADXL_GUARDED_BY(mu_);  // batches with messages to send, oldest first
  size_t in_flight_ ADXL_GUARDED_BY(mu_) = 0;          // messages sent and not answered
  std::vector<std::pair<uint64_t, int>> failed_eps_ ADXL_GUARDED_BY(mu_);  // for RunDeferred
  // Endpoint ids of the messages Pump has taken and not yet handed to UCP
  // (it sends without mu_); Fence waits on handed_ until none is its own.
  std::vector<uint64_t> handing_ ADXL_GUARDED_BY(mu_);
  adxl::CondVar handed_;
  std::atomic<bool> deferred_pending_{false};
  std::atomic<int64_t> last_answer_ns_{0};  // LastAnswerNs()
  std::unordered_map<uint64_t, TargetOp> target_ops_ ADXL_GUARDED_BY(mu_);
  uint64_t next_target_op_ ADXL_GUARDED_BY(mu_) = 1;
  std::map<OwnedKey, OwnedEp> owned_ ADXL_GUARDED_BY(mu_);
  // ep_ids with an owned endpoint ReleaseTargetOps closed and its owner has
  // not disowned yet (how many): Post fails on them with ERR_IO.
  std::map<uint64_t, size_t> dead_ids_ ADXL_GUARDED_BY(mu_);
  // Endpoints a ReleaseTargetOps is closing now (owned or not): closed once,
  // and no request on them is answered.
  std::set<ucp_ep_h> closing_ ADXL_GUARDED_BY(mu_);
  // Owners' endpoint creations under way (OwnedEndpoints::Creating), and
  // CloseReplyEndpoints calls between their wait for those and their
  // ucp_ep_close_nbx calls: neither starts while the other is nonzero
  // (closers first: a creation waits once closers_ is raised).
  int creating_ ADXL_GUARDED_BY(mu_) = 0;
  int closers_ ADXL_GUARDED_BY(mu_) = 0;
  // An owned endpoint's close ended, a use of one, a creation or a close
  // of peers' endpoints ended.
  adxl::CondVar owned_changed_;
};

#endif  // ADXL_PLUGIN_UCX_AM_AM_TRANSPORT_H_
