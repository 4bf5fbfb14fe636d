// The handshake (src/control/handshake.h), both sides over a socketpair: no
// engine, no transport, no control loop.  The server side is driven here the
// way the control thread drives it: one decoded frame at a time.
#include "control/handshake.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <thread>

#include "control/auth.h"
#include "control/socket.h"
#include "time_scale.h"

namespace adxl {
namespace {

using std::chrono::milliseconds;

struct SocketPair {
  SocketPair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
    client = Fd(fds[0]);
    server = Fd(fds[1]);
  }
  Fd client, server;
};

// Reads one frame from `fd`; false on EOF, error or timeout.
bool ReadFrame(int fd, wire::Message *msg, milliseconds within = milliseconds(2000)) {
  const Clock::time_point deadline = Clock::now() + within;
  std::string frame(wire::kHeaderSize, '\0');
  if (RecvExact(fd, frame.data(), frame.size(), deadline) != NetResult::kOk) return false;
  uint32_t len = 0;
  memcpy(&len, frame.data() + 8, sizeof(len));
  if (len > wire::kMaxPayload) return false;
  frame.resize(wire::kHeaderSize + len);
  if (RecvExact(fd, frame.data() + wire::kHeaderSize, len, deadline) != NetResult::kOk) return false;
  wire::FrameReader reader;
  reader.Feed(frame.data(), frame.size());
  std::string why;
  return reader.Next(msg, &why) == wire::FrameReader::Result::kMessage;
}

bool WriteFrame(int fd, const wire::Body &body, uint64_t seq) {
  std::string frame;
  return wire::Encode(wire::Message{seq, body}, &frame) &&
         SendAll(fd, frame.data(), frame.size(), Clock::now() + milliseconds(2000)) == NetResult::kOk;
}

// The server side as the control thread runs it; answers an admitted client
// with a HelloAck carrying one region.  Returns the last step.
HandshakeServer::Step Serve(HandshakeServer &hs, ControlConn &conn, HandshakeServer::Admitted *admitted) {
  for (int i = 0; i < 4; ++i) {
    wire::Message msg;
    if (!ReadFrame(conn.fd(), &msg)) return HandshakeServer::Step::kRefused;
    const auto step = hs.OnMessage(conn, msg, Clock::now() + milliseconds(500), admitted);
    if (step == HandshakeServer::Step::kAdmitted) {
      wire::HelloAck ack = hs.Answer(admitted->proof);
      ack.regions.push_back(wire::Region{7, 0x1000, 0x2000, 1, "key"});
      EXPECT_TRUE(conn.Send(ack, admitted->seq, Clock::now() + milliseconds(500)));
      return step;
    }
    if (step == HandshakeServer::Step::kRefused) return step;
  }
  return HandshakeServer::Step::kWaiting;
}

struct Outcome {
  Status client = FAILED;
  wire::HelloAck ack;
  HandshakeServer::Step server = HandshakeServer::Step::kWaiting;
  HandshakeServer::Admitted admitted;
};

Outcome Handshake(const std::string &client_token, const std::string &server_token,
            const std::string &target = "10.0.0.2:5000") {
  SocketPair sp;
  Outcome out;
  HandshakeServer hs(HandshakeIdentity{"10.0.0.2:5000", "node-b", server_token}, "transport-address-b");
  auto conn = std::make_shared<ControlConn>(std::move(sp.server), ControlConn::Role::kServer, "test client");
  std::thread server([&] { out.server = Serve(hs, *conn, &out.admitted); });
  out.client = RunClientHandshake(sp.client.get(), HandshakeIdentity{"10.0.0.1:4000", "node-a", client_token},
                                  target, Clock::now() + milliseconds(2000), &out.ack);
  server.join();
  return out;
}

TEST(HandshakeTest, WithoutTokensTheClientIsAdmittedAndLearnsThePeer) {
  const Outcome o = Handshake("", "");
  ASSERT_EQ(o.client, SUCCESS);
  EXPECT_EQ(o.server, HandshakeServer::Step::kAdmitted);
  EXPECT_EQ(o.admitted.from, "10.0.0.1:4000");
  EXPECT_EQ(o.admitted.seq, 1u);
  EXPECT_TRUE(o.admitted.proof.empty());
  EXPECT_EQ(o.ack.node_id, "node-b");
  EXPECT_EQ(o.ack.transport_address, "transport-address-b");
  ASSERT_EQ(o.ack.regions.size(), 1u);
  EXPECT_EQ(o.ack.regions[0].id, 7u);
}

TEST(HandshakeTest, SameTokenAuthenticatesBothWays) {
  const Outcome o = Handshake("secret", "secret");
  ASSERT_EQ(o.client, SUCCESS);
  EXPECT_EQ(o.server, HandshakeServer::Step::kAdmitted);
  EXPECT_EQ(o.admitted.seq, 2u);  // the answer follows the AuthResponse
  EXPECT_EQ(o.ack.proof.size(), auth::kProofSize);
  EXPECT_EQ(o.ack.regions.size(), 1u);
}

TEST(HandshakeTest, DifferentTokensAreRefusedOnBothSides) {
  const Outcome o = Handshake("secret", "other");
  EXPECT_EQ(o.client, FAILED);
  EXPECT_EQ(o.server, HandshakeServer::Step::kRefused);
}

TEST(HandshakeTest, ATokenOnOneSideOnlyIsRefused) {
  Outcome o = Handshake("secret", "");
  EXPECT_EQ(o.client, FAILED);
  EXPECT_EQ(o.server, HandshakeServer::Step::kRefused);
  o = Handshake("", "secret");
  EXPECT_EQ(o.client, FAILED);
  EXPECT_EQ(o.server, HandshakeServer::Step::kRefused);
}

TEST(HandshakeTest, AClientThatNamesAnotherEngineIsRefused) {
  const Outcome o = Handshake("", "", "10.0.0.2:5001");
  EXPECT_EQ(o.client, FAILED);
  EXPECT_EQ(o.server, HandshakeServer::Step::kRefused);
}

TEST(HandshakeTest, AServerThatNeverAnswersTimesOutOnTheClientsDeadline) {
  SocketPair sp;  // nobody serves sp.server
  wire::HelloAck ack;
  const auto t0 = Clock::now();
  const Status st = RunClientHandshake(sp.client.get(), HandshakeIdentity{"10.0.0.1:4000", "node-a", ""},
                                       "10.0.0.2:5000", t0 + milliseconds(200), &ack);
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
  EXPECT_EQ(st, TIMEOUT);
  EXPECT_GE(took, 190);
  EXPECT_LE(took, 200 + adxl_test::ScaledMs(100));
}

// Finalize ends a Connect in its handshake (Connector::Stop writes the
// cancel eventfd): the client's wait for a server that never answers ends
// at once with FAILED, not at its 20 s deadline with TIMEOUT.
TEST(HandshakeTest, ACancelledHandshakeEndsAtOnceFailed) {
  SocketPair sp;  // nobody serves sp.server
  const int cancel = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(cancel, 0);
  wire::HelloAck ack;
  const auto t0 = Clock::now();
  std::thread stop([&] {
    std::this_thread::sleep_for(milliseconds(100));
    const uint64_t one = 1;
    EXPECT_EQ(write(cancel, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  });
  const Status st = RunClientHandshake(sp.client.get(), HandshakeIdentity{"10.0.0.1:4000", "node-a", ""},
                                       "10.0.0.2:5000", t0 + milliseconds(20000), &ack, cancel);
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
  stop.join();
  EXPECT_EQ(st, FAILED);
  EXPECT_LE(took, 100 + adxl_test::ScaledMs(500));
  // Once written, every later wait on it ends at once too.
  EXPECT_EQ(RunClientHandshake(sp.client.get(), HandshakeIdentity{"10.0.0.1:4000", "node-a", ""}, "10.0.0.2:5000",
                               Clock::now() + milliseconds(20000), &ack, cancel),
            FAILED);
  EXPECT_LE(std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count(), 100 + adxl_test::ScaledMs(500));
  close(cancel);
}

TEST(HandshakeTest, AServerThatAnswersSomethingElseIsRefusedByTheClient) {
  SocketPair sp;
  std::thread server([&] {
    wire::Message hello;
    ASSERT_TRUE(ReadFrame(sp.server.get(), &hello));
    WriteFrame(sp.server.get(), wire::Pong{}, hello.seq);
  });
  wire::HelloAck ack;
  EXPECT_EQ(RunClientHandshake(sp.client.get(), HandshakeIdentity{"10.0.0.1:4000", "node-a", ""}, "10.0.0.2:5000",
                               Clock::now() + milliseconds(2000), &ack),
            FAILED);
  server.join();
}

TEST(HandshakeTest, AnAuthenticatingClientRefusesAServerThatSkipsTheChallenge) {
  // A server impersonating the peer without the token: it answers at once,
  // with no proof.  The client must not use that answer.
  SocketPair sp;
  std::thread server([&] {
    wire::Message hello;
    ASSERT_TRUE(ReadFrame(sp.server.get(), &hello));
    wire::HelloAck forged;
    forged.node_id = "node-x";
    forged.transport_address = "evil";
    forged.proof = std::string(auth::kProofSize, 'x');
    WriteFrame(sp.server.get(), forged, hello.seq);
  });
  wire::HelloAck ack;
  EXPECT_EQ(RunClientHandshake(sp.client.get(), HandshakeIdentity{"10.0.0.1:4000", "node-a", "secret"},
                               "10.0.0.2:5000", Clock::now() + milliseconds(2000), &ack),
            FAILED);
  EXPECT_TRUE(ack.transport_address.empty());  // nothing of the forged answer reached the caller
  server.join();
}

TEST(HandshakeTest, AServerRefusesAClientWhoseFirstMessageIsNotHello) {
  SocketPair sp;
  HandshakeServer hs(HandshakeIdentity{"10.0.0.2:5000", "node-b", ""}, "addr");
  ControlConn conn(std::move(sp.server), ControlConn::Role::kServer, "test client");
  HandshakeServer::Admitted admitted;
  EXPECT_EQ(hs.OnMessage(conn, wire::Message{1, wire::Ping{}}, Clock::now() + milliseconds(100), &admitted),
            HandshakeServer::Step::kRefused);
  EXPECT_TRUE(conn.closed());
}

TEST(HandshakeTest, AServerRefusesAnAuthResponseWithAWrongProof) {
  SocketPair sp;
  HandshakeServer hs(HandshakeIdentity{"10.0.0.2:5000", "node-b", "secret"}, "addr");
  ControlConn conn(std::move(sp.server), ControlConn::Role::kServer, "test client");
  std::string nonce;
  ASSERT_TRUE(auth::MakeNonce(&nonce));
  HandshakeServer::Admitted admitted;
  const auto deadline = Clock::now() + milliseconds(500);
  ASSERT_EQ(hs.OnMessage(conn, wire::Message{1, wire::Hello{"10.0.0.1:4000", "10.0.0.2:5000", "n", wire::kHelloAuth, nonce}},
                         deadline, &admitted),
            HandshakeServer::Step::kWaiting);
  wire::Message challenge;
  ASSERT_TRUE(ReadFrame(sp.client.get(), &challenge));
  ASSERT_TRUE(std::holds_alternative<wire::AuthChallenge>(challenge.body));
  EXPECT_EQ(hs.OnMessage(conn, wire::Message{2, wire::AuthResponse{std::string(auth::kProofSize, 'x')}}, deadline,
                         &admitted),
            HandshakeServer::Step::kRefused);
  wire::Message refusal;
  ASSERT_TRUE(ReadFrame(sp.client.get(), &refusal));
  const auto *ack = std::get_if<wire::HelloAck>(&refusal.body);
  ASSERT_NE(ack, nullptr);
  EXPECT_EQ(ack->status, FAILED);
  EXPECT_TRUE(ack->regions.empty());
  EXPECT_TRUE(ack->transport_address.empty());
}

}  // namespace
}  // namespace adxl
