#include "control/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace adxl {
namespace {

socklen_t MakeAddr(const std::string &host, bool ipv6, uint16_t port, sockaddr_storage *ss) {
  memset(ss, 0, sizeof(*ss));
  if (ipv6) {
    auto *a = reinterpret_cast<sockaddr_in6 *>(ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    if (inet_pton(AF_INET6, host.c_str(), &a->sin6_addr) != 1) return 0;
    return sizeof(*a);
  }
  auto *a = reinterpret_cast<sockaddr_in *>(ss);
  a->sin_family = AF_INET;
  a->sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1) return 0;
  return sizeof(*a);
}

int MsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > 1000000 ? 1000000 : static_cast<int>(left);
}

// Waits for `events` on fd, or for cancel_fd (when >= 0) to become
// readable, whichever comes first; cancellation wins a tie.
NetResult WaitFor(int fd, short events, Clock::time_point deadline, int cancel_fd) {
  while (true) {
    pollfd p[2] = {{fd, events, 0}, {cancel_fd, POLLIN, 0}};
    int ms = MsLeft(deadline);
    int rc = poll(p, cancel_fd >= 0 ? 2 : 1, ms);
    if (rc > 0 && cancel_fd >= 0 && p[1].revents != 0) return NetResult::kCancelled;
    if (rc > 0) return NetResult::kOk;
    if (rc == 0) return NetResult::kTimeout;
    if (errno != EINTR) return NetResult::kError;
  }
}

}  // namespace

Fd ListenTcp(const std::string &host, bool ipv6, uint16_t port, std::string *why) {
  sockaddr_storage ss;
  socklen_t len = MakeAddr(host, ipv6, port, &ss);
  Fd fd(socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid() || len == 0) {
    *why = std::string("socket: ") + strerror(errno);
    return Fd();
  }
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // The largest accept queue the system allows (the kernel caps SOMAXCONN
  // at net.core.somaxconn): when a cluster starts, hundreds of peers
  // connect at once, and a SYN dropped by a full queue is retried only
  // after 1 s, then 3 s, 7 s... (the storm of tools/storm measured it).
  if (bind(fd.get(), reinterpret_cast<sockaddr *>(&ss), len) != 0 || listen(fd.get(), SOMAXCONN) != 0) {
    *why = "cannot listen on " + host + ":" + std::to_string(port) + ": " + strerror(errno);
    return Fd();
  }
  return fd;
}

NetResult ConnectTcp(const std::string &host, bool ipv6, uint16_t port, Clock::time_point deadline, Fd *out,
                     std::string *why, int cancel_fd) {
  sockaddr_storage ss;
  socklen_t len = MakeAddr(host, ipv6, port, &ss);
  Fd fd(socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid() || len == 0) {
    *why = std::string("socket: ") + strerror(errno);
    return NetResult::kError;
  }
  int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd.get(), reinterpret_cast<sockaddr *>(&ss), len) != 0) {
    if (errno == ECONNREFUSED) {
      *why = "connection refused (nobody listens there)";
      return NetResult::kRefused;
    }
    if (errno != EINPROGRESS) {
      *why = std::string("connect: ") + strerror(errno);
      return NetResult::kError;
    }
    NetResult r = WaitFor(fd.get(), POLLOUT, deadline, cancel_fd);
    if (r == NetResult::kTimeout) {
      *why = "no answer before the deadline";
      return r;
    }
    if (r == NetResult::kCancelled) {
      *why = "cancelled";
      return r;
    }
    int err = 0;
    socklen_t elen = sizeof(err);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &elen);
    if (r != NetResult::kOk || err != 0) {
      *why = std::string("connect: ") + strerror(err != 0 ? err : errno);
      return err == ECONNREFUSED ? NetResult::kRefused : NetResult::kError;
    }
  }
  *out = std::move(fd);
  return NetResult::kOk;
}

NetResult SendAll(int fd, const void *data, size_t len, Clock::time_point deadline, int cancel_fd) {
  const char *p = static_cast<const char *>(data);
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      NetResult r = WaitFor(fd, POLLOUT, deadline, cancel_fd);
      if (r != NetResult::kOk) return r;
      continue;
    }
    return NetResult::kError;
  }
  return NetResult::kOk;
}

NetResult RecvExact(int fd, void *data, size_t len, Clock::time_point deadline, int cancel_fd) {
  char *p = static_cast<char *>(data);
  while (len > 0) {
    ssize_t n = recv(fd, p, len, 0);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return NetResult::kError;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      NetResult r = WaitFor(fd, POLLIN, deadline, cancel_fd);
      if (r != NetResult::kOk) return r;
      continue;
    }
    return NetResult::kError;
  }
  return NetResult::kOk;
}

}  // namespace adxl
