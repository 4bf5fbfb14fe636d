// ControlConn's outbound queue (src/control/control.h): no Send waits on a
// peer that does not read, frames leave whole and in order, the loop cuts a
// non-reader off by the frame deadline or the queued-bytes bound, and a
// connection without a loop writes its frame out itself until its deadline.
// Each test drives one end of a socketpair and reads (or does not read) the
// other end by hand.
#include "control/control.h"
#include "control/socket.h"
#include "time_scale.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace adxl {
namespace {

using std::chrono::milliseconds;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

class Handler : public ControlHandler {
 public:
  void OnMessage(const std::shared_ptr<ControlConn> &, wire::Message &) override {}
  void OnClosed(const std::shared_ptr<ControlConn> &) override { closed.fetch_add(1); }
  void OnTick() override {}
  std::atomic<int> closed{0};
};

// A connected pair: `conn` on one end (small send buffer), the raw other end
// `peer` (small receive buffer), so a peer that does not read fills up fast.
struct Pair {
  explicit Pair(ControlConn::Role role = ControlConn::Role::kClient) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    conn = std::make_shared<ControlConn>(Fd(sv[0]), role, "test");
    peer = Fd(sv[1]);
  }
  // Reads everything that arrives within ms (or until EOF).
  void Drain(int ms, wire::FrameReader *reader, bool *eof = nullptr) {
    const auto deadline = Clock::now() + milliseconds(ms);
    char buf[16384];
    while (Clock::now() < deadline) {
      pollfd p{peer.get(), POLLIN, 0};
      if (poll(&p, 1, 5) <= 0) continue;
      ssize_t n = recv(peer.get(), buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0) {
        if (eof != nullptr) *eof = true;
        return;
      }
      if (n > 0) reader->Feed(buf, static_cast<size_t>(n));
    }
  }
  std::shared_ptr<ControlConn> conn;
  Fd peer;
};

wire::Notify Big(size_t n, char c) { return wire::Notify{"n", std::string(n, c)}; }

class ControlQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(loop_.Start(Fd(), &handler_, 20, 3000, &why)) << why;
  }
  void TearDown() override { loop_.Stop(); }
  Handler handler_;
  ControlLoop loop_;
};

// The loop's connection never waits for a peer that does not read, and is
// closed once the frame being written is past its deadline.
TEST_F(ControlQueueTest, SendNeverBlocksAndOverdueQueueIsClosed) {
  Pair p;
  ASSERT_TRUE(loop_.Add(p.conn));
  const auto t0 = Clock::now();
  double worst = 0;
  for (int i = 0; i < 8; ++i) {
    const auto t = Clock::now();
    ASSERT_TRUE(p.conn->Send(Big(30000, 'a'), i + 1, Clock::now() + milliseconds(150)));
    worst = std::max(worst, MsSince(t));
  }
  EXPECT_LT(worst, 20) << "a Send waited for the peer";
  EXPECT_TRUE(p.conn->queued());
  while (!p.conn->closed() && MsSince(t0) < 2000) std::this_thread::sleep_for(milliseconds(2));
  EXPECT_TRUE(p.conn->closed()) << "a connection whose peer does not read was kept";
  EXPECT_GE(MsSince(t0), 140) << "closed before its frame's deadline";
  EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(1000)) << "closed long after the frame's deadline (only at a tick?)";
  EXPECT_FALSE(p.conn->Send(wire::Ping{}, 99, Clock::now() + milliseconds(50)));
}

// More than kMaxQueuedBehind bytes behind the frame being written closes the
// connection at once, whatever the deadlines.
TEST_F(ControlQueueTest, QueuedBytesAreBounded) {
  Pair p;
  ASSERT_TRUE(loop_.Add(p.conn));
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  const size_t frame = 60000;
  size_t sent = 0;
  bool refused = false;
  for (int i = 0; i < 100 && !refused; ++i) {
    refused = !p.conn->Send(Big(frame, 'b'), i + 1, deadline);
    if (!refused) sent += frame;
  }
  EXPECT_TRUE(refused);
  EXPECT_TRUE(p.conn->closed());
  EXPECT_GE(sent, ControlConn::kMaxQueuedBehind);
  EXPECT_LE(sent, ControlConn::kMaxQueuedBehind + 3 * frame);
}

// A frame of the largest metadata blob queued behind one being written is
// what a reading peer may have waiting, not a peer that does not read: the
// connection stays (at a 1 MiB bound it was closed at once).
TEST_F(ControlQueueTest, ALargestMetadataFrameBehindAnotherKeepsTheConnection) {
  Pair p;
  ASSERT_TRUE(loop_.Add(p.conn));
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  ASSERT_TRUE(p.conn->Send(Big(60000, 'x'), 1, deadline));  // the socket takes some; the rest is being written
  for (int i = 0; i < 40 && p.conn->queued(); ++i) {
    if (!p.conn->Send(Big(60000, 'y'), 2 + i, deadline)) break;
  }
  ASSERT_TRUE(p.conn->queued()) << "the peer's socket took everything: nothing is being written";
  wire::MetadataUpdate update;
  update.entry.name = "kv";
  update.entry.version = 1;
  update.entry.blob.assign(wire::kMaxMetadataBlob, 'm');
  EXPECT_TRUE(p.conn->Send(update, 100, deadline));
  EXPECT_FALSE(p.conn->closed()) << "a frame a reading peer may have waiting cut the connection";
  // The peer reads: every frame arrives, the 1 MiB blob whole.
  wire::FrameReader reader;
  bool got_blob = false, eof = false;
  const auto t0 = Clock::now();
  while (!got_blob && !eof && MsSince(t0) < adxl_test::ScaledMs(5000)) {
    p.Drain(50, &reader, &eof);
    wire::Message m;
    std::string why;
    while (reader.Next(&m, &why) == wire::FrameReader::Result::kMessage) {
      if (const auto *u = std::get_if<wire::MetadataUpdate>(&m.body)) {
        got_blob = u->entry.blob.size() == wire::kMaxMetadataBlob;
      }
    }
  }
  EXPECT_TRUE(got_blob);
}

// Frames of many threads arrive whole and, per thread, in Send order, while
// the peer reads slowly; the handshake answer is first.
TEST_F(ControlQueueTest, FramesArriveWholeAndInOrder) {
  Pair p(ControlConn::Role::kServer);
  p.conn->set_hello_done();
  wire::HelloAck ack;
  ack.node_id = "answer";
  for (uint64_t i = 0; i < 3000; ++i) {  // ~270 KB: far more than the socket buffers take
    wire::Region r;
    r.id = i;
    r.addr = 4096 * i;
    r.len = 4096;
    r.rkey = std::string(60, 'k');
    ack.regions.push_back(r);
  }
  ASSERT_TRUE(p.conn->StartQueued(ack, 1, Clock::now() + std::chrono::seconds(10)));
  ASSERT_TRUE(loop_.Add(p.conn));
  ASSERT_TRUE(p.conn->queued());  // added without a handler run: the loop writes it on a wake-up
  // About 0.5 MB in all: under the bound on what may wait, however slowly
  // the reader below gets to run.
  constexpr int kThreads = 4, kPerThread = 200;
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const uint64_t seq = (static_cast<uint64_t>(t + 1) << 32) | static_cast<uint64_t>(i);
        EXPECT_TRUE(p.conn->Send(Big(100 + (i * 37) % 1000, static_cast<char>('a' + t)), seq,
                                 Clock::now() + std::chrono::seconds(10)));
      }
    });
  }
  wire::FrameReader reader;
  std::map<int, int> next;
  int frames = 0;
  bool first = true;
  const auto t0 = Clock::now();
  while (frames < kThreads * kPerThread + 1 && MsSince(t0) < 10000) {
    p.Drain(2, &reader);
    wire::Message m;
    std::string why;
    wire::FrameReader::Result r;
    while ((r = reader.Next(&m, &why)) == wire::FrameReader::Result::kMessage) {
      ++frames;
      if (first) {
        ASSERT_TRUE(std::holds_alternative<wire::HelloAck>(m.body)) << "the handshake answer did not go first";
        EXPECT_EQ(std::get<wire::HelloAck>(m.body).regions.size(), 3000u);
        first = false;
        continue;
      }
      const int t = static_cast<int>(m.seq >> 32) - 1;
      const int i = static_cast<int>(m.seq & 0xffffffffu);
      ASSERT_TRUE(t >= 0 && t < kThreads);
      EXPECT_EQ(i, next[t]) << "thread " << t << "'s frames out of order";
      next[t] = i + 1;
      const auto &n = std::get<wire::Notify>(m.body);
      EXPECT_EQ(n.msg, std::string(100 + (i * 37) % 1000, static_cast<char>('a' + t)));
    }
    ASSERT_NE(r, wire::FrameReader::Result::kError) << why;
  }
  for (auto &s : senders) s.join();
  EXPECT_EQ(frames, kThreads * kPerThread + 1);
  EXPECT_TRUE(p.conn->answer_sent());
  EXPECT_FALSE(p.conn->closed());
}

// Without a loop (a client's handshake) Send writes its frame out itself: it
// returns once a slow reader took it, or closes at the deadline.
// A loop that cannot start (out of descriptors) closes the listening
// socket it was given: the port of a failed Initialize is free again.
TEST(ControlLoopStart, AFailedStartLeavesThePortFree) {
  std::string why;
  Fd listen = ListenTcp("127.0.0.1", false, 0, &why);
  ASSERT_TRUE(listen.valid()) << why;
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(listen.get(), reinterpret_cast<sockaddr *>(&addr), &len), 0);
  const uint16_t port = ntohs(addr.sin_port);
  // Room for the epoll descriptor, none for the eventfd: a new descriptor
  // takes the lowest free number, and none at or above the limit is given.
  std::vector<int> free_fds;
  for (int fd = 0; fd < 4096 && free_fds.size() < 2; ++fd) {
    if (fcntl(fd, F_GETFD) == -1) free_fds.push_back(fd);
  }
  ASSERT_EQ(free_fds.size(), 2u);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(free_fds[1]);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  Handler handler;
  ControlLoop loop;
  const bool started = loop.Start(std::move(listen), &handler, 20, 1000, &why);
  setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_FALSE(started) << "the loop started with no descriptor to spare";
  Fd again = ListenTcp("127.0.0.1", false, port, &why);
  EXPECT_TRUE(again.valid()) << "port " << port << " still bound after the failed start: " << why;
}

TEST(ControlConnNoLoop, SendWritesItsFrameOutUntilItsDeadline) {
  {
    Pair p;
    std::atomic<bool> stop{false};
    wire::FrameReader reader;
    std::thread slow([&] {
      std::this_thread::sleep_for(milliseconds(30));
      while (!stop.load()) p.Drain(5, &reader);
    });
    ASSERT_TRUE(p.conn->Send(Big(50000, 'c'), 7, Clock::now() + std::chrono::seconds(5)));
    EXPECT_FALSE(p.conn->queued()) << "Send returned before its frame was written";
    stop.store(true);
    slow.join();
    EXPECT_FALSE(p.conn->closed());
  }
  {
    Pair p;
    const auto t0 = Clock::now();
    EXPECT_FALSE(p.conn->Send(Big(50000, 'd'), 8, Clock::now() + milliseconds(100)));
    EXPECT_GE(MsSince(t0), 95);
    EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(1000));
    EXPECT_TRUE(p.conn->closed());
  }
}

// A frame a connection's own thread could not write before the loop knew the
// connection goes out once it is added; a connection that outlives its loop
// is harmless.
TEST(ControlConnNoLoop, AddWritesWhatWasQueuedAndStopDetaches) {
  Handler handler;
  ControlLoop loop;
  std::string why;
  ASSERT_TRUE(loop.Start(Fd(), &handler, 20, 3000, &why)) << why;
  Pair p;
  ASSERT_TRUE(p.conn->Send(wire::Ping{}, 1, Clock::now() + milliseconds(100)));  // fits at once
  EXPECT_FALSE(p.conn->queued());
  std::atomic<bool> returned{false};
  std::thread client([&] {
    EXPECT_TRUE(p.conn->Send(Big(50000, 'e'), 2, Clock::now() + std::chrono::seconds(5)));
    returned.store(true);
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(returned.load()) << "nobody reads: a Send without a loop must wait for socket space";
  ASSERT_TRUE(loop.Add(p.conn));
  const auto t_add = Clock::now();
  while (!returned.load() && MsSince(t_add) < 3000) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_TRUE(returned.load());
  EXPECT_LT(MsSince(t_add), adxl_test::ScaledMs(500)) << "the Send did not leave its frame to the loop";
  client.join();
  wire::FrameReader reader;
  int frames = 0;
  const auto t0 = Clock::now();
  while (frames < 2 && MsSince(t0) < 5000) {
    p.Drain(5, &reader);
    wire::Message m;
    std::string w;
    while (reader.Next(&m, &w) == wire::FrameReader::Result::kMessage) ++frames;
  }
  EXPECT_EQ(frames, 2) << "the loop did not write what was queued before Add";
  loop.Stop();
  EXPECT_TRUE(p.conn->closed());
  EXPECT_FALSE(p.conn->Send(wire::Ping{}, 3, Clock::now() + milliseconds(10)));
}

}  // namespace
}  // namespace adxl
