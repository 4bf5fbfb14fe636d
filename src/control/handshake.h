// The handshake that opens a link (docs/architecture.md, "Connect"): both
// sides of it, with the optional authentication (adxl.AuthToken, auth.h).
//
//   C->S Hello{from, to, node, flags, client_nonce}
//   [both have a token]  S->C AuthChallenge{server_nonce}
//                        C->S AuthResponse{client_proof}
//   S->C HelloAck{status, node, transport address, regions, server_proof}
//
// The client side runs on the caller of Connect, over a socket that no
// ControlLoop reads yet: it writes and reads the frames itself, bounded by
// the caller's deadline, and leaves anything after the HelloAck in the
// socket for the loop.  The server side runs on the control thread, one
// message at a time, keeping its per-connection state in the connection
// (ControlConn::pending_auth); it never waits: its answers are queued.
// What the server side does not decide is the region table of the answer
// and the subscription to region changes (the caller does both at once,
// core/registrar.h).  Neither side holds a lock.
#ifndef ADXL_SRC_CONTROL_HANDSHAKE_H_
#define ADXL_SRC_CONTROL_HANDSHAKE_H_

#include <cstdint>
#include <string>

#include "adxl/adxl_types.h"
#include "control/control.h"
#include "control/wire.h"

namespace adxl {

// Who this engine is, as the handshake tells a peer.
struct HandshakeIdentity {
  std::string name;     // this engine's name (engine_name.h text)
  std::string node_id;  // node_id.h
  std::string token;    // adxl.AuthToken; empty: no access control
  uint32_t heartbeat_ms = 0;   // told to servers in Hello (wire.h), so that they
  uint32_t dead_after_ms = 0;  // judge this engine's silence by its own period
};

// Client side.  Sends Hello over `fd` (a connected socket), authenticates
// when `self.token` is set, and reads the answer into *ack.  SUCCESS only
// for an answer that admits us, from an engine named `remote`, proven when
// authenticated.  TIMEOUT when the deadline passes, RESOURCE_EXHAUSTED when
// the peer is at its inbound cap (adxl.MaxInboundPeers), FAILED otherwise
// (also when `cancel_fd`, polled beside the socket as in socket.h, becomes
// readable: the handshake ends at once); logs one ERROR line saying why
// ("Connect to '<remote>': ...").
Status RunClientHandshake(int fd, const HandshakeIdentity &self, const std::string &remote,
                          Clock::time_point deadline, wire::HelloAck *ack, int cancel_fd = -1);

// Server side, for a server end whose Hello was not yet accepted.
class HandshakeServer {
 public:
  // `transport_address` goes into answers to clients that named us right.
  HandshakeServer(HandshakeIdentity self, std::string transport_address);

  enum class Step {
    kAdmitted,  // *admitted says whom; the caller answers (Answer()) and subscribes it
    kWaiting,   // challenge sent, waiting for the client's proof
    kRefused,   // refused and answered as the protocol says; the connection is closed
  };
  struct Admitted {
    uint64_t seq = 0;   // the seq the answer must carry
    std::string from;   // the client's engine name
    std::string proof;  // our proof for the answer; empty without authentication
    uint32_t heartbeat_ms = 0;   // the client's liveness settings from its Hello;
    uint32_t dead_after_ms = 0;  // 0: not said
  };
  // Handles one message of the handshake.  Answers are sent with
  // `send_deadline` (queued; see control.h).
  Step OnMessage(ControlConn &conn, const wire::Message &msg, Clock::time_point send_deadline, Admitted *admitted);
  // The HelloAck that admits a client, without regions.
  wire::HelloAck Answer(std::string proof) const;

 private:
  Step Refuse(ControlConn &conn, uint64_t seq, Clock::time_point send_deadline);
  const HandshakeIdentity self_;
  const std::string transport_address_;
};

}  // namespace adxl

#endif  // ADXL_SRC_CONTROL_HANDSHAKE_H_
