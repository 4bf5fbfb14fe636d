#include "core/heartbeat.h"

#include <cinttypes>

#include "common/log.h"

namespace adxl {

void Heartbeat::Tick() {
  const int64_t now = ControlLoop::NowMs();
  // Late by more than a tick: the control thread itself did not run.
  const int64_t late = now - last_tick_ms_ - tick_ms_;
  last_tick_ms_ = now;
  const bool judge = late <= static_cast<int64_t>(tick_ms_);
  if (!judge) {
    ADXL_WARN("heartbeat: this engine's control thread ran %" PRId64 " ms late (CPU starved?); judging no peer "
              "this tick",
              late);
  }
  const bool ping = now - last_ping_ms_ >= static_cast<int64_t>(period_ms_) - static_cast<int64_t>(tick_ms_) / 2;
  if (ping) last_ping_ms_ = now;
  const int64_t dead_after = dead_after_ms_;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(period_ms_ / 2 + 1);
  for (const auto &link : links_->Connected()) {
    const int64_t silent = now - link->conn->last_rx_ms.load();
    if (!judge || silent <= dead_after) {
      if (ping) link->conn->Send(wire::Ping{}, 0, deadline);
      continue;
    }
    link->conn->Close();
    Connector *connector = connector_;
    worker_->Post([link, silent, connector] {
      link->Fail("no heartbeat answer for " + std::to_string(silent) + " ms");
      if (connector->auto_connect()) connector->DropLink(link);
    });
  }
  if (connector_->reaper().pending() != 0) {
    Connector *connector = connector_;
    worker_->Post([connector] { connector->reaper().Reap(); });
  }
  if (!judge) return;
  for (const auto &c : registrar_->Subscribers()) {
    // Has our answer and sets its link up (header).  One that never read
    // its answer is not setting anything up: judged as ever.
    if (!c->peer_live.load() && c->answer_sent()) continue;
    const uint32_t theirs = c->peer_dead_after_ms.load();
    const int64_t limit = theirs != 0 ? theirs : dead_after;
    const int64_t silent = now - c->last_rx_ms.load();
    if (silent > limit) {
      ADXL_WARN("client '%s' silent for %" PRId64 " ms (its timeout %" PRId64 " ms); forgetting its link",
                c->peer_name().c_str(), silent, limit);
      c->Close();
    }
  }
}

}  // namespace adxl
