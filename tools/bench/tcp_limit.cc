#include "tcp_limit.h"

#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "common/fd.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

namespace bench {

const std::vector<TcpVariant> &TcpLimitVariants() {
  static const std::vector<TcpVariant> kVariants = {
      {"tcp_x2", 2, false}, {"tcp_x4", 4, false}, {"tcp_x1_poll", 1, true}, {"tcp_x2_poll", 2, true}};
  return kVariants;
}

std::unique_ptr<TcpLimit> TcpLimit::Create(const std::string &host, const std::vector<uint16_t> &ports,
                                           uint64_t peer_base, int timeout_ms, std::string *why) {
  std::unique_ptr<TcpLimit> l(new TcpLimit());
  for (uint16_t port : ports) {
    auto s = TcpInitiator::Create(host, port, peer_base, timeout_ms, why, kLimitSocketBuffer);
    if (!s) return nullptr;
    l->streams_.push_back(std::move(s));
  }
  if (l->streams_.size() < static_cast<size_t>(kLimitStreams)) {
    *why = "tcp limit: the target offers " + std::to_string(ports.size()) + " streams, not " +
           std::to_string(kLimitStreams);
    return nullptr;
  }
  l->description_ = std::to_string(ports.size()) + " streams like this: " + l->streams_[0]->description();
  return l;
}

StepResult TcpLimit::RunStep(const BlockBatch &b, const TcpVariant &v) {
  const size_t n = static_cast<size_t>(v.streams);
  std::vector<StepResult> parts(n);
  std::vector<std::thread> threads;
  auto share = [&b, n](size_t j) {
    BlockBatch s = b;
    const size_t first = b.count * j / n, last = b.count * (j + 1) / n;
    s.local += first * b.block;
    s.remote += first * b.block;
    s.count = last - first;
    return s;
  };
  const Clock::time_point t0 = Clock::now();
  for (size_t j = 1; j < n; ++j) {
    threads.emplace_back([this, &parts, &share, &v, j] { parts[j] = streams_[j]->RunStep(share(j), v.busy_poll); });
  }
  parts[0] = streams_[0]->RunStep(share(0), v.busy_poll);
  for (std::thread &t : threads) t.join();
  const Clock::time_point t1 = Clock::now();
  StepResult out;
  out.seconds = std::chrono::duration<double>(t1 - t0).count();
  out.call_us.push_back(Micros(t1 - t0));
  for (const StepResult &p : parts) {
    if (p.errors > 0) out.Fail(p.first_error);
  }
  return out;
}

std::string ProbeZeroCopy(const std::string &host) {
  // A listener and a connected pair on `host`, inside this process.
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo *list = nullptr;
  if (getaddrinfo(host.c_str(), "0", &hints, &list) != 0 || list == nullptr) return "unsupported: cannot resolve";
  Fd listener(socket(list->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  const bool bound = listener.valid() && bind(listener.get(), list->ai_addr, list->ai_addrlen) == 0 &&
                     listen(listener.get(), 1) == 0 &&
                     getsockname(listener.get(), reinterpret_cast<sockaddr *>(&addr), &len) == 0;
  const int family = list->ai_family;
  freeaddrinfo(list);
  if (!bound) return std::string("unsupported: listen: ") + strerror(errno);
  Fd tx(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  if (!tx.valid() || setsockopt(tx.get(), SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) != 0) {
    return std::string("unsupported: SO_ZEROCOPY: ") + strerror(errno);
  }
  if (connect(tx.get(), reinterpret_cast<sockaddr *>(&addr), len) != 0) return "unsupported: connect failed";
  Fd rx(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!rx.valid()) return "unsupported: accept failed";
  std::vector<uint8_t> data(256 << 10, 0x5a), sink(data.size());
  if (send(tx.get(), data.data(), data.size(), MSG_ZEROCOPY) != static_cast<ssize_t>(data.size())) {
    return std::string("unsupported: send(MSG_ZEROCOPY): ") + strerror(errno);
  }
  size_t got = 0;
  while (got < sink.size()) {
    ssize_t k = recv(rx.get(), sink.data() + got, sink.size() - got, 0);
    if (k <= 0) return "unsupported: recv failed";
    got += static_cast<size_t>(k);
  }
  // The completion: on the error queue, SO_EE_CODE_ZEROCOPY_COPIED when the kernel copied.
  for (int tries = 0; tries < 100; ++tries) {
    char control[128];
    msghdr m{};
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    if (recvmsg(tx.get(), &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
      pollfd p{tx.get(), 0, 0};
      poll(&p, 1, 10);
      continue;
    }
    for (cmsghdr *c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
      const auto *e = reinterpret_cast<const sock_extended_err *>(CMSG_DATA(c));
      if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
      return (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0
                 ? "copied by the kernel on this path (no gain: not a variant)"
                 : "zero-copy on this path (not yet a variant)";
    }
  }
  return "unsupported: no completion";
}

}  // namespace bench
