// The UCX plugin's context (adxl_plugin_context_t): one UCP context and one
// multi-threaded UCP worker, the movers that share them, and the progress
// thread that drives the worker so that remote operations complete while the
// target application calls nothing.
//
// Progress thread (ProgressLoop): progresses the worker; after the last
// event it keeps polling for kProgressLinger (200 µs: a transfer is a burst
// of messages, and waking up for each costs tens of microseconds), then arms
// the worker (ucp_worker_arm) and sleeps in epoll on the worker's event fd
// and on wake_fd (Wake(): posted work, endpoint failures, Close).  It arms
// only after a pass that found nothing: UCP signals the event fd for new
// events only, so a worker armed with events undrained sleeps through them
// (a thread preempted for longer than the linger right after a busy pass
// once did, and a passive target's wire-up then never ended).  An idle
// engine sleeps.  It calls AmTransport::RunDeferred() *outside*
// ucp_worker_progress: that is where work queued by UCP callbacks runs.
// While it polls, the ABI's progress() (application threads call it while
// they wait, BatchWait) leaves the workers to it: it yields the CPU and
// returns the events of the thread's latest pass (so "progress until idle"
// still means until the workers are idle).  UCP's worker lock is a spin
// lock: a waiter in ucp_worker_progress beside the progress thread spent
// spinning the CPU that the progress thread and the peer needed (on two
// cores about a fifth of the CPU time of a WRITE test, adxl-bench under
// perf), or made the progress thread spin while it held the lock.  While
// the thread sleeps in epoll, callers progress the workers themselves,
// which keeps small transfers fast.
//
// Progress sources (core/progress_source.h): movers with UCP workers of
// their own - the network paths (ADXL_UCX_RDMA_PATHS), whose paths and
// failover PathsMover owns (paths/paths_mover.h) - which the progress
// thread drives the same way, all of them from one epoll set: each source's
// workers progressed in every pass and armed before it sleeps, its due work
// (the paths' deferred work, their failover) run in the polling loop, its
// timer as the epoll timeout, its fds in the set.  The context knows them
// only through that interface.
//
// Settings reach UCX through its config API only (ucp_config_modify on the
// ucp_config_t given to ucp_init), never through the environment, so that two
// engines may open at once (ApplyUcxSettings in ucx_context.cc).  A UCX_*
// variable of the user for the same setting always wins.
//
// Locks.  The context has none of its own: its mutable fields are atomics or
// are written only in Open/Close.  The UCP worker is UCS_THREAD_MODE_MULTI:
// every ucp_* call on it takes UCP's worker lock, and UCP callbacks (EpError,
// RmaMover's flush completion, AmTransport's handlers) run under it, on whichever
// thread progresses; a network path's worker likewise.  Nesting: any UCP worker
// lock -> any AmTransport's locks (am_transport.h; EpError of one worker's endpoint
// tells every lane of the link); the network paths' failover lock
// (path_failover.h) is a leaf, taken under either; no UCP worker lock is taken
// under another; CmaTransport's stripe locks are never held with any of them
// (cma_transport.h).  The progress sources' hooks (core/progress_source.h) are
// called with none of these held.
//
// Thread-safety: log, Wake and the UCP helpers may be called from any
// thread, including from UCP callbacks (log and Wake only).
#ifndef ADXL_PLUGIN_UCX_UCX_CONTEXT_H_
#define ADXL_PLUGIN_UCX_UCX_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <ucp/api/ucp.h>

#include "adxl/plugin/adxl_plugin.h"
#include "core/mover.h"
#include "core/plugin_log.h"
#include "core/progress_source.h"
#include "core/ucp_core.h"
#include "core/ucp_endpoint.h"
#include "core/ucs_status.h"
#include "core/ucx_params.h"

class AmMover;
class CmaMover;
class MappedMover;
class PathsMover;
class RmaMover;

// The context's UCP context, worker, logger and wake-up are its UcpCore
// (core/ucp_core.h), which the parts below the movers take instead of it.
struct adxl_plugin_context : UcpCore {
  // RDMA lane protocol: active messages (am_mover.h) unless RDMA hardware
  // makes UCP RMA truly one-sided; ADXL_UCX_RDMA_PROTOCOL=am|rma overrides.
  bool rdma_over_am = false;
  // The movers (core/mover.h), owned here with what each moves by (cma's
  // transport and copy threads, the AM protocol on `worker`, the network
  // paths and their failover); mem_reg registers a region with each in this
  // order: the direct mapping's search for a shared file, UCP
  // (rma_mover.h), the AM mover's table, the network paths, cma.  Filled by
  // Open before it starts them, fixed then; they refer to the UcpCore and
  // `device_mem_type`.
  MoverSet movers;
  // The same movers by kind, for binding endpoints and keys (ucx_bind.h).
  MappedMover *mapped_mover = nullptr;
  RmaMover *rma_mover = nullptr;
  AmMover *am_mover = nullptr;
  PathsMover *paths_mover = nullptr;
  CmaMover *cma_mover = nullptr;
  // The movers with workers of their own that the progress thread drives
  // beside `worker` (header comment): PathsMover when it opened paths.
  // Filled by Open before the progress thread starts, fixed then.
  std::vector<ProgressSource *> progress_sources;
  bool device_memory = false;
  ucs_memory_type_t device_mem_type = UCS_MEMORY_TYPE_UNKNOWN;  // CUDA, else ROCM
  std::string device_why;  // why device_memory is false
  int epoll_fd = -1;
  std::atomic<bool> stop{false};
  std::thread progress_thread;
  // The progress thread is awake and polling the workers (not in epoll):
  // the ABI's progress() then leaves the workers to it (ucx_plugin.cc).
  std::atomic<bool> progress_polling{false};
  // The events its latest pass over the workers reported.
  std::atomic<unsigned> progress_pass_events{0};
  std::atomic<uint64_t> next_ep_id{1};  // adxl_plugin_ep::id
  // What Open configured, for Query: "cma,mapped" on the HCCS lane when it
  // is up, "am" or "rma" on the RDMA lane, UCP's transport list, device memory.
  std::string transports;
  unsigned ep_destroy_delay_us = 0;       // UcxParams::faults (fault_injection.h): test build only
  unsigned progress_pause_us = 0;         // the same
  unsigned hccs_piece_delay_us = 0;       // the same
  unsigned rdma_connections = 1;          // UcxParams::rdma_connections

  // open() and close() of the ABI.  Open returns an ADXL_PLUGIN_* status.
  static int Open(const adxl_plugin_config_t *cfg, adxl_plugin_context **out);
  static void Close(adxl_plugin_context *ctx);
};

// Progresses the main worker and every progress source's workers once (the
// progress thread, and the ABI's progress); the number of events UCP reported.
unsigned ProgressAllWorkers(adxl_plugin_context *ctx);

// The ABI's drain (adxl_plugin.h; context_drain.cc): OK once the requests
// peers had started here before the call have ended and a pass over the
// workers finds nothing, IN_PROGRESS when deadline_ns came first.
int DrainContext(adxl_plugin_context *ctx, uint64_t deadline_ns);

#endif  // ADXL_PLUGIN_UCX_UCX_CONTEXT_H_
