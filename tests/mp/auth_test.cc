// Access control with a real peer process on loopback:
//   * adxl.AuthToken: peers without the same token are refused at the
//     handshake (FAILED, logged on both sides, no link, no region table),
//     with a mutual HMAC challenge-response, so that the token never crosses
//     the wire (checked on every byte through an in-process TCP relay);
//   * memory: a peer reaches only what was registered, and nothing after
//     DeregisterMem; guard pages (PROT_NONE) around a local registration are
//     never touched by a refused transfer.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "adxl/adxl_ext.h"
#include "mp_fixture.h"
#include "wire_frames.h"

using namespace adxl;
using namespace adxl_test;

// ------------------------------------------------------------ connect redirect
//
// An engine's name is its identity (docs/contract.md §2.3): a client must dial exactly the
// address the server was initialized with.  To put a relay between them the
// test redirects this process's connect() to one port onto the relay's port.
// Inert unless a redirect is armed (only AuthTest.TokenNeverCrossesTheWire
// arms one, for its own peer's port).
namespace {
std::atomic<uint16_t> g_redirect_from{0};
std::atomic<uint16_t> g_redirect_to{0};
using ConnectFn = int (*)(int, const sockaddr *, socklen_t);
ConnectFn RealConnect() {
  static ConnectFn fn = reinterpret_cast<ConnectFn>(dlsym(RTLD_NEXT, "connect"));
  return fn;
}
}  // namespace

extern "C" int connect(int fd, const sockaddr *addr, socklen_t len) {
  const uint16_t from = g_redirect_from.load();
  if (from != 0 && addr != nullptr && addr->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    sockaddr_in a;
    memcpy(&a, addr, sizeof(a));
    if (ntohs(a.sin_port) == from && a.sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
      a.sin_port = htons(g_redirect_to.load());
      return RealConnect()(fd, reinterpret_cast<const sockaddr *>(&a), sizeof(a));
    }
  }
  return RealConnect()(fd, addr, len);
}

namespace {

// A TCP relay on 127.0.0.1 that forwards every connection to `target_port`
// and records every byte in both directions.
class Relay {
 public:
  explicit Relay(uint16_t target_port) : target_(target_port) {
    lfd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd_, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0 || listen(lfd_, 16) != 0) return;
    socklen_t l = sizeof(a);
    getsockname(lfd_, reinterpret_cast<sockaddr *>(&a), &l);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~Relay() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    for (auto &p : pairs_) {
      close(p.first);
      close(p.second);
    }
    close(lfd_);
  }
  uint16_t port() const { return port_; }
  std::string Captured() {
    std::lock_guard<std::mutex> l(mu_);
    return captured_;
  }
  int connections() const { return connections_.load(); }

 private:
  void Run() {
    char buf[65536];
    while (!stop_.load()) {
      std::vector<pollfd> fds{{lfd_, POLLIN, 0}};
      for (auto &p : pairs_) {
        fds.push_back({p.first, POLLIN, 0});
        fds.push_back({p.second, POLLIN, 0});
      }
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;
      const size_t polled = pairs_.size();  // pairs accepted below are polled next round
      if (fds[0].revents & POLLIN) {
        int c = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) {
          int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          sockaddr_in a{};
          a.sin_family = AF_INET;
          a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
          a.sin_port = htons(target_);
          if (RealConnect()(s, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0) {
            int one = 1;
            setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            pairs_.push_back({c, s});
            connections_.fetch_add(1);
          } else {
            close(c);
            close(s);
          }
        }
      }
      std::vector<size_t> dead;
      for (size_t i = 0; i < polled; ++i) {
        for (int dir = 0; dir < 2; ++dir) {
          const pollfd &pf = fds[1 + 2 * i + dir];
          if (!(pf.revents & (POLLIN | POLLHUP | POLLERR))) continue;
          const int from = dir == 0 ? pairs_[i].first : pairs_[i].second;
          const int to = dir == 0 ? pairs_[i].second : pairs_[i].first;
          ssize_t n = recv(from, buf, sizeof(buf), 0);
          if (n <= 0) {
            dead.push_back(i);
            break;
          }
          {
            std::lock_guard<std::mutex> l(mu_);
            captured_.append(buf, static_cast<size_t>(n));
          }
          for (ssize_t off = 0; off < n;) {
            ssize_t w = send(to, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
            if (w <= 0) break;
            off += w;
          }
        }
      }
      for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
        close(pairs_[*it].first);
        close(pairs_[*it].second);
        pairs_.erase(pairs_.begin() + static_cast<long>(*it));
      }
    }
  }

  uint16_t target_;
  uint16_t port_ = 0;
  int lfd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
  std::vector<std::pair<int, int>> pairs_;  // relay thread only
  std::mutex mu_;
  std::string captured_;
};

// Everything this process writes to stderr (the engine's log) while alive.
class StderrCapture {
 public:
  StderrCapture() {
    char tmpl[] = "/tmp/adxl_auth_log_XXXXXX";
    fd_ = mkstemp(tmpl);
    path_ = tmpl;
    fflush(stderr);
    saved_ = dup(2);
    dup2(fd_, 2);
  }
  ~StderrCapture() {
    Restore();
    close(fd_);
    unlink(path_.c_str());
  }
  std::string Text() {
    Restore();
    std::ifstream f(path_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

 private:
  void Restore() {
    if (saved_ >= 0) {
      fflush(stderr);
      dup2(saved_, 2);
      close(saved_);
      saved_ = -1;
    }
  }
  int fd_ = -1, saved_ = -1;
  std::string path_;
};

std::string ReadFile(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string RandomToken() {
  std::random_device rd;
  std::ostringstream o;
  o << "tok-" << std::hex << rd() << rd() << rd();
  return o.str();
}

// The peer's log is needed (refusals are logged on both sides): its stderr
// goes to a file.
class AuthTest : public ::testing::Test {
 protected:
  void TearDown() override {
    peer_.reset();
    if (!peer_log_.empty()) unlink(peer_log_.c_str());
  }
  // peer_token empty: the peer has no adxl.AuthToken; via_env: it gets it
  // from ADXL_AUTH_TOKEN instead of the option.
  void StartPeer(const std::string &peer_token, bool via_env = false) {
    char tmpl[] = "/tmp/adxl_auth_peer_XXXXXX";
    int fd = mkstemp(tmpl);
    close(fd);
    peer_log_ = tmpl;
    std::vector<std::string> env = {"ADXL_LOG_LEVEL=warn", "ADXL_AUTH_TOKEN="};
    if (via_env) env.back() = "ADXL_AUTH_TOKEN=" + peer_token;
    peer_ = std::make_unique<PeerProcess>(env, std::vector<std::string>{"sh", "-c", "exec \"$0\" 2>>" + peer_log_});
    port_ = FreePort();
    peer_name_ = LoopbackName(port_);
    std::string init = "init " + peer_name_ + " adxl.HeartbeatMs=200";
    if (!peer_token.empty() && !via_env) init += " adxl.AuthToken=" + peer_token;
    ASSERT_EQ(peer_->Command(init), "ok");
    auto a = peer_->Ok("alloc " + std::to_string(kSize));
    ASSERT_EQ(a.size(), 2u);
    remote_ = std::stoull(a[1]);
    ASSERT_EQ(peer_->Ok("reg 0").size(), 1u);
    ASSERT_EQ(peer_->Command("fill 0 5"), "ok");
  }
  void StartLocal(const std::string &token) {
    std::map<AscendString, AscendString> opts{{"adxl.HeartbeatMs", "200"}};
    if (!token.empty()) opts["adxl.AuthToken"] = token.c_str();
    ASSERT_EQ(engine_.Initialize("127.0.0.1", opts), SUCCESS);
    ASSERT_EQ(engine_.RegisterMem({local_.addr(), local_.size()}, MEM_HOST, local_handle_), SUCCESS);
  }
  Status Sync(TransferOp op, size_t len = 4096) {
    return engine_.TransferSync(peer_name_.c_str(), op, {{local_.addr(), remote_, len}}, 3000);
  }
  // A successful link moves and verifies bytes both ways.
  void ExpectWorkingLink() {
    ASSERT_EQ(Sync(READ, 1 << 16), SUCCESS);
    std::vector<uint8_t> want(1 << 16);
    FillPattern(want.data(), want.size(), 5);
    EXPECT_EQ(memcmp(local_.data(), want.data(), want.size()), 0);
    FillPattern(local_.data(), 1 << 16, 77);
    ASSERT_EQ(Sync(WRITE, 1 << 16), SUCCESS);
    auto h = peer_->Ok("hash 0 0 65536");
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(std::stoull(h[0]), Hash(local_.data(), 1 << 16));
  }
  // A refused Connect: FAILED, the client logged why, the peer logged the
  // refusal, and the client has no link (no region table leaked into one).
  void ExpectRefused(const char *client_says, const char *peer_says) {
    StderrCapture cap;
    EXPECT_EQ(engine_.Connect(peer_name_.c_str(), 3000), FAILED);
    const std::string mine = cap.Text();
    EXPECT_NE(mine.find(client_says), std::string::npos) << "client log:\n" << mine;
    // The peer logs from its control thread: give it a moment.
    std::string theirs;
    for (int i = 0; i < 100; ++i) {
      theirs = ReadFile(peer_log_);
      if (theirs.find(peer_says) != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_NE(theirs.find(peer_says), std::string::npos) << "peer log:\n" << theirs;
    EXPECT_EQ(Sync(READ), NOT_CONNECTED);
    EXPECT_EQ(Sync(WRITE), NOT_CONNECTED);
    ext::LinkInfo info;
    EXPECT_EQ(ext::GetLinkInfo(engine_, peer_name_.c_str(), info), NOT_CONNECTED);
    // The peer is unharmed: its buffer still holds its pattern.
    auto h = peer_->Ok("hash 0 0 65536");
    ASSERT_EQ(h.size(), 1u);
    std::vector<uint8_t> want(1 << 16);
    FillPattern(want.data(), want.size(), 5);
    EXPECT_EQ(std::stoull(h[0]), Hash(want.data(), want.size()));
  }

  static constexpr size_t kSize = 1u << 20;
  AlignedBuffer local_{kSize};
  AdxlEngine engine_;
  MemHandle local_handle_ = nullptr;
  std::unique_ptr<PeerProcess> peer_;
  std::string peer_log_;
  uint16_t port_ = 0;
  std::string peer_name_;
  uintptr_t remote_ = 0;
};

TEST_F(AuthTest, SameTokenConnectsAndTransfers) {
  const std::string t = RandomToken();
  StartPeer(t);
  StartLocal(t);
  ASSERT_EQ(engine_.Connect(peer_name_.c_str(), 5000), SUCCESS);
  ExpectWorkingLink();
}

TEST_F(AuthTest, SameTokenFromTheEnvironmentConnects) {
  const std::string t = RandomToken();
  StartPeer(t, /*via_env=*/true);
  StartLocal(t);
  ASSERT_EQ(engine_.Connect(peer_name_.c_str(), 5000), SUCCESS);
  ExpectWorkingLink();
}

TEST_F(AuthTest, NoTokenOnEitherSideStillConnects) {
  StartPeer("");
  StartLocal("");
  ASSERT_EQ(engine_.Connect(peer_name_.c_str(), 5000), SUCCESS);
  ExpectWorkingLink();
}

TEST_F(AuthTest, DifferentTokenIsRefusedAndLoggedOnBothSides) {
  StartPeer(RandomToken());
  StartLocal(RandomToken());
  ExpectRefused("refused by the peer's access control", "authentication failed");
  // Refused again, every time (no state left behind).
  ExpectRefused("refused by the peer's access control", "authentication failed");
}

TEST_F(AuthTest, ClientWithoutTokenIsRefused) {
  StartPeer(RandomToken());
  StartLocal("");
  ExpectRefused("is required by the peer and this engine has none", "requires adxl.AuthToken and the peer has none");
}

TEST_F(AuthTest, ServerWithoutTokenIsRefusedByAClientWithOne) {
  StartPeer("");
  StartLocal(RandomToken());
  ExpectRefused("refused by the peer's access control", "this engine has none");
}

TEST_F(AuthTest, TokenNeverCrossesTheWire) {
  const std::string t = RandomToken();
  StartPeer(t);
  StartLocal(t);
  Relay relay(port_);
  ASSERT_NE(relay.port(), 0);
  g_redirect_to.store(relay.port());
  g_redirect_from.store(port_);
  const Status st = engine_.Connect(peer_name_.c_str(), 5000);
  g_redirect_from.store(0);
  ASSERT_EQ(st, SUCCESS);
  ExpectWorkingLink();
  ASSERT_EQ(engine_.Disconnect(peer_name_.c_str(), 1000), SUCCESS);
  // A refused attempt through the relay too (the other side has another token).
  AdxlEngine other;
  ASSERT_EQ(other.Initialize("127.0.0.1", {{"adxl.AuthToken", (t + "x").c_str()}}), SUCCESS);
  g_redirect_from.store(port_);
  EXPECT_EQ(other.Connect(peer_name_.c_str(), 3000), FAILED);
  g_redirect_from.store(0);
  EXPECT_TRUE(WaitUntil([&] { return relay.connections() >= 2; }, ScaledMs(2000))) << relay.connections();
  // The relay copies on its own thread: wait until the capture stops growing.
  size_t captured = 0;
  WaitUntil(
      [&] {
        const size_t before = captured;
        captured = relay.Captured().size();
        return captured == before && captured > 0;
      },
      2000, 20);
  const std::string wire = relay.Captured();
  // The capture is real: it holds the control channel's frames and names.
  EXPECT_NE(wire.find("ADXL"), std::string::npos);
  EXPECT_NE(wire.find(peer_name_), std::string::npos);
  EXPECT_GT(wire.size(), 200u);
  // And the token is nowhere in it, nor either half of it.
  EXPECT_EQ(wire.find(t), std::string::npos);
  EXPECT_EQ(wire.find(t + "x"), std::string::npos);
  EXPECT_EQ(wire.find(t.substr(0, t.size() / 2)), std::string::npos);
  EXPECT_EQ(wire.find(t.substr(t.size() / 2)), std::string::npos);
}

// ----------------------------------------------------- raw, by hand on the wire

// Valid frames from the engine's encoder, headers read byte by byte
// (tests/support/wire_frames.h).
using adxl_test::wire_frames::Code;
using adxl_test::wire_frames::Encoded;
using adxl_test::wire_frames::GetLe;
using adxl_test::wire_frames::HeaderFields;
using adxl_test::wire_frames::ParseHeader;

// Reads one frame (header + payload) within 3 s; false on EOF or timeout.
bool ReadFrame(int fd, uint16_t *type, std::string *payload) {
  auto read_exact = [fd](size_t n, std::string *out) {
    out->clear();
    char buf[4096];
    while (out->size() < n) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 3000) <= 0) return false;
      ssize_t r = recv(fd, buf, std::min(sizeof(buf), n - out->size()), 0);
      if (r <= 0) return false;
      out->append(buf, static_cast<size_t>(r));
    }
    return true;
  };
  std::string h;
  if (!read_exact(wire::kHeaderSize, &h)) return false;
  const HeaderFields f = ParseHeader(h);
  *type = f.type;
  return read_exact(f.length, payload);
}

bool ClosedByServer(int fd) {
  char buf[256];
  for (int i = 0; i < 50; ++i) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      ssize_t r = recv(fd, buf, sizeof(buf), 0);
      if (r <= 0) return true;
    }
  }
  return false;
}

int Dial(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// HelloAck payload: status, node_id, transport_address, region count, ...
void ExpectBareRefusal(const std::string &p) {
  ASSERT_GE(p.size(), 16u);
  EXPECT_EQ(GetLe(p, 0, 4), static_cast<uint64_t>(FAILED));
  EXPECT_EQ(GetLe(p, 4, 4), 0u) << "node id given away";
  EXPECT_EQ(GetLe(p, 8, 4), 0u) << "transport address given away";
  EXPECT_EQ(GetLe(p, 12, 4), 0u) << "regions given away";
}

TEST_F(AuthTest, UnauthenticatedRawClientsGetNoRegionTable) {
  StartPeer(RandomToken());
  // A Hello without a token, and one that claims a token (kHelloAuth) with a nonce.
  const wire::Hello no_token{"127.0.0.1:1", peer_name_, "raw-node", 0, ""};
  const wire::Hello with_token{"127.0.0.1:1", peer_name_, "raw-node", wire::kHelloAuth, std::string(32, 'n')};
  {
    // No token: refused at once, nothing about the engine in the answer.
    int fd = Dial(port_);
    ASSERT_GE(fd, 0);
    std::string f = Encoded(1, no_token);
    ASSERT_EQ(send(fd, f.data(), f.size(), MSG_NOSIGNAL), static_cast<ssize_t>(f.size()));
    uint16_t type = 0;
    std::string p;
    ASSERT_TRUE(ReadFrame(fd, &type, &p));
    EXPECT_EQ(type, Code(wire::Type::kHelloAck));
    ExpectBareRefusal(p);
    EXPECT_TRUE(ClosedByServer(fd));
    close(fd);
  }
  {
    // Claims a token, answers the challenge with a guessed proof: refused.
    int fd = Dial(port_);
    ASSERT_GE(fd, 0);
    std::string f = Encoded(1, with_token);
    ASSERT_EQ(send(fd, f.data(), f.size(), MSG_NOSIGNAL), static_cast<ssize_t>(f.size()));
    uint16_t type = 0;
    std::string p;
    ASSERT_TRUE(ReadFrame(fd, &type, &p));
    ASSERT_EQ(type, Code(wire::Type::kAuthChallenge));
    EXPECT_EQ(GetLe(p, 0, 4), 32u);
    f = Encoded(2, wire::AuthResponse{std::string(32, '\0')});
    ASSERT_EQ(send(fd, f.data(), f.size(), MSG_NOSIGNAL), static_cast<ssize_t>(f.size()));
    ASSERT_TRUE(ReadFrame(fd, &type, &p));
    EXPECT_EQ(type, Code(wire::Type::kHelloAck));
    ExpectBareRefusal(p);
    EXPECT_TRUE(ClosedByServer(fd));
    close(fd);
  }
  {
    // Claims a token, then skips the proof: closed without an answer.
    int fd = Dial(port_);
    ASSERT_GE(fd, 0);
    std::string f = Encoded(1, with_token) + Encoded(0, wire::Ping{});  // Hello, then a Ping
    ASSERT_EQ(send(fd, f.data(), f.size(), MSG_NOSIGNAL), static_cast<ssize_t>(f.size()));
    uint16_t type = 0;
    std::string p;
    ASSERT_TRUE(ReadFrame(fd, &type, &p));
    ASSERT_EQ(type, Code(wire::Type::kAuthChallenge));
    EXPECT_FALSE(ReadFrame(fd, &type, &p)) << "answered with type " << type;
    close(fd);
  }
  // The peer still answers handshakes (and still refuses a client without the token).
  StartLocal("");
  EXPECT_EQ(engine_.Connect(peer_name_.c_str(), 3000), FAILED);
}

// ------------------------------------------------------------ memory access

class MemoryAccessTest : public PeerTest {
 protected:
  void SetUp() override {
    PeerTest::SetUp();
    ASSERT_EQ(Connect(), SUCCESS);
  }
  Status Sync(TransferOp op, const std::vector<TransferOpDesc> &d) {
    return engine_.TransferSync(peer_name_.c_str(), op, d, 3000);
  }
  Status Async(TransferOp op, const std::vector<TransferOpDesc> &d) {
    TransferReq req = nullptr;
    return engine_.TransferAsync(peer_name_.c_str(), op, d, TransferArgs{}, req);
  }
};

TEST_F(MemoryAccessTest, AfterThePeerDeregistersReadAndWriteAreParamInvalid) {
  ASSERT_EQ(Sync(READ, {{local_.addr(), remote_, 4096}}), SUCCESS);
  ASSERT_EQ(peer_->Command("dereg " + remote_handle_), "ok");  // returns once we stopped using it
  FillPattern(local_.data(), kLocalSize, 42);
  const uint64_t local_before = Hash(local_.data(), kLocalSize);
  for (size_t off : {size_t{0}, kRemoteSize / 2, kRemoteSize - 1}) {
    EXPECT_EQ(Sync(READ, {{local_.addr(), remote_ + off, 1}}), PARAM_INVALID) << off;
    EXPECT_EQ(Sync(WRITE, {{local_.addr(), remote_ + off, 1}}), PARAM_INVALID) << off;
    EXPECT_EQ(Async(READ, {{local_.addr(), remote_ + off, 1}}), PARAM_INVALID) << off;
    EXPECT_EQ(Async(WRITE, {{local_.addr(), remote_ + off, 1}}), PARAM_INVALID) << off;
  }
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), remote_, kRemoteSize}}), PARAM_INVALID);
  // Nothing moved either way.
  EXPECT_EQ(Hash(local_.data(), kLocalSize), local_before);
  EXPECT_EQ(RemoteHash(0, kRemoteSize), PatternHash(1, 0, kRemoteSize));
  // Registering it again makes it reachable again.
  auto r = peer_->Ok("reg 0");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(Sync(READ, {{local_.addr(), remote_, 4096}}), SUCCESS);
}

TEST_F(MemoryAccessTest, OnlyTheRegisteredPartOfAPeerBufferIsReachable) {
  // Peer buffer 1: three pages, only the middle one registered.
  auto a = peer_->Ok("alloc 12288");
  ASSERT_EQ(a.size(), 2u);
  const uintptr_t base = std::stoull(a[1]);
  ASSERT_EQ(peer_->Command("fill 1 9"), "ok");
  ASSERT_EQ(peer_->Ok("reg 1 4096 4096").size(), 1u);
  auto hash1 = [&](size_t off, size_t len) {
    auto w = peer_->Ok("hash 1 " + std::to_string(off) + " " + std::to_string(len));
    return w.empty() ? 0 : std::stoull(w[0]);
  };
  const uint64_t before_lo = hash1(0, 4096), before_hi = hash1(8192, 4096);
  FillPattern(local_.data(), 16384, 123);
  const std::vector<TransferOpDesc> bad = {
      {local_.addr(), base + 4096 - 1, 2},     // one byte below
      {local_.addr(), base + 8192 - 1, 2},     // one byte above
      {local_.addr(), base + 4096, 4097},      // one byte too long
      {local_.addr(), base, 12288},            // the whole buffer
      {local_.addr(), base + 8192, 1},         // the page above
      {local_.addr(), base + 4095, 1},         // the last byte below
  };
  for (const auto &d : bad) {
    EXPECT_EQ(Sync(WRITE, {d}), PARAM_INVALID) << d.remote_addr - base << "+" << d.len;
    EXPECT_EQ(Sync(READ, {d}), PARAM_INVALID) << d.remote_addr - base << "+" << d.len;
  }
  EXPECT_EQ(hash1(0, 4096), before_lo);
  EXPECT_EQ(hash1(8192, 4096), before_hi);
  // The registered page itself is reachable, both ways.
  EXPECT_EQ(Sync(WRITE, {{local_.addr(), base + 4096, 4096}}), SUCCESS);
  EXPECT_EQ(hash1(4096, 4096), Hash(local_.data(), 4096));
  EXPECT_EQ(hash1(0, 4096), before_lo);
  EXPECT_EQ(hash1(8192, 4096), before_hi);
}

TEST_F(MemoryAccessTest, GuardPagesAroundALocalRegistrationAreNeverTouched) {
  // [guard][page][guard]: a touch of a guard page kills this process.  The
  // engine has no buffer pool: with one, a local range outside registrations
  // is by contract (docs/contract.md §6.2) staged, i.e. copied by the engine, as memory the
  // caller vouches for; without one it is PARAM_INVALID before anything moves.
  AdxlEngine e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {{"adxl.BufferPool", "0:0"}, {"adxl.HeartbeatMs", kHeartbeatMs}}), SUCCESS);
  ASSERT_EQ(e.Connect(peer_name_.c_str(), 5000), SUCCESS);
  const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void *m = mmap(nullptr, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  uint8_t *p = static_cast<uint8_t *>(m);
  ASSERT_EQ(mprotect(p, pg, PROT_NONE), 0);
  ASSERT_EQ(mprotect(p + 2 * pg, pg, PROT_NONE), 0);
  const uintptr_t mid = reinterpret_cast<uintptr_t>(p + pg);
  MemHandle h = nullptr;
  ASSERT_EQ(e.RegisterMem({mid, pg}, MEM_HOST, h), SUCCESS);
  auto sync = [&](TransferOp op, TransferOpDesc d) { return e.TransferSync(peer_name_.c_str(), op, {d}, 3000); };
  auto async = [&](TransferOp op, TransferOpDesc d) {
    TransferReq req = nullptr;
    return e.TransferAsync(peer_name_.c_str(), op, {d}, TransferArgs{}, req);
  };
  const std::vector<TransferOpDesc> bad = {
      {mid - 1, remote_, 2},
      {mid + pg - 1, remote_, 2},
      {mid, remote_, pg + 1},
      {mid - pg, remote_, 3 * pg},
      {mid + pg, remote_, 1},
  };
  for (const auto &d : bad) {
    EXPECT_EQ(sync(READ, d), PARAM_INVALID);
    EXPECT_EQ(sync(WRITE, d), PARAM_INVALID);
    EXPECT_EQ(async(READ, d), PARAM_INVALID);
    EXPECT_EQ(async(WRITE, d), PARAM_INVALID);
  }
  EXPECT_EQ(sync(READ, {mid, remote_, pg}), SUCCESS);
  EXPECT_EQ(Hash(p + pg, pg), PatternHash(1, 0, pg));
  EXPECT_EQ(sync(WRITE, {mid, remote_ + pg, pg}), SUCCESS);
  EXPECT_EQ(RemoteHash(pg, pg), PatternHash(1, 0, pg));
  ASSERT_EQ(e.DeregisterMem(h), SUCCESS);
  // Deregistered locally: the page is out of reach too.
  EXPECT_EQ(sync(READ, {mid, remote_, pg}), PARAM_INVALID);
  EXPECT_EQ(async(WRITE, {mid, remote_, pg}), PARAM_INVALID);
  e.Finalize();
  munmap(m, 3 * pg);
}

}  // namespace
