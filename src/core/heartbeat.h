// Heartbeat: liveness of links in both directions (docs/contract.md §5).
//
// Runs on the control thread at every tick of the ControlLoop (the period,
// at most 1 s: options.h HeartbeatTickMs) and never waits: Pings are
// queued, and failing a link (which cancels its endpoint and may wait for
// copies in progress) runs on the background worker.
//  - Client ends: every period each connected link pings its peer; a link
//    whose peer sent nothing at all for `dead_after_ms` is failed and its
//    connection closed (AutoConnect: dropped, so the next call reconnects).
//  - Server ends: a client is judged by the timeout its Hello stated (its
//    own period's; ControlConn::peer_dead_after_ms), else by ours, so that
//    engines of different periods keep each other.  A client that has our
//    answer is judged only once its link is set up (ControlConn::peer_live:
//    it sent a frame after the handshake): a peer that is still wiring up
//    its transport - one of hundreds connecting at once - sends nothing and
//    is not silent.  A client that dies meanwhile closes its socket, which
//    the loop sees; one that never reads its answer is judged as any other.
//  - A tick that comes late (this process was starved of CPU: the control
//    thread did not run) judges nobody: the frames peers sent meanwhile may
//    wait unread in the sockets, so the silence measured is ours, not theirs.
// Thread-safety: Tick only on the control thread; no locks of its own.
#ifndef ADXL_SRC_CORE_HEARTBEAT_H_
#define ADXL_SRC_CORE_HEARTBEAT_H_

#include <cstdint>

#include "common/background_worker.h"
#include "control/control.h"
#include "core/connector.h"
#include "core/link_table.h"
#include "core/registrar.h"

namespace adxl {

class Heartbeat {
 public:
  // Every pointer must outlive the heartbeat.
  Heartbeat(uint32_t period_ms, uint32_t dead_after_ms, uint32_t tick_ms, LinkTable *links,
            const Registrar *registrar, Connector *connector, BackgroundWorker *worker)
      : period_ms_(period_ms),
        dead_after_ms_(dead_after_ms),
        tick_ms_(tick_ms),
        links_(links),
        registrar_(registrar),
        connector_(connector),
        worker_(worker) {}

  // Control thread, once per tick.
  void Tick();

 private:
  const uint32_t period_ms_;
  const uint32_t dead_after_ms_;
  const uint32_t tick_ms_;
  LinkTable *const links_;
  const Registrar *const registrar_;
  Connector *const connector_;
  BackgroundWorker *const worker_;
  // Control thread only.  From construction (just before the control loop
  // starts), so that a first tick that comes late is seen as late too.
  int64_t last_tick_ms_ = ControlLoop::NowMs();
  int64_t last_ping_ms_ = 0;
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_HEARTBEAT_H_
