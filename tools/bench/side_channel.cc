#include "side_channel.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

namespace bench {
namespace {

constexpr size_t kMaxLine = 1 << 20;  // worker addresses and keys are a few KiB of hex

using Clock = std::chrono::steady_clock;

int MsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

std::string Errno(const char *what) { return std::string(what) + ": " + strerror(errno); }

// Resolves host:port for a stream socket; the caller frees the list.
bool Resolve(const std::string &host_port, bool passive, addrinfo **out, std::string *why) {
  std::string host;
  uint16_t port = 0;
  if (!SplitHostPort(host_port, &host, &port, why)) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, out);
  if (rc != 0) {
    *why = "side channel '" + host_port + "': " + gai_strerror(rc);
    return false;
  }
  return true;
}

void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // small request/answer lines
}

}  // namespace

std::string Message::Get(const std::string &key) const {
  auto it = fields.find(key);
  return it == fields.end() ? std::string() : it->second;
}

bool Message::GetU64(const std::string &key, uint64_t *out) const {
  std::string v = Get(key);
  if (v.empty() || v.size() > 20 || v.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  unsigned long long n = strtoull(v.c_str(), nullptr, 10);
  if (errno != 0) return false;
  *out = n;
  return true;
}

std::string ToHex(const std::string &bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

bool FromHex(const std::string &hex, std::string *bytes) {
  if (hex.size() % 2 != 0) return false;
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<char>(hi << 4 | lo);
  }
  *bytes = std::move(out);
  return true;
}

bool SplitHostPort(const std::string &text, std::string *host, uint16_t *port, std::string *why) {
  size_t colon = text.rfind(':');
  std::string h = colon == std::string::npos ? std::string() : text.substr(0, colon);
  std::string p = colon == std::string::npos ? std::string() : text.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  char *end = nullptr;
  long n = p.empty() ? -1 : strtol(p.c_str(), &end, 10);
  if (n <= 0 || n > 65535 || *end != '\0') {
    *why = "'" + text + "': expected host:port with a port in [1, 65535]";
    return false;
  }
  *host = h;
  *port = static_cast<uint16_t>(n);
  return true;
}

bool SideChannel::Listen(const std::string &host_port, Fd *listener, std::string *why) {
  addrinfo *list = nullptr;
  if (!Resolve(host_port, true, &list, why)) return false;
  std::string last = "no address";
  for (addrinfo *a = list; a != nullptr; a = a->ai_next) {
    Fd fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd.valid()) {
      last = Errno("socket");
      continue;
    }
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || listen(fd.get(), 4) != 0) {
      last = Errno("bind/listen");
      continue;
    }
    freeaddrinfo(list);
    *listener = std::move(fd);
    return true;
  }
  freeaddrinfo(list);
  *why = "side channel: cannot listen on '" + host_port + "': " + last;
  return false;
}

bool SideChannel::Accept(const Fd &listener, int timeout_ms, SideChannel *out, std::string *why) {
  pollfd p{listener.get(), POLLIN, 0};
  int rc;
  do {
    rc = poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) {
    *why = "side channel: no initiator connected within " + std::to_string(timeout_ms / 1000) + " s";
    return false;
  }
  if (rc < 0) {
    *why = Errno("side channel: poll");
    return false;
  }
  Fd fd(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd.valid()) {
    *why = Errno("side channel: accept");
    return false;
  }
  NoDelay(fd.get());
  out->fd_ = std::move(fd);
  out->inbox_.clear();
  return true;
}

bool SideChannel::Connect(const std::string &host_port, int timeout_ms, const std::function<bool()> &keep_trying,
                          SideChannel *out, std::string *why) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string last = "timed out";
  while (true) {
    addrinfo *list = nullptr;
    if (!Resolve(host_port, false, &list, why)) return false;
    for (addrinfo *a = list; a != nullptr; a = a->ai_next) {
      Fd fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
      if (fd.valid() && connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
        freeaddrinfo(list);
        NoDelay(fd.get());
        out->fd_ = std::move(fd);
        out->inbox_.clear();
        return true;
      }
      last = Errno("connect");
    }
    freeaddrinfo(list);
    // The target may still be starting: retry until the deadline.
    if (Clock::now() >= deadline || !keep_trying()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  *why = "side channel: cannot reach the target at '" + host_port + "': " + last;
  return false;
}

bool SideChannel::Send(const Message &m, std::string *why) {
  std::string line = m.verb;
  if (m.verb == "ERR") {
    line += " " + m.text;
  } else {
    for (const auto &kv : m.fields) line += " " + kv.first + "=" + kv.second;
  }
  line += "\n";
  size_t sent = 0;
  while (sent < line.size()) {
    ssize_t n = send(fd_.get(), line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = Errno("side channel: send (peer gone?)");
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool SideChannel::Receive(Message *m, int timeout_ms, std::string *why, bool *eof) {
  if (eof != nullptr) *eof = false;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  size_t nl;
  while ((nl = inbox_.find('\n')) == std::string::npos) {
    if (inbox_.size() > kMaxLine) {
      *why = "side channel: line longer than " + std::to_string(kMaxLine) + " bytes";
      return false;
    }
    pollfd p{fd_.get(), POLLIN, 0};
    int rc = poll(&p, 1, MsLeft(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      *why = "side channel: no answer within " + std::to_string(timeout_ms) + " ms";
      return false;
    }
    char buf[65536];
    ssize_t n = rc < 0 ? -1 : recv(fd_.get(), buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (eof != nullptr) *eof = n == 0;
      *why = n == 0 ? "side channel: the peer closed the connection" : Errno("side channel: recv");
      return false;
    }
    inbox_.append(buf, static_cast<size_t>(n));
  }
  std::string line = inbox_.substr(0, nl);
  inbox_.erase(0, nl + 1);
  std::istringstream in(line);
  Message out;
  in >> out.verb;
  if (out.verb.empty()) {
    *why = "side channel: empty message";
    return false;
  }
  if (out.verb == "ERR") {
    std::getline(in, out.text);
    if (!out.text.empty() && out.text[0] == ' ') out.text.erase(0, 1);
  } else {
    std::string item;
    while (in >> item) {
      size_t eq = item.find('=');
      if (eq == std::string::npos) {
        *why = "side channel: malformed field '" + item.substr(0, 64) + "'";
        return false;
      }
      out.fields[item.substr(0, eq)] = item.substr(eq + 1);
    }
  }
  *m = std::move(out);
  return true;
}

bool SideChannel::Call(const Message &request, Message *reply, int timeout_ms, std::string *why) {
  if (!Send(request, why) || !Receive(reply, timeout_ms, why)) return false;
  if (reply->verb == "ERR") {
    *why = "target: " + reply->text;
    return false;
  }
  if (reply->verb != "OK") {
    *why = "side channel: expected OK to " + request.verb + ", got " + reply->verb;
    return false;
  }
  return true;
}

}  // namespace bench
