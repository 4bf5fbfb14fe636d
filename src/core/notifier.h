// Notifier: notifies (docs/contract.md §7): sending one over a link and
// acknowledging it, keeping received ones until GetNotifies drains them.
//
// A notify is a request on the link's control connection; the receiver
// acknowledges with SUCCESS once it holds it, PARAM_INVALID when a field is
// over kMaxField bytes, RESOURCE_EXHAUSTED when kMaxPending undrained
// notifies wait.  Thread-safety: any thread (receiving runs on the control
// thread); mu_ is a leaf.
#ifndef ADXL_SRC_CORE_NOTIFIER_H_
#define ADXL_SRC_CORE_NOTIFIER_H_

#include <string>
#include <vector>

#include "adxl/adxl_types.h"
#include "common/thread_annotations.h"
#include "control/wire.h"
#include "core/connector.h"

namespace adxl {

class Notifier {
 public:
  static constexpr size_t kMaxField = 1024;     // bytes of name and of message (§7.1)
  static constexpr size_t kMaxPending = 4096;   // undrained notifies a receiver holds (§7.3)

  explicit Notifier(Connector *connector) : connector_(connector) {}

  // SendNotify after the lifecycle check; waits for the acknowledgement
  // until the deadline.
  Status Send(const std::string &remote, const NotifyDesc &notify, int32_t timeout_ms) ADXL_EXCLUDES(mu_);
  // A notify from peer `from` arrived (control thread); returns the status
  // to acknowledge.
  Status Receive(const wire::Notify &n, const std::string &from) ADXL_EXCLUDES(mu_);
  // Appends the received notifies to *out and forgets them.
  void Drain(std::vector<NotifyDesc> *out) ADXL_EXCLUDES(mu_);

 private:
  Connector *const connector_;
  Mutex mu_;
  std::vector<NotifyDesc> inbox_ ADXL_GUARDED_BY(mu_);
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_NOTIFIER_H_
