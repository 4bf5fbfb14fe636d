// ProgressSource: UCP workers (and fds) beside the context's own worker that
// the context's progress thread drives, with what goes with them: work due
// outside ucp_worker_progress, a timer, an fd to watch, the target requests
// a drain waits for.  A mover with workers of its own implements it (the
// network paths, paths/paths_mover.h); the context (ucx_context.h) knows
// only this interface, and core/ knows no mover.
//
// How the progress thread uses a source (ucx_context.cc, ProgressLoop):
// while it polls, Progress() once per pass beside the main worker, then
// RunDue(); before it sleeps, Arm() after the main worker (UCS_ERR_BUSY:
// events arrived, it polls again); it sleeps in one epoll set that holds
// EpollFds() (added once, at open), with TimeoutMs() as the timeout (the
// smallest of all sources'), and hands every readable fd to Readable().
// The ABI's progress calls Progress() too, and its drain
// (context_drain.cc) MarkTargetOps() / TargetOpsBefore().
//
// Locks: the context calls every hook with no lock of its own held (it has
// none) and outside any UCP worker lock, so a hook may take the source's
// locks and call ucp_* on its workers (the nesting of ucx_context.h).
//
// Thread-safety: a source is registered by the context's Open after it
// opened and stays until Close has stopped the progress thread.  Progress,
// MarkTargetOps and TargetOpsBefore may run on any thread, concurrently;
// RunDue, Arm, TimeoutMs and Readable on the progress thread only.
#ifndef ADXL_PLUGIN_UCX_CORE_PROGRESS_SOURCE_H_
#define ADXL_PLUGIN_UCX_CORE_PROGRESS_SOURCE_H_

#include <cstdint>
#include <vector>

#include <ucp/api/ucp.h>

class ProgressSource {
 public:
  // What MarkTargetOps() returns: one mark per transport of the source,
  // opaque to the caller.
  using TargetMarks = std::vector<uint64_t>;

  virtual ~ProgressSource() = default;

  // ucp_worker_progress once on each of its workers; the events reported.
  virtual unsigned Progress() = 0;
  // Runs the work that is due outside ucp_worker_progress (queued by UCP
  // callbacks, or by a timer); whether there was some.
  virtual bool RunDue() = 0;
  // ucp_worker_arm on each of its workers, stopping at the first status
  // that is not UCS_OK (UCS_ERR_BUSY: one has events pending).
  virtual ucs_status_t Arm() = 0;
  // The epoll timeout (ms) until RunDue has timed work (-1: none).
  virtual int TimeoutMs() const = 0;
  // The fds the progress thread sleeps on for it: its workers' event fds
  // and any of its own.
  virtual std::vector<int> EpollFds() const = 0;
  // `fd` (one of EpollFds(), or another source's: ignored) is readable.
  virtual void Readable(int fd) = 0;

  // The drain: a mark of the requests peers have started on its workers so
  // far, and whether one of those started before the mark is still pending.
  virtual TargetMarks MarkTargetOps() = 0;
  virtual bool TargetOpsBefore(const TargetMarks &marks) = 0;
};

#endif  // ADXL_PLUGIN_UCX_CORE_PROGRESS_SOURCE_H_
