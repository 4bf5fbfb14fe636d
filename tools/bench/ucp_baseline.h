// The "ucp" baseline: the same blocks moved with raw UCP (ucp_put_nbx /
// ucp_get_nbx per block, one ucp_ep_flush_nbx per step) on the same UCX
// configuration as the engine, with no engine in between.  It answers "what
// does the engine cost over UCP itself".
//
// Fairness: over TCP and over shared memory with registered user memory, UCP
// emulates RMA with active messages, so the *target* must progress its
// worker.  The target here runs a progress thread with the same policy as
// the engine plugin's progress thread (ProgressLoop in plugin/ucx): it keeps
// polling ucp_worker_progress until 200 us have passed without an event,
// then sleeps on the worker's event fd (ucp_worker_arm + epoll_wait); or it
// busy polls (--target-progress poll).  Sleeping at once instead would make
// the baseline pay a wake-up per message that the engine does not pay.  ucx_perftest's responder polls about once
// per millisecond, which is why its one-sided TCP numbers are not used.
#ifndef ADXL_TOOLS_BENCH_UCP_BASELINE_H_
#define ADXL_TOOLS_BENCH_UCP_BASELINE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <ucp/api/ucp.h>

#include "engine_runner.h"
#include "kv_layout.h"
#include "measurement.h"
#include "options.h"

namespace bench {

// A UCP context and one worker, created the way the engine's plugin creates
// its own (RMA + wakeup features, peer error handling on endpoints).
class UcpWorker {
 public:
  static std::unique_ptr<UcpWorker> Create(std::string *why);
  ~UcpWorker();
  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  // Maps [addr, addr+len) for RMA.
  bool Map(void *addr, size_t len, ucp_mem_h *memh, std::string *why);

 private:
  UcpWorker() = default;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
};

// Target side: exposes its buffer and keeps the worker progressed.
// kProgressLinger: how long the event-driven thread polls after the last
// event before it sleeps; the engine plugin's value, keep them equal.
class UcpTarget {
 public:
  static std::unique_ptr<UcpTarget> Create(void *buf, size_t len, TargetProgress progress, std::string *why);
  ~UcpTarget();
  const std::string &worker_address() const { return worker_address_; }
  const std::string &packed_rkey() const { return packed_rkey_; }

 private:
  UcpTarget() = default;
  static constexpr std::chrono::microseconds kProgressLinger{200};
  void ProgressByEvents();
  void ProgressByPolling();

  std::unique_ptr<UcpWorker> ucp_;
  ucp_mem_h memh_ = nullptr;
  std::string worker_address_;
  std::string packed_rkey_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread progress_;
};

// Initiator side: one endpoint to the target's worker, driven by the
// calling thread only (one thread; --threads applies to the engine).
class UcpInitiator {
 public:
  static std::unique_ptr<UcpInitiator> Create(void *local, size_t len, const std::string &peer_worker_address,
                                              const std::string &peer_rkey, uint64_t peer_base, int timeout_ms,
                                              std::string *why);
  ~UcpInitiator();

  StepResult RunStep(const BlockBatch &batch, int timeout_ms);
  // `iters` times: one put/get of one block, then a flush.
  StepResult RunLatency(const BlockBatch &one, int iters, int timeout_ms);
  // Every key of `plan`: per call of the key, one put/get per segment, then
  // one flush (the engine's batching freedom: a call's descriptors are in
  // flight together); one latency sample per key.  local_base / remote_base:
  // the buffers the segments' offsets count from.
  StepResult RunKeys(adxl::TransferOp op, uintptr_t local_base, uint64_t remote_base, const KvPlan &plan,
                     int timeout_ms);

  // Transports of the endpoint's lanes, from ucp_ep_print_info (e.g. "posix,cma").
  const std::string &transports() const { return transports_; }
  // True when ucp_rkey_ptr maps the peer's buffer: RMA is then truly
  // one-sided (shared memory); otherwise UCP emulates it over active messages.
  bool peer_mapped() const { return peer_mapped_; }

 private:
  UcpInitiator() = default;
  bool Post(const BlockBatch &b, size_t i, StepResult *out);
  bool Flush(int timeout_ms, StepResult *out);
  std::string DescribeLanes() const;

  std::unique_ptr<UcpWorker> ucp_;
  ucp_mem_h memh_ = nullptr;
  ucp_ep_h ep_ = nullptr;
  ucp_rkey_h rkey_ = nullptr;
  std::atomic<bool> ep_failed_{false};
  bool broken_ = false;  // a flush timed out: do not post more
  std::string transports_;
  bool peer_mapped_ = false;
};

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_UCP_BASELINE_H_
