// TCP helpers for the control channel: an owning fd, listen, connect and
// whole-buffer send/receive with deadlines.  Sockets are non-blocking;
// the helpers poll, so no call here waits past its deadline.
#ifndef ADXL_SRC_CONTROL_SOCKET_H_
#define ADXL_SRC_CONTROL_SOCKET_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace adxl {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd &&o) noexcept : fd_(o.Release()) {}
  Fd &operator=(Fd &&o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.Release();
    }
    return *this;
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void Reset();

 private:
  int fd_ = -1;
};

enum class NetResult { kOk, kRefused, kTimeout, kError };

// Listens on host:port (numeric).  On failure returns an invalid Fd and *why.
Fd ListenTcp(const std::string &host, bool ipv6, uint16_t port, std::string *why);
// Connects with a deadline.
NetResult ConnectTcp(const std::string &host, bool ipv6, uint16_t port, Clock::time_point deadline, Fd *out,
                     std::string *why);
// Sends all of [data, data+len) before the deadline.
NetResult SendAll(int fd, const void *data, size_t len, Clock::time_point deadline);
// Receives exactly len bytes before the deadline; kError also on EOF.
NetResult RecvExact(int fd, void *data, size_t len, Clock::time_point deadline);

}  // namespace adxl

#endif  // ADXL_SRC_CONTROL_SOCKET_H_
