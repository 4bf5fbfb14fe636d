// The ABI's drain: the target side of a peer's fence (adxl_plugin.h).
//
// What a peer can have started here is a request of an AM transport (the
// AM mover's, on the main worker, and each network path's, which the
// context reaches as a progress source: core/progress_source.h): a
// WRITE-data receive, a READ answer, an acknowledgement.  The cma and
// mapped movers and UCP RMA on RDMA hardware are one-sided: the initiator's
// side ends them (ep_destroy(force) before the fence), and nothing of
// theirs runs here.  So the drain marks each AM transport's target
// requests, then drives the workers (ProgressAllWorkers: the sources' too)
// until none of those requests is left and a pass finds nothing more
// (messages that were already in the sockets are parsed by then), or until
// the deadline.  While the progress thread polls, it drives the workers and
// this thread reads its passes, as progress() does (ucx_context.h); the
// transports' locks are taken only in the marks and TargetOpsBefore,
// outside any UCP call.
#include <sched.h>
#include <time.h>

#include <vector>

#include "am/am_mover.h"
#include "am/am_protocol.h"
#include "ucx_context.h"

int DrainContext(adxl_plugin_context *ctx, uint64_t deadline_ns) {
  AmTransport *const am = ctx->am_mover != nullptr ? &ctx->am_mover->transport() : nullptr;
  const uint64_t am_mark = am != nullptr ? am->TargetOpMark() : 0;
  std::vector<ProgressSource::TargetMarks> source_marks;
  source_marks.reserve(ctx->progress_sources.size());
  for (ProgressSource *s : ctx->progress_sources) source_marks.push_back(s->MarkTargetOps());
  for (;;) {
    unsigned events;
    if (ctx->progress_polling.load(std::memory_order_relaxed)) {
      sched_yield();
      events = ctx->progress_pass_events.load(std::memory_order_relaxed);
    } else {
      events = ProgressAllWorkers(ctx);
    }
    bool pending = am != nullptr && am->TargetOpsBefore(am_mark);
    for (size_t i = 0; i < source_marks.size(); ++i) {
      pending = pending || ctx->progress_sources[i]->TargetOpsBefore(source_marks[i]);
    }
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
