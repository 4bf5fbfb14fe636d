// WaitListening (listening_probe.h).
#include "listening_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <thread>

#include "common/fd.h"

namespace llm_datadist::internal {
namespace {

using Clock = std::chrono::steady_clock;

struct AddrInfoFree {
  void operator()(addrinfo *a) const { freeaddrinfo(a); }
};

// One nonblocking connect to `a`, waiting at most `wait_ms` for it.
bool Accepts(const addrinfo &a, int wait_ms) {
  const adxl::Fd fd(socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a.ai_protocol));
  if (!fd.valid()) return false;
  if (connect(fd.get(), a.ai_addr, a.ai_addrlen) == 0) return true;
  if (errno != EINPROGRESS) return false;
  pollfd p{fd.get(), POLLOUT, 0};
  if (poll(&p, 1, wait_ms) != 1) return false;
  int err = 0;
  socklen_t len = sizeof(err);
  return getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

}  // namespace

bool WaitListening(const std::string &engine, Clock::time_point deadline) {
  const size_t colon = engine.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = engine.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo *found = nullptr;
  if (getaddrinfo(host.c_str(), engine.c_str() + colon + 1, &hints, &found) != 0 || found == nullptr) return false;
  const std::unique_ptr<addrinfo, AddrInfoFree> list(found);
  while (Clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    // Every address the name resolves to, as a connecting client tries
    // them ("localhost": ::1, then 127.0.0.1).
    for (const addrinfo *a = list.get(); a != nullptr; a = a->ai_next) {
      if (Accepts(*a, static_cast<int>(std::clamp<long long>(left, 1, 500)))) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace llm_datadist::internal
