#include "control/handshake.h"

#include <cstring>

#include "common/log.h"
#include "control/auth.h"
#include "control/socket.h"

namespace adxl {
namespace {

// The client's side of the socket, before the control loop reads it.
class ClientChannel {
 public:
  ClientChannel(int fd, const std::string &remote, Clock::time_point deadline, int cancel_fd)
      : fd_(fd), remote_(remote), deadline_(deadline), cancel_fd_(cancel_fd) {}

  Status Send(const wire::Body &body, uint64_t seq, const char *what) {
    std::string frame;
    if (!wire::Encode(seq, body, &frame)) {
      ADXL_ERROR("Connect to '%s': %s over the wire limits", remote_.c_str(), what);
      return FAILED;
    }
    return IoStatus(what, SendAll(fd_, frame.data(), frame.size(), deadline_, cancel_fd_));
  }

  // Reads exactly one frame; anything after it stays in the socket.
  Status Read(wire::Message *msg) {
    std::string frame(wire::kHeaderSize, '\0');
    Status st = IoStatus("handshake", RecvExact(fd_, frame.data(), frame.size(), deadline_, cancel_fd_));
    if (st != SUCCESS) return st;
    uint32_t len = 0;
    memcpy(&len, frame.data() + 8, sizeof(len));  // the header's length field (wire.h), little-endian
    if (len > wire::kMaxPayload) {
      ADXL_ERROR("Connect to '%s': handshake answer of %u bytes is over the limit", remote_.c_str(), len);
      return FAILED;
    }
    frame.resize(wire::kHeaderSize + len);
    st = IoStatus("handshake", RecvExact(fd_, frame.data() + wire::kHeaderSize, len, deadline_, cancel_fd_));
    if (st != SUCCESS) return st;
    wire::FrameReader reader;
    reader.Feed(frame.data(), frame.size());
    std::string why;
    if (reader.Next(msg, &why) != wire::FrameReader::Result::kMessage) {
      ADXL_ERROR("Connect to '%s': bad handshake answer: %s", remote_.c_str(), why.c_str());
      return FAILED;
    }
    return SUCCESS;
  }

 private:
  Status IoStatus(const char *what, NetResult r) {
    if (r == NetResult::kOk) return SUCCESS;
    if (r == NetResult::kCancelled) {
      // Finalize ended the Connect (Connector::Stop): a failure, not a timeout.
      ADXL_ERROR("Connect to '%s': %s cancelled, Finalize is running", remote_.c_str(), what);
      return FAILED;
    }
    const bool late = r == NetResult::kTimeout || Clock::now() >= deadline_;
    ADXL_ERROR("Connect to '%s': %s %s", remote_.c_str(), what, late ? "timed out" : "failed (peer closed?)");
    return late ? TIMEOUT : FAILED;
  }
  const int fd_;
  const std::string &remote_;
  const Clock::time_point deadline_;
  const int cancel_fd_;
};

}  // namespace

Status RunClientHandshake(int fd, const HandshakeIdentity &self, const std::string &remote,
                          Clock::time_point deadline, wire::HelloAck *ack_out, int cancel_fd) {
  ClientChannel ch(fd, remote, deadline, cancel_fd);
  // With a token, Hello carries our nonce, the server challenges with its
  // own, we prove first, and the server's HelloAck must carry its proof
  // before anything of it is used.
  const bool auth = !self.token.empty();
  std::string client_nonce, server_nonce;
  if (auth && !auth::MakeNonce(&client_nonce)) {
    ADXL_ERROR("Connect to '%s': no random bytes for the authentication nonce", remote.c_str());
    return FAILED;
  }
  wire::Hello hello{self.name, remote, self.node_id, auth ? wire::kHelloAuth : 0u, client_nonce,
                    self.heartbeat_ms, self.dead_after_ms};
  Status st = ch.Send(hello, 1, "handshake send");
  if (st != SUCCESS) return st;
  wire::Message msg;
  if ((st = ch.Read(&msg)) != SUCCESS) return st;
  if (auto *challenge = std::get_if<wire::AuthChallenge>(&msg.body)) {
    if (!auth || challenge->nonce.size() != auth::kNonceSize) {
      ADXL_ERROR("Connect to '%s': unexpected authentication challenge (%s); refused", remote.c_str(),
                 auth ? "malformed nonce" : "this engine has no adxl.AuthToken");
      return FAILED;
    }
    server_nonce = challenge->nonce;
    const std::string proof =
        auth::Proof(self.token, auth::Role::kClient, self.name, remote, client_nonce, server_nonce);
    if (proof.empty()) {
      ADXL_ERROR("Connect to '%s': computing the authentication proof failed (libcrypto)", remote.c_str());
      return FAILED;
    }
    if ((st = ch.Send(wire::AuthResponse{proof}, 2, "authentication send")) != SUCCESS) return st;
    if ((st = ch.Read(&msg)) != SUCCESS) return st;
  }
  auto *ack = std::get_if<wire::HelloAck>(&msg.body);
  if (ack == nullptr) {
    ADXL_ERROR("Connect to '%s': bad handshake answer: %s, not a HelloAck", remote.c_str(),
               wire::TypeName(wire::TypeOf(msg.body)));
    return FAILED;
  }
  if (ack->status == FAILED) {
    ADXL_ERROR("Connect to '%s': refused by the peer's access control: adxl.AuthToken %s", remote.c_str(),
               auth ? "differs, or the peer has none" : "is required by the peer and this engine has none");
    return FAILED;
  }
  if (ack->status == RESOURCE_EXHAUSTED) {
    ADXL_ERROR("Connect to '%s': refused by the peer: it has as many peers linked as it accepts "
               "(its adxl.MaxInboundPeers); try again once one disconnects", remote.c_str());
    return RESOURCE_EXHAUSTED;
  }
  if (ack->status != SUCCESS) {
    ADXL_ERROR("Connect to '%s': the engine listening there has another name (its Initialize was not given '%s')",
               remote.c_str(), remote.c_str());
    return FAILED;
  }
  if (auth) {
    // Mutual: the server must prove it knows the token too, before any of
    // its answer (regions, transport address) is used.
    const std::string expected =
        server_nonce.empty()
            ? std::string()
            : auth::Proof(self.token, auth::Role::kServer, self.name, remote, client_nonce, server_nonce);
    if (!auth::ProofMatches(expected, ack->proof)) {
      ADXL_ERROR("Connect to '%s': the peer did not prove it has this engine's adxl.AuthToken (%s); refused",
                 remote.c_str(), server_nonce.empty() ? "it sent no challenge" : "wrong proof");
      return FAILED;
    }
  }
  *ack_out = std::move(*ack);
  return SUCCESS;
}

HandshakeServer::HandshakeServer(HandshakeIdentity self, std::string transport_address)
    : self_(std::move(self)), transport_address_(std::move(transport_address)) {}

wire::HelloAck HandshakeServer::Answer(std::string proof) const {
  wire::HelloAck ack;
  ack.status = SUCCESS;
  ack.node_id = self_.node_id;
  ack.transport_address = transport_address_;
  ack.proof = std::move(proof);
  return ack;
}

// A refusal by access control: status FAILED and nothing else (no node, no
// transport address, no regions).
HandshakeServer::Step HandshakeServer::Refuse(ControlConn &conn, uint64_t seq, Clock::time_point send_deadline) {
  wire::HelloAck ack;
  ack.status = FAILED;
  conn.Send(ack, seq, send_deadline);
  conn.Close();
  return Step::kRefused;
}

HandshakeServer::Step HandshakeServer::OnMessage(ControlConn &conn, const wire::Message &msg,
                                                 Clock::time_point send_deadline, Admitted *admitted) {
  const std::string &token = self_.token;
  ControlConn::PendingAuth &pending = conn.pending_auth;
  if (pending.active) {
    auto *resp = std::get_if<wire::AuthResponse>(&msg.body);
    if (resp == nullptr) {
      ADXL_ERROR("control connection from %s ('%s'): %s instead of the authentication response; closing it",
                 conn.desc().c_str(), pending.from.c_str(), wire::TypeName(wire::TypeOf(msg.body)));
      conn.Close();
      return Step::kRefused;
    }
    const std::string expected = auth::Proof(token, auth::Role::kClient, pending.from, pending.to,
                                             pending.client_nonce, pending.server_nonce);
    if (!auth::ProofMatches(expected, resp->proof)) {
      ADXL_ERROR("'%s' (%s) refused: authentication failed (its adxl.AuthToken differs from this engine's)",
                 pending.from.c_str(), conn.desc().c_str());
      return Refuse(conn, msg.seq, send_deadline);
    }
    admitted->seq = msg.seq;
    admitted->from = pending.from;
    admitted->heartbeat_ms = pending.heartbeat_ms;
    admitted->dead_after_ms = pending.dead_after_ms;
    admitted->proof = auth::Proof(token, auth::Role::kServer, pending.from, pending.to, pending.client_nonce,
                                  pending.server_nonce);
    pending = ControlConn::PendingAuth{};
    return Step::kAdmitted;
  }
  auto *hello = std::get_if<wire::Hello>(&msg.body);
  if (hello == nullptr) {
    ADXL_ERROR("control connection from %s: first message is %s, not Hello; closing it", conn.desc().c_str(),
               wire::TypeName(wire::TypeOf(msg.body)));
    conn.Close();
    return Step::kRefused;
  }
  const bool client_auth = (hello->flags & wire::kHelloAuth) != 0;
  if (!token.empty() && !client_auth) {
    ADXL_ERROR("'%s' (%s) refused: this engine requires adxl.AuthToken and the peer has none",
               hello->from_engine.c_str(), conn.desc().c_str());
    return Refuse(conn, msg.seq, send_deadline);
  }
  if (token.empty() && client_auth) {
    ADXL_ERROR("'%s' (%s) refused: it authenticates with adxl.AuthToken and this engine has none",
               hello->from_engine.c_str(), conn.desc().c_str());
    return Refuse(conn, msg.seq, send_deadline);
  }
  if (hello->to_engine != self_.name) {
    ADXL_WARN("'%s' tried to connect to '%s', but this engine is '%s'; refused", hello->from_engine.c_str(),
              hello->to_engine.c_str(), self_.name.c_str());
    wire::HelloAck ack;
    ack.status = PARAM_INVALID;
    if (token.empty()) {  // with access control, nothing about this engine before authentication
      ack.node_id = self_.node_id;
      ack.transport_address = transport_address_;
    }
    conn.Send(ack, msg.seq, send_deadline);
    conn.Close();
    return Step::kRefused;
  }
  if (token.empty()) {
    admitted->seq = msg.seq;
    admitted->from = hello->from_engine;
    admitted->heartbeat_ms = hello->heartbeat_ms;
    admitted->dead_after_ms = hello->dead_after_ms;
    admitted->proof.clear();
    return Step::kAdmitted;
  }
  std::string server_nonce;
  if (hello->nonce.size() != auth::kNonceSize || !auth::MakeNonce(&server_nonce)) {
    ADXL_ERROR("'%s' (%s) refused: %s", hello->from_engine.c_str(), conn.desc().c_str(),
               hello->nonce.size() != auth::kNonceSize ? "malformed authentication nonce"
                                                       : "no random bytes for the authentication nonce");
    return Refuse(conn, msg.seq, send_deadline);
  }
  pending.active = true;
  pending.from = hello->from_engine;
  pending.heartbeat_ms = hello->heartbeat_ms;
  pending.dead_after_ms = hello->dead_after_ms;
  pending.to = hello->to_engine;
  pending.client_nonce = hello->nonce;
  pending.server_nonce = server_nonce;
  if (!conn.Send(wire::AuthChallenge{server_nonce}, msg.seq, send_deadline)) {
    conn.Close();
    return Step::kRefused;
  }
  return Step::kWaiting;
}

}  // namespace adxl
