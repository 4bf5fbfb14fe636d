// Admission: how many clients may wire up their transport to this engine at
// once (a connect storm when a cluster starts).
//
// A client that passed the handshake gets its answer (HelloAck: our
// transport address and regions) and then creates its transport endpoint
// and wires it up; our side of each wire-up is served by the one progress
// thread of our transport, and on a small machine hundreds of them at once
// take so long that clients time out in mid wire-up.  UCX 1.13 then aborts
// the engine they connect to: an endpoint that fails while the wire-up
// reply it owes still waits in its send queue trips an assertion
// (ucp_request.c:684, "got REP message"), and a client that gives up or
// exits makes exactly that happen.  So at most kMaxWiring clients are
// between our answer and the end of their wire-up (their first frame after
// the handshake: a client pings as soon as its link is set up); the others
// wait for their answer, before any transport state exists on either side,
// and a client that gives up there leaves nothing behind.  Wire-ups still
// run kMaxWiring at a time, in parallel.  A slot is released by the
// client's first frame, its close, or after kSlotMs (a client that never
// sends must not block the others).
//
// Thread-safety: control thread only (ControlHandler calls and OnTick);
// no locks.
#ifndef ADXL_SRC_CORE_ADMISSION_H_
#define ADXL_SRC_CORE_ADMISSION_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>

#include "control/control.h"
#include "control/handshake.h"

namespace adxl {

class Admission {
 public:
  static constexpr size_t kMaxWiring = 32;
  static constexpr int64_t kSlotMs = 10000;
  using Admit = std::function<void(const std::shared_ptr<ControlConn> &, HandshakeServer::Admitted)>;

  explicit Admission(Admit admit) : admit_(std::move(admit)) {}

  // A client passed the handshake: answered now, or queued.
  void Offer(const std::shared_ptr<ControlConn> &conn, HandshakeServer::Admitted admitted);
  // Its first frame after the answer came: its wire-up ended.
  void Live(const ControlConn *conn);
  void Closed(const ControlConn *conn);
  // Releases slots held longer than kSlotMs, then admits who waits.
  void Tick(int64_t now_ms);
  size_t waiting() const { return waiting_.size(); }

 private:
  void Pump(int64_t now_ms);

  const Admit admit_;
  std::map<const ControlConn *, int64_t> wiring_;  // admitted, not live yet: since (ms)
  std::deque<std::pair<std::weak_ptr<ControlConn>, HandshakeServer::Admitted>> waiting_;
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_ADMISSION_H_
