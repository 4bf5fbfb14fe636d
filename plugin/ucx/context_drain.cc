// The ABI's drain: the target side of a peer's fence (adxl_plugin.h).
//
// What a peer can have started here is a request of an AM transport (the
// AM mover's, on the main worker, and each network path's): a WRITE-data
// receive, a READ answer, an acknowledgement.  The cma and mapped movers and
// UCP RMA on RDMA hardware are one-sided: the initiator's side ends them
// (ep_destroy(force) before the fence), and nothing of theirs runs here.  So
// the drain marks each AM transport's target requests, then drives the
// workers until none of those requests is left and a pass finds nothing
// more (messages that were already in the sockets are parsed by then), or
// until the deadline.  While
// the progress thread polls, it drives the workers and this thread reads
// its passes, as progress() does (ucx_context.h); the transports' locks are
// taken only in TargetOpsBefore, outside any UCP call.
#include <sched.h>
#include <time.h>

#include <utility>
#include <vector>

#include "am/am_mover.h"
#include "am/am_protocol.h"
#include "ucx_context.h"

int DrainContext(adxl_plugin_context *ctx, uint64_t deadline_ns) {
  std::vector<std::pair<AmTransport *, uint64_t>> marks;
  if (ctx->am_mover != nullptr) {
    AmTransport &am = ctx->am_mover->transport();
    marks.emplace_back(&am, am.TargetOpMark());
  }
  for (const auto &p : ctx->paths) marks.emplace_back(&p->am, p->am.TargetOpMark());
  for (;;) {
    unsigned events;
    if (ctx->progress_polling.load(std::memory_order_relaxed)) {
      sched_yield();
      events = ctx->progress_pass_events.load(std::memory_order_relaxed);
    } else {
      events = ProgressAllWorkers(ctx);
    }
    bool pending = false;
    for (const auto &m : marks) pending = pending || m.first->TargetOpsBefore(m.second);
    if (!pending && events == 0) return ADXL_PLUGIN_OK;
    if (am_protocol::MonotonicNs() >= deadline_ns) return ADXL_PLUGIN_IN_PROGRESS;
    if (events == 0) {
      // Waiting on a peer's data: leave the CPU to it (and to the progress
      // thread) for a moment instead of spinning on an idle worker.
      const timespec pause{0, 20 * 1000};
      nanosleep(&pause, nullptr);
    }
  }
}
