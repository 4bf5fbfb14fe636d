#include "tcp_baseline.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "options.h"

namespace bench {
namespace {

constexpr uint32_t kMagic = 0x50435441;  // "ATCP" little-endian
constexpr uint32_t kOpWrite = 1;
constexpr uint32_t kOpRead = 2;
// Segment-list steps (--workload kv): `count` (offset, length) pairs follow
// the header, then the data of each segment in order.
constexpr uint32_t kOpWriteSegments = 3;
constexpr uint32_t kOpReadSegments = 4;
// Or'ed into a WRITE/READ op: the receiving side busy-polls (recv with
// MSG_DONTWAIT in a loop) instead of sleeping in recv (the limit rows).
constexpr uint32_t kFlagBusyPoll = 0x100;
// How long a busy-polled receive spins without a byte before it gives up.
constexpr double kBusyPollLimitS = 30;
constexpr uint64_t kMaxSegments = 1 << 20;  // per step; bounds what a confused peer makes us allocate
constexpr size_t kSegmentEntrySize = 16;
constexpr size_t kHeaderSize = 4 + 4 + 8 + 8 + 8;
constexpr char kStored = 'K';
constexpr char kRefused = 'E';

std::string Errno(const char *what) { return std::string("tcp baseline: ") + what + ": " + strerror(errno); }

struct StepHeader {
  uint32_t op = 0;
  bool busy_poll = false;
  uint64_t offset = 0;
  uint64_t block = 0;
  uint64_t count = 0;
};

void PutLe(uint8_t *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetLe(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

void Encode(const StepHeader &h, uint8_t *out) {
  PutLe(out, kMagic, 4);
  PutLe(out + 4, h.op | (h.busy_poll ? kFlagBusyPoll : 0), 4);
  PutLe(out + 8, h.offset, 8);
  PutLe(out + 16, h.block, 8);
  PutLe(out + 24, h.count, 8);
}

bool Decode(const uint8_t *in, StepHeader *h) {
  if (GetLe(in, 4) != kMagic) return false;
  const uint32_t op = static_cast<uint32_t>(GetLe(in + 4, 4));
  h->op = op & ~kFlagBusyPoll;
  h->busy_poll = (op & kFlagBusyPoll) != 0;
  if (h->busy_poll && h->op != kOpWrite && h->op != kOpRead) return false;
  h->offset = GetLe(in + 8, 8);
  h->block = GetLe(in + 16, 8);
  h->count = GetLe(in + 24, 8);
  return h->op == kOpWrite || h->op == kOpRead || h->op == kOpWriteSegments || h->op == kOpReadSegments;
}

bool IsSegmentOp(uint32_t op) { return op == kOpWriteSegments || op == kOpReadSegments; }

// Whether [offset, offset + block * count) lies in a buffer of `len` bytes.
bool Fits(const StepHeader &h, size_t len) {
  if (IsSegmentOp(h.op)) return h.count <= kMaxSegments;  // each segment is checked when it arrives
  if (h.count != 0 && h.block > len / h.count) return false;
  const uint64_t span = h.block * h.count;
  return h.offset <= len && span <= len - h.offset;
}

// All of [p, p+n), one send() call per loop turn.  A timeout (SO_SNDTIMEO)
// or a peer that went away is an error.
bool SendAll(int fd, const uint8_t *p, size_t n, std::string *why) {
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      *why = errno == EAGAIN || errno == EWOULDBLOCK ? "tcp baseline: send made no progress within the timeout"
                                                      : Errno("send");
      return false;
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Exactly n bytes into p: recv(MSG_WAITALL), again after a partial return
// (a signal or SO_RCVTIMEO).  EOF is an error; *eof (when given) tells it
// from the others.
bool RecvAll(int fd, uint8_t *p, size_t n, std::string *why, bool *eof = nullptr, bool busy = false) {
  if (eof != nullptr) *eof = false;
  Clock::time_point last = Clock::now();
  unsigned spins = 0;
  while (n > 0) {
    ssize_t k = recv(fd, p, n, busy ? MSG_DONTWAIT : MSG_WAITALL);
    if (k < 0 && errno == EINTR) continue;
    if (busy && k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // Busy-polled receive: spin, looking at the clock now and then.
      if ((++spins & 1023) == 0 && std::chrono::duration<double>(Clock::now() - last).count() > kBusyPollLimitS) {
        *why = "tcp baseline: busy-polled recv made no progress within the timeout";
        return false;
      }
      continue;
    }
    if (busy && k > 0) last = Clock::now();
    if (k == 0) {
      if (eof != nullptr) *eof = true;
      *why = "tcp baseline: the peer closed the stream";
      return false;
    }
    if (k < 0) {
      *why = errno == EAGAIN || errno == EWOULDBLOCK ? "tcp baseline: recv made no progress within the timeout"
                                                      : Errno("recv");
      return false;
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// SO_SNDBUF / SO_RCVBUF (the kernel doubles and caps them at
// net.core.wmem_max / rmem_max); set before connect/listen.
void SetBuffers(int fd, int bytes) {
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

void SetTimeouts(int fd, int timeout_ms) {
  timeval tv{};
  tv.tv_sec = timeout_ms / 1000;
  tv.tv_usec = (timeout_ms % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

std::string Endpoint(const sockaddr_storage &a) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (a.ss_family == AF_INET) {
    const auto *v4 = reinterpret_cast<const sockaddr_in *>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
    port = ntohs(v4->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto *v6 = reinterpret_cast<const sockaddr_in6 *>(&a);
  inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
  port = ntohs(v6->sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

int SocketInt(int fd, int level, int name) {
  int v = 0;
  socklen_t len = sizeof(v);
  return getsockopt(fd, level, name, &v, &len) == 0 ? v : -1;
}

// The autotuning limit, third field of /proc/sys/net/ipv4/tcp_{w,r}mem.
std::string AutotuneMax(const char *file) {
  std::ifstream f(std::string("/proc/sys/net/ipv4/") + file);
  size_t lo = 0, def = 0, max = 0;
  if (!(f >> lo >> def >> max)) return "?";
  return FormatSize(max);
}

std::string Size(int v) { return v < 0 ? "?" : FormatSize(static_cast<size_t>(v)); }

}  // namespace

// ---------------------------------------------------------------- TcpTarget

std::unique_ptr<TcpTarget> TcpTarget::Create(uint8_t *buf, size_t len, const std::string &host, std::string *why,
                                             int socket_buffer) {
  std::unique_ptr<TcpTarget> t(new TcpTarget());
  t->buf_ = buf;
  t->len_ = len;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo *list = nullptr;
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), "0", &hints, &list);
  if (rc != 0) {
    *why = "tcp baseline: cannot resolve '" + host + "': " + gai_strerror(rc);
    return nullptr;
  }
  std::string last = "no address";
  for (addrinfo *a = list; a != nullptr && !t->listener_.valid(); a = a->ai_next) {
    Fd fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (fd.valid() && socket_buffer > 0) SetBuffers(fd.get(), socket_buffer);  // accepted streams inherit them
    if (!fd.valid() || bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || listen(fd.get(), 1) != 0) {
      last = Errno("socket/bind/listen");
      continue;
    }
    t->listener_ = std::move(fd);
  }
  freeaddrinfo(list);
  if (!t->listener_.valid()) {
    *why = "tcp baseline: cannot listen on '" + host + "': " + last;
    return nullptr;
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (getsockname(t->listener_.get(), reinterpret_cast<sockaddr *>(&bound), &bound_len) != 0) {
    *why = Errno("getsockname");
    return nullptr;
  }
  t->port_ = bound.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in *>(&bound)->sin_port)
                                        : ntohs(reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port);
  t->wake_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!t->wake_.valid()) {
    *why = Errno("eventfd");
    return nullptr;
  }
  t->server_ = std::thread(&TcpTarget::Serve, t.get());
  return t;
}

TcpTarget::~TcpTarget() {
  stop_.store(true, std::memory_order_release);
  if (wake_.valid()) {
    uint64_t one = 1;
    ssize_t rc = write(wake_.get(), &one, sizeof(one));
    (void)rc;  // a full counter still wakes the thread
  }
  // A step in progress blocks in send/recv on the stream: end it.
  const int fd = stream_fd_.load(std::memory_order_acquire);
  if (fd >= 0) shutdown(fd, SHUT_RDWR);
  if (server_.joinable()) server_.join();
}

bool TcpTarget::WaitReadable(int fd) {
  pollfd p[2] = {{fd, POLLIN, 0}, {wake_.get(), POLLIN, 0}};
  while (!stop_.load(std::memory_order_acquire)) {
    int rc = poll(p, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || (p[1].revents & POLLIN) != 0) return false;
    if (p[0].revents != 0) return true;
  }
  return false;
}

void TcpTarget::Serve() {
  if (!WaitReadable(listener_.get())) return;
  Fd stream(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  listener_.Reset();  // one initiator per target
  if (!stream.valid()) {
    fprintf(stderr, "adxl-bench target: %s\n", Errno("accept").c_str());
    return;
  }
  NoDelay(stream.get());
  stream_fd_.store(stream.get(), std::memory_order_release);
  while (WaitReadable(stream.get()) && ServeStep(stream.get())) {
  }
  // The stream ends here; the fd closes only after the destructor can no
  // longer shut it down (it stays owned until the thread is joined).
  shutdown(stream.get(), SHUT_RDWR);
  while (!stop_.load(std::memory_order_acquire)) {
    pollfd p{wake_.get(), POLLIN, 0};
    poll(&p, 1, -1);
  }
}

bool TcpTarget::ServeStep(int fd) {
  uint8_t raw[kHeaderSize];
  std::string why;
  bool eof = false;
  if (!RecvAll(fd, raw, sizeof(raw), &why, &eof)) {
    // A closed stream between steps is the initiator's orderly end.
    if (!eof) fprintf(stderr, "adxl-bench target: %s\n", why.c_str());
    return false;
  }
  StepHeader h;
  if (!Decode(raw, &h) || !Fits(h, len_)) {
    fprintf(stderr, "adxl-bench target: tcp baseline: invalid step header (op %u, offset %llu, %llu x %llu bytes)\n",
            h.op, static_cast<unsigned long long>(h.offset), static_cast<unsigned long long>(h.count),
            static_cast<unsigned long long>(h.block));
    if (h.op == kOpWrite) {
      const char refused = kRefused;
      SendAll(fd, reinterpret_cast<const uint8_t *>(&refused), 1, &why);
    }
    return false;
  }
  if (IsSegmentOp(h.op)) return ServeSegments(fd, h.op == kOpWriteSegments, h.count);
  uint8_t *base = buf_ + h.offset;
  bool ok = true;
  for (uint64_t i = 0; ok && i < h.count; ++i) {
    ok = h.op == kOpWrite ? RecvAll(fd, base + i * h.block, h.block, &why, nullptr, h.busy_poll)
                          : SendAll(fd, base + i * h.block, h.block, &why);
  }
  if (ok && h.op == kOpWrite) {
    const char stored = kStored;
    ok = SendAll(fd, reinterpret_cast<const uint8_t *>(&stored), 1, &why);
  }
  if (!ok) fprintf(stderr, "adxl-bench target: %s\n", why.c_str());
  return ok;
}

bool TcpTarget::ServeSegments(int fd, bool write, uint64_t count) {
  std::string why;
  std::vector<uint8_t> table(count * kSegmentEntrySize);
  if (!RecvAll(fd, table.data(), table.size(), &why)) {
    fprintf(stderr, "adxl-bench target: %s\n", why.c_str());
    return false;
  }
  bool ok = true;
  for (uint64_t i = 0; ok && i < count; ++i) {
    const uint64_t offset = GetLe(&table[i * kSegmentEntrySize], 8);
    const uint64_t len = GetLe(&table[i * kSegmentEntrySize + 8], 8);
    if (offset > len_ || len > len_ - offset) {
      fprintf(stderr, "adxl-bench target: tcp baseline: segment %llu (offset %llu, %llu bytes) outside the buffer\n",
              static_cast<unsigned long long>(i), static_cast<unsigned long long>(offset),
              static_cast<unsigned long long>(len));
      if (write) {
        const char refused = kRefused;
        SendAll(fd, reinterpret_cast<const uint8_t *>(&refused), 1, &why);
      }
      return false;
    }
    ok = write ? RecvAll(fd, buf_ + offset, len, &why) : SendAll(fd, buf_ + offset, len, &why);
  }
  if (ok && write) {
    const char stored = kStored;
    ok = SendAll(fd, reinterpret_cast<const uint8_t *>(&stored), 1, &why);
  }
  if (!ok) fprintf(stderr, "adxl-bench target: %s\n", why.c_str());
  return ok;
}

// ---------------------------------------------------------------- TcpInitiator

std::unique_ptr<TcpInitiator> TcpInitiator::Create(const std::string &host, uint16_t port, uint64_t peer_base,
                                                   int timeout_ms, std::string *why, int socket_buffer) {
  std::unique_ptr<TcpInitiator> u(new TcpInitiator());
  u->peer_base_ = peer_base;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo *list = nullptr;
  const std::string service = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) {
    *why = "tcp baseline: cannot resolve '" + host + "': " + gai_strerror(rc);
    return nullptr;
  }
  std::string last = "no address";
  for (addrinfo *a = list; a != nullptr && !u->stream_.valid(); a = a->ai_next) {
    Fd fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd.valid()) {
      last = Errno("socket");
      continue;
    }
    SetTimeouts(fd.get(), timeout_ms);  // bounds connect() too (Linux)
    if (socket_buffer > 0) SetBuffers(fd.get(), socket_buffer);
    NoDelay(fd.get());
    if (connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      last = Errno("connect");
      continue;
    }
    u->stream_ = std::move(fd);
  }
  freeaddrinfo(list);
  if (!u->stream_.valid()) {
    *why = "tcp baseline: cannot connect to " + host + ":" + service + ": " + last;
    return nullptr;
  }
  const int fd = u->stream_.get();
  sockaddr_storage here{}, there{};
  socklen_t here_len = sizeof(here), there_len = sizeof(there);
  getsockname(fd, reinterpret_cast<sockaddr *>(&here), &here_len);
  getpeername(fd, reinterpret_cast<sockaddr *>(&there), &there_len);
  u->description_ = Endpoint(here) + " -> " + Endpoint(there) + ", TCP_NODELAY, " +
                    (socket_buffer > 0 ? "socket buffers set to " + FormatSize(static_cast<size_t>(socket_buffer)) +
                                             " (no autotuning; kernel"
                                       : std::string("kernel-default socket buffers (autotuned;")) +
                    " at connect SO_SNDBUF " + Size(SocketInt(fd, SOL_SOCKET, SO_SNDBUF)) +
                    ", SO_RCVBUF " + Size(SocketInt(fd, SOL_SOCKET, SO_RCVBUF)) + "; limits tcp_wmem " +
                    AutotuneMax("tcp_wmem") + ", tcp_rmem " + AutotuneMax("tcp_rmem") +
                    "), one send()/recv() per block";
  // An empty WRITE: the target serves this stream before any timed step.
  StepResult wireup;
  u->Step(BlockBatch{adxl::WRITE, 0, peer_base, 0, 0}, &wireup);
  if (wireup.errors > 0) {
    *why = "tcp baseline wire-up: " + wireup.first_error;
    return nullptr;
  }
  return u;
}

void TcpInitiator::Break(const std::string &why, StepResult *out) {
  out->Fail(why);
  broken_ = true;
  stream_.Reset();  // the target sees the end of the stream
}

void TcpInitiator::Step(const BlockBatch &b, StepResult *out, bool busy) {
  if (broken_) {
    out->Fail("tcp baseline stream unusable after an earlier failure");
    return;
  }
  if (b.remote < peer_base_) {
    out->Fail("tcp baseline: remote address below the target's buffer");
    return;
  }
  StepHeader h;
  h.op = b.op == adxl::WRITE ? kOpWrite : kOpRead;
  h.offset = b.remote - peer_base_;
  h.block = b.block;
  h.count = b.count;
  h.busy_poll = busy;
  uint8_t raw[kHeaderSize];
  Encode(h, raw);
  const int fd = stream_.get();
  std::string why;
  if (!SendAll(fd, raw, sizeof(raw), &why)) return Break(why, out);
  uint8_t *local = reinterpret_cast<uint8_t *>(b.local);
  for (size_t i = 0; i < b.count; ++i) {
    const bool ok = b.op == adxl::WRITE ? SendAll(fd, local + i * b.block, b.block, &why)
                                        : RecvAll(fd, local + i * b.block, b.block, &why, nullptr, busy);
    if (!ok) return Break(why, out);
  }
  if (b.op != adxl::WRITE) return;
  char answer = 0;
  if (!RecvAll(fd, reinterpret_cast<uint8_t *>(&answer), 1, &why)) return Break(why, out);
  if (answer != kStored) {
    Break(answer == kRefused ? "tcp baseline: the target refused the step (its stderr says why)"
                             : "tcp baseline: unexpected acknowledgement from the target",
          out);
  }
}

void TcpInitiator::SegmentStep(adxl::TransferOp op, uintptr_t local_base, const SegmentCall &call,
                               StepResult *out) {
  if (broken_) {
    out->Fail("tcp baseline stream unusable after an earlier failure");
    return;
  }
  StepHeader h;
  h.op = op == adxl::WRITE ? kOpWriteSegments : kOpReadSegments;
  h.count = call.size();
  std::vector<uint8_t> raw(kHeaderSize + call.size() * kSegmentEntrySize);
  Encode(h, raw.data());
  for (size_t i = 0; i < call.size(); ++i) {
    PutLe(&raw[kHeaderSize + i * kSegmentEntrySize], call[i].remote, 8);
    PutLe(&raw[kHeaderSize + i * kSegmentEntrySize + 8], call[i].len, 8);
  }
  const int fd = stream_.get();
  std::string why;
  if (!SendAll(fd, raw.data(), raw.size(), &why)) return Break(why, out);
  uint8_t *local = reinterpret_cast<uint8_t *>(local_base);
  for (const Segment &seg : call) {
    const bool ok = op == adxl::WRITE ? SendAll(fd, local + seg.local, seg.len, &why)
                                      : RecvAll(fd, local + seg.local, seg.len, &why);
    if (!ok) return Break(why, out);
  }
  if (op != adxl::WRITE) return;
  char answer = 0;
  if (!RecvAll(fd, reinterpret_cast<uint8_t *>(&answer), 1, &why)) return Break(why, out);
  if (answer != kStored) {
    Break(answer == kRefused ? "tcp baseline: the target refused a segment (its stderr says why)"
                             : "tcp baseline: unexpected acknowledgement from the target",
          out);
  }
}

StepResult TcpInitiator::RunKeys(adxl::TransferOp op, uintptr_t local_base, const KvPlan &plan) {
  StepResult out;
  const Clock::time_point t0 = Clock::now();
  for (const KeyTransfer &key : plan.keys) {
    const Clock::time_point k0 = Clock::now();
    for (const SegmentCall &call : key.calls) {
      SegmentStep(op, local_base, call, &out);
      if (out.errors > 0) break;
    }
    if (out.errors > 0) break;
    out.call_us.push_back(Micros(Clock::now() - k0));
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

StepResult TcpInitiator::RunStep(const BlockBatch &batch, bool busy_poll) {
  StepResult out;
  const Clock::time_point t0 = Clock::now();
  Step(batch, &out, busy_poll);
  const Clock::time_point t1 = Clock::now();
  out.seconds = std::chrono::duration<double>(t1 - t0).count();
  out.call_us.push_back(Micros(t1 - t0));
  return out;
}

StepResult TcpInitiator::RunLatency(const BlockBatch &one, int iters) {
  StepResult out;
  out.call_us.reserve(static_cast<size_t>(iters));
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < iters && out.errors == 0; ++i) {
    const Clock::time_point t0 = Clock::now();
    Step(one, &out);
    if (out.errors == 0) out.call_us.push_back(Micros(Clock::now() - t0));
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace bench
