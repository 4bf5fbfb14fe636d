#include "core/heartbeat.h"

#include <cinttypes>

#include "common/log.h"

namespace adxl {

void Heartbeat::Tick() {
  const int64_t now = ControlLoop::NowMs();
  const int64_t dead_after = 3 * static_cast<int64_t>(period_ms_);
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(period_ms_ / 2 + 1);
  for (const auto &link : links_->Connected()) {
    const int64_t silent = now - link->conn->last_rx_ms.load();
    if (silent <= dead_after) {
      link->conn->Send(wire::Ping{}, 0, deadline);
      continue;
    }
    link->conn->Close();
    Connector *connector = connector_;
    worker_->Post([link, silent, connector] {
      link->Fail("no heartbeat answer for " + std::to_string(silent) + " ms");
      if (connector->auto_connect()) connector->DropLink(link);
    });
  }
  for (const auto &c : registrar_->Subscribers()) {
    const int64_t silent = now - c->last_rx_ms.load();
    if (silent > dead_after) {
      ADXL_WARN("client '%s' silent for %" PRId64 " ms; forgetting its link", c->peer_name().c_str(), silent);
      c->Close();
    }
  }
}

}  // namespace adxl
