// The side channel: one plain TCP connection between initiator and target,
// separate from the engine's own control channel, that carries what the bench
// needs outside the measured path: buffer address and size, the raw-UCP
// worker address and remote key, and the step commands of the verify pass.
//
// Wire format: one text line per message, "VERB key=value key=value\n";
// binary values are hex.  An error answer is "ERR free text".  Lines are
// bounded (kMaxLine) so that a confused peer cannot make us allocate freely.
#ifndef ADXL_TOOLS_BENCH_SIDE_CHANNEL_H_
#define ADXL_TOOLS_BENCH_SIDE_CHANNEL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "common/fd.h"

namespace bench {

// 2: device directions (device=, daddr=, mem=); 3: tcp baseline (tcp=, tcp_port=)
constexpr int kSideChannelVersion = 3;

// The engine's owning file descriptor (src/common/fd.h, header-only).
using adxl::Fd;

struct Message {
  std::string verb;
  std::map<std::string, std::string> fields;
  std::string text;  // the free text of an ERR

  Message() = default;
  explicit Message(std::string v) : verb(std::move(v)) {}
  Message &Set(const std::string &key, const std::string &value) {
    fields[key] = value;
    return *this;
  }
  Message &Set(const std::string &key, uint64_t value) { return Set(key, std::to_string(value)); }
  // Empty when absent.
  std::string Get(const std::string &key) const;
  bool GetU64(const std::string &key, uint64_t *out) const;
};

std::string ToHex(const std::string &bytes);
bool FromHex(const std::string &hex, std::string *bytes);

// "host:port" or "[v6]:port" -> host and port.
bool SplitHostPort(const std::string &text, std::string *host, uint16_t *port, std::string *why);

class SideChannel {
 public:
  // Target: bind and listen on host:port.
  static bool Listen(const std::string &host_port, Fd *listener, std::string *why);
  // Target: wait up to timeout_ms for the initiator.
  static bool Accept(const Fd &listener, int timeout_ms, SideChannel *out, std::string *why);
  // Initiator: connect, retrying until timeout_ms while keep_trying() says
  // the target may still come up (in --spawn mode: while the child lives).
  static bool Connect(const std::string &host_port, int timeout_ms, const std::function<bool()> &keep_trying,
                      SideChannel *out, std::string *why);

  bool Send(const Message &m, std::string *why);
  // Waits up to timeout_ms for one message; EOF sets *eof (when given).
  bool Receive(Message *m, int timeout_ms, std::string *why, bool *eof = nullptr);
  // Send, then wait for the answer; an ERR answer is a failure with its text.
  bool Call(const Message &request, Message *reply, int timeout_ms, std::string *why);

 private:
  Fd fd_;
  std::string inbox_;  // bytes received past the last full line
};

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_SIDE_CHANNEL_H_
