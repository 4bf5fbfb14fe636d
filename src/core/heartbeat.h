// Heartbeat: liveness of links in both directions (docs/contract.md §5).
//
// Every period the client end of each connected link sends a Ping; a link
// whose peer was silent (no frame at all) for 3 periods is failed and its
// connection closed (AutoConnect: dropped, so the next call reconnects).  A
// server end whose client was silent for 3 periods is closed, which ends
// its subscription.  Tick runs on the control thread and never waits: Pings
// are queued, and failing a link (which cancels its endpoint and may wait
// for copies in progress) runs on the background worker.
#ifndef ADXL_SRC_CORE_HEARTBEAT_H_
#define ADXL_SRC_CORE_HEARTBEAT_H_

#include <cstdint>

#include "common/background_worker.h"
#include "core/connector.h"
#include "core/link_table.h"
#include "core/registrar.h"

namespace adxl {

class Heartbeat {
 public:
  // Every pointer must outlive the heartbeat.
  Heartbeat(uint32_t period_ms, LinkTable *links, const Registrar *registrar, Connector *connector,
            BackgroundWorker *worker)
      : period_ms_(period_ms), links_(links), registrar_(registrar), connector_(connector), worker_(worker) {}

  // Control thread, once per period.
  void Tick();

 private:
  const uint32_t period_ms_;
  LinkTable *const links_;
  const Registrar *const registrar_;
  Connector *const connector_;
  BackgroundWorker *const worker_;
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_HEARTBEAT_H_
