// TCP helpers for the control channel: listen, connect and
// whole-buffer send/receive with deadlines.  Sockets are non-blocking;
// the helpers poll, so no call here waits past its deadline.
#ifndef ADXL_SRC_CONTROL_SOCKET_H_
#define ADXL_SRC_CONTROL_SOCKET_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/fd.h"

namespace adxl {

using Clock = std::chrono::steady_clock;

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
