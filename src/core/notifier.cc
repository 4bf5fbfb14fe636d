#include "core/notifier.h"

#include <iterator>

#include "common/log.h"

namespace adxl {

Status Notifier::Send(const std::string &remote, const NotifyDesc &notify, int32_t timeout_ms) {
  if (timeout_ms <= 0) {
    ADXL_ERROR("SendNotify to '%s': timeout %d ms must be > 0", remote.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  if (notify.name.GetLength() > kMaxField || notify.notify_msg.GetLength() > kMaxField) {
    ADXL_ERROR("SendNotify to '%s': name (%zu bytes) and message (%zu bytes) may be at most %zu bytes each",
               remote.c_str(), notify.name.GetLength(), notify.notify_msg.GetLength(), kMaxField);
    return PARAM_INVALID;
  }
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::shared_ptr<Link> link;
  Status st = connector_->AcquireLink("SendNotify", remote, deadline, &link);
  if (st != SUCCESS) return st;
  uint32_t status = 0;
  wire::Notify body{std::string(notify.name.GetString(), notify.name.GetLength()),
                    std::string(notify.notify_msg.GetString(), notify.notify_msg.GetLength())};
  switch (link->conn->Request(body, deadline, &status)) {
    case ControlConn::Outcome::kAcked:
      if (status != SUCCESS) ADXL_ERROR("SendNotify to '%s': receiver answered status %u", remote.c_str(), status);
      return status;
    case ControlConn::Outcome::kTimeout:
      ADXL_ERROR("SendNotify to '%s': no acknowledgement within %d ms", remote.c_str(), timeout_ms);
      return TIMEOUT;
    case ControlConn::Outcome::kClosed:
    case ControlConn::Outcome::kStopped:  // not asked for here
      break;
  }
  ADXL_ERROR("SendNotify to '%s': the control connection closed", remote.c_str());
  return NOTIFY_FAILED;
}

Status Notifier::Receive(const wire::Notify &n, const std::string &from) {
  Status st = SUCCESS;
  if (n.name.size() > kMaxField || n.msg.size() > kMaxField) {
    st = PARAM_INVALID;
  } else {
    MutexLock l(&mu_);
    if (inbox_.size() >= kMaxPending) {
      st = RESOURCE_EXHAUSTED;
    } else {
      inbox_.push_back(
          NotifyDesc{AscendString(n.name.data(), n.name.size()), AscendString(n.msg.data(), n.msg.size())});
    }
  }
  if (st != SUCCESS) ADXL_WARN("notify from '%s' refused (status %u)", from.c_str(), st);
  return st;
}

void Notifier::Drain(std::vector<NotifyDesc> *out) {
  std::vector<NotifyDesc> got;
  {
    MutexLock l(&mu_);
    got.swap(inbox_);
  }
  out->insert(out->end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
}

}  // namespace adxl
