// A raw TCP connection to an engine's control port (loopback), speaking
// whatever the test says: frames built with wire_frames.h, read back whole.
// Used by the hostile-input tests and by tests that must make a handshake no
// engine would (a Hello under another engine's name).
#ifndef ADXL_TESTS_SUPPORT_RAW_CONN_H_
#define ADXL_TESTS_SUPPORT_RAW_CONN_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>

#include "wire_frames.h"

namespace adxl_test {

// A raw TCP connection to the control port, speaking whatever the test says.
class RawConn {
 public:
  // rcvbuf > 0: a small receive buffer (a client that reads slowly fills up fast).
  explicit RawConn(uint16_t port, int rcvbuf = 0) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && rcvbuf > 0) setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
      close(fd_);
      fd_ = -1;
    }
    if (fd_ >= 0) {
      int one = 1;
      setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
  }
  ~RawConn() { Close(); }
  RawConn(const RawConn &) = delete;
  RawConn &operator=(const RawConn &) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  void ShutdownWrite() { shutdown(fd_, SHUT_WR); }

  // Sends everything (blocking); false when the server closed or reset.
  bool Send(const std::string &bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads one whole frame within timeout_ms.
  bool ReadFrame(int timeout_ms, uint16_t *type, uint64_t *seq, std::string *payload) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::string h;
    if (!ReadExact(wire_frames::kHeaderSize, deadline, &h)) return false;
    const wire_frames::HeaderFields f = wire_frames::ParseHeader(h);
    if (f.magic != wire_frames::kMagic || f.version != wire_frames::kVersion) return false;
    *type = f.type;
    *seq = f.seq;
    if (f.length > adxl::wire::kMaxPayload) return false;
    return ReadExact(f.length, deadline, payload);
  }

  // True when the server closes (EOF or reset) within timeout_ms; whatever it
  // sends before that is discarded.
  bool ClosedByServer(int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    char buf[4096];
    while (true) {
      const int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      if (left <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, left) <= 0) continue;
      ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0) return true;
      if (n < 0 && (errno == ECONNRESET || errno == EPIPE)) return true;
    }
  }

  // Non-blocking: has the server closed its end already?
  bool ClosedNow() {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR)) return true;
    char c;
    ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

 private:
  bool ReadExact(size_t len, std::chrono::steady_clock::time_point deadline, std::string *out) {
    out->clear();
    char buf[4096];
    while (out->size() < len) {
      const int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      if (left <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, left) <= 0) continue;
      ssize_t n = recv(fd_, buf, std::min(sizeof(buf), len - out->size()), MSG_DONTWAIT);
      if (n == 0) return false;
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
        return false;
      }
      out->append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  int fd_ = -1;
};

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_RAW_CONN_H_
