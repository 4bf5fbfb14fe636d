// The "tcp" baseline: the same blocks moved over one plain TCP stream between
// the same two processes, to the target's engine address (its IP, a port of
// its own).  It answers "what can TCP itself carry here", the yardstick of
// the network lane (which runs over UCX's tcp transport when there is no RDMA
// device).
//
// What it does, so that it is comparable with the engine rows:
// - One stream, set up once before any row (outside the timed steps): the
//   target listens on the IP of its --local-engine (port chosen by the kernel,
//   sent in READY as tcp_port=), the initiator connects to that IP.
// - TCP_NODELAY on both ends (as UCX's tcp transport sets by default), so the
//   small step header and acknowledgement never wait for Nagle.  Socket
//   buffers are the kernel defaults with autotuning, as iperf3 uses them
//   without -w; the run header shows their sizes at connect time.
// - WRITE: the initiator sends a step header, then block i of its buffer with
//   one send() per block (looping over partial sends); the target receives
//   block i into block i of its engine buffer with one recv(MSG_WAITALL) per
//   block, then answers one acknowledgement byte.  The step ends when that
//   byte arrives: the data is in the target's buffer, as after TransferSync.
// - READ: the initiator sends a step header; the target sends block i of its
//   engine buffer, one send() per block; the initiator receives each into
//   block i of its buffer.  The step ends with the last byte.
// - The same buffers as the engine (so --verify checks these rows too), the
//   same block sizes and number of blocks, bytes/s over the same total.
//
// A failed or timed-out step (no progress within --timeout-ms in one socket
// call) leaves the stream in an unknown state: it is closed, that row and
// every later tcp row report the error, and nothing is made up.
//
// Stream format (little-endian): step header = u32 magic "ATCP", u32 op
// (1 WRITE, 2 READ; | 0x100: the receiver busy-polls), u64 offset of block 0 in the target's buffer, u64
// block, u64 count; after a WRITE's data the target
// answers one byte, 'K' (stored) or 'E' (refused: the header was invalid,
// the stream is then closed).  A READ that the target refuses is closed
// without data.
// Segment-list steps (--workload kv): op 3 (WRITE) or 4 (READ), offset and
// block 0, count = number of segments; then per segment u64 offset in the
// target's buffer and u64 length; then the segments' data in that order, one
// send()/recv() per segment on each side (local offsets are the initiator's
// own).  A WRITE is acknowledged as above.
#ifndef ADXL_TOOLS_BENCH_TCP_BASELINE_H_
#define ADXL_TOOLS_BENCH_TCP_BASELINE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "engine_runner.h"
#include "kv_layout.h"
#include "measurement.h"
#include "side_channel.h"

namespace bench {

// Target side: listens, accepts one initiator, then serves its steps from a
// thread of its own until destroyed.
class TcpTarget {
 public:
  // Listens on `host` (the IP of the target's engine name), any port.
  // socket_buffer > 0: SO_SNDBUF/SO_RCVBUF of the stream (the limit's
  // streams, tcp_limit.h), else the kernel's autotuning.
  static std::unique_ptr<TcpTarget> Create(uint8_t *buf, size_t len, const std::string &host, std::string *why,
                                           int socket_buffer = 0);
  ~TcpTarget();
  TcpTarget(const TcpTarget &) = delete;
  TcpTarget &operator=(const TcpTarget &) = delete;
  uint16_t port() const { return port_; }

 private:
  TcpTarget() = default;
  void Serve();
  // Waits for `fd` to be readable or for the destructor; false on the latter.
  bool WaitReadable(int fd);
  // One step; false when the stream must end.
  bool ServeStep(int fd);
  // The rest of a segment-list step: its table of `count` segments, then the data.
  bool ServeSegments(int fd, bool write, uint64_t count);

  uint8_t *buf_ = nullptr;
  size_t len_ = 0;
  uint16_t port_ = 0;
  Fd listener_;
  Fd wake_;  // eventfd: the destructor wakes the server thread
  std::atomic<bool> stop_{false};
  std::atomic<int> stream_fd_{-1};  // owned by the server thread; shut down by the destructor
  std::thread server_;
};

// Initiator side: one stream to the target, driven by the calling thread
// only (one thread; --threads applies to the engine).
class TcpInitiator {
 public:
  // Connects to host:port and runs one empty step, outside any timed step.
  // peer_base: the address of the target's buffer (BlockBatch::remote is
  // sent as an offset from it).  timeout_ms bounds every socket call.
  static std::unique_ptr<TcpInitiator> Create(const std::string &host, uint16_t port, uint64_t peer_base,
                                              int timeout_ms, std::string *why, int socket_buffer = 0);

  // busy_poll: the receiving side (the target on WRITE, this side on READ)
  // spins in recv(MSG_DONTWAIT) instead of sleeping in it.
  StepResult RunStep(const BlockBatch &batch, bool busy_poll = false);
  // `iters` steps of one block each, each timed.
  StepResult RunLatency(const BlockBatch &one, int iters);
  // Every key of `plan`, one segment-list step per call of the key; one
  // latency sample per key.
  StepResult RunKeys(adxl::TransferOp op, uintptr_t local_base, const KvPlan &plan);

  // "127.0.0.1:41234 -> 127.0.0.1:39555, TCP_NODELAY, kernel socket buffers
  // (autotuned; at connect SO_SNDBUF 2.5M, SO_RCVBUF 128K)".
  const std::string &description() const { return description_; }

 private:
  TcpInitiator() = default;
  // One step without timing; failures go to *out and break the stream.
  void Step(const BlockBatch &b, StepResult *out, bool busy = false);
  void Break(const std::string &why, StepResult *out);
  void SegmentStep(adxl::TransferOp op, uintptr_t local_base, const SegmentCall &call, StepResult *out);

  uint64_t peer_base_ = 0;
  Fd stream_;
  bool broken_ = false;
  std::string description_;
};

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_TCP_BASELINE_H_
