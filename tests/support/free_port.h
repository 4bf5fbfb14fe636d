// Engine names for tests: a loopback port that was free a moment ago.
#ifndef ADXL_TESTS_SUPPORT_FREE_PORT_H_
#define ADXL_TESTS_SUPPORT_FREE_PORT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace adxl_test {

// A TCP port on 127.0.0.1 that was free a moment ago.
inline uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

inline std::string LoopbackName(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

// A TCP listener on 127.0.0.1 that never accepts: connects complete in the
// kernel's backlog (up to `backlog`) and a handshake then waits for an
// answer that never comes.  Closed with the object.
class SilentListener {
 public:
  explicit SilentListener(int backlog = 16) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0 && listen(fd_, backlog) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~SilentListener() {
    if (fd_ >= 0) close(fd_);
  }
  SilentListener(const SilentListener &) = delete;
  SilentListener &operator=(const SilentListener &) = delete;
  bool ok() const { return port_ != 0; }
  uint16_t port() const { return port_; }
  std::string name() const { return LoopbackName(port_); }

 private:
  int fd_;
  uint16_t port_ = 0;
};

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_FREE_PORT_H_
