// The network limit: the best a plain socket does between the two bench
// processes, so that no engine or peer beats "the limit" by a trick the
// yardstick did not use.  Measured as variants of the tcp baseline's stream
// (tcp_baseline.h: the same wire format, the same buffers and blocks) in
// turn with the engine rows:
//   tcp_x2, tcp_x4         2 / 4 streams, each moving a contiguous share of
//                          the blocks from a thread of its own;
//   tcp_x1_poll, tcp_x2_poll  1 / 2 streams, the receiving side busy-polling
//                          (recv(MSG_DONTWAIT) in a loop) instead of sleeping;
// all with socket buffers set to 4 MiB (SO_SNDBUF/SO_RCVBUF) instead of the
// kernel's autotuning.  The old row (one stream, autotuned buffers, blocking
// receive) is tcp_1stream; the group's `tcp` row is the best of all of them
// (its note names the winner), and eng/tcp is the engine over that.
// MSG_ZEROCOPY: probed once (ProbeZeroCopy); on loopback and veth the kernel
// copies zero-copy sends anyway (the completion says so), so it is not a
// variant where it cannot help; the run header says what the probe found.
#ifndef ADXL_TOOLS_BENCH_TCP_LIMIT_H_
#define ADXL_TOOLS_BENCH_TCP_LIMIT_H_

#include <memory>
#include <string>
#include <vector>

#include "tcp_baseline.h"

namespace bench {

constexpr int kLimitStreams = 4;
constexpr int kLimitSocketBuffer = 4 << 20;

struct TcpVariant {
  const char *name;
  int streams;
  bool busy_poll;
};
// tcp_x2, tcp_x4, tcp_x1_poll, tcp_x2_poll.
const std::vector<TcpVariant> &TcpLimitVariants();

class TcpLimit {
 public:
  // Connects kLimitStreams streams to host:ports (the target's READY).
  static std::unique_ptr<TcpLimit> Create(const std::string &host, const std::vector<uint16_t> &ports,
                                          uint64_t peer_base, int timeout_ms, std::string *why);
  // One step of `v`: the blocks cut into v.streams contiguous shares, one
  // stream and thread each; the step ends when every share has.
  StepResult RunStep(const BlockBatch &b, const TcpVariant &v);
  const std::string &description() const { return description_; }

 private:
  std::vector<std::unique_ptr<TcpInitiator>> streams_;
  std::string description_;
};

// Whether MSG_ZEROCOPY saves the copy on the path to `host` (a loopback pair
// inside this process): "used"/"copied by the kernel"/"unsupported: why".
std::string ProbeZeroCopy(const std::string &host);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_TCP_LIMIT_H_
