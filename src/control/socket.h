// TCP helpers for the control channel: listen, connect and
// whole-buffer send/receive with deadlines.  Sockets are non-blocking;
// the helpers poll, so no call here waits past its deadline.
//
// Cancellation: the helpers that wait take an optional `cancel_fd` (-1:
// none), polled beside the socket; once it is readable (an eventfd that
// was written, never read) the wait ends at once with kCancelled.  So one
// write ends every wait of, e.g., a Connect's handshake when Finalize
// comes, without closing a socket that another thread is using (its
// number could be reused) and without a lock around the waits.
#ifndef ADXL_SRC_CONTROL_SOCKET_H_
#define ADXL_SRC_CONTROL_SOCKET_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/fd.h"

namespace adxl {

using Clock = std::chrono::steady_clock;

// kCancelled: `cancel_fd` became readable before the operation completed.
enum class NetResult { kOk, kRefused, kTimeout, kError, kCancelled };

// Listens on host:port (numeric).  On failure returns an invalid Fd and *why.
Fd ListenTcp(const std::string &host, bool ipv6, uint16_t port, std::string *why);
// Connects with a deadline.
NetResult ConnectTcp(const std::string &host, bool ipv6, uint16_t port, Clock::time_point deadline, Fd *out,
                     std::string *why, int cancel_fd = -1);
// Sends all of [data, data+len) before the deadline.
NetResult SendAll(int fd, const void *data, size_t len, Clock::time_point deadline, int cancel_fd = -1);
// Receives exactly len bytes before the deadline; kError also on EOF.
NetResult RecvExact(int fd, void *data, size_t len, Clock::time_point deadline, int cancel_fd = -1);

}  // namespace adxl

#endif  // ADXL_SRC_CONTROL_SOCKET_H_
