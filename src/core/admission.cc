#include "core/admission.h"

#include "common/log.h"

namespace adxl {

void Admission::Offer(const std::shared_ptr<ControlConn> &conn, HandshakeServer::Admitted admitted) {
  waiting_.emplace_back(conn, std::move(admitted));
  Pump(ControlLoop::NowMs());
  if (!waiting_.empty() && waiting_.back().first.lock() == conn) {
    ADXL_DEBUG("'%s' waits for its answer: %zu clients are wiring up", conn->peer_name().c_str(), wiring_.size());
  }
}

void Admission::Live(const ControlConn *conn) {
  if (wiring_.erase(conn) != 0) Pump(ControlLoop::NowMs());
}

void Admission::Closed(const ControlConn *conn) {
  if (wiring_.erase(conn) != 0) Pump(ControlLoop::NowMs());
}

void Admission::Tick(int64_t now_ms) {
  for (auto it = wiring_.begin(); it != wiring_.end();) {
    it = now_ms - it->second > kSlotMs ? wiring_.erase(it) : std::next(it);
  }
  Pump(now_ms);
}

void Admission::Pump(int64_t now_ms) {
  while (wiring_.size() < kMaxWiring && !waiting_.empty()) {
    std::shared_ptr<ControlConn> conn = waiting_.front().first.lock();
    HandshakeServer::Admitted admitted = std::move(waiting_.front().second);
    waiting_.pop_front();
    if (!conn || conn->closed()) continue;  // gave up while waiting
    wiring_[conn.get()] = now_ms;
    admit_(conn, std::move(admitted));
  }
}

}  // namespace adxl
