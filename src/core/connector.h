// Connector: opening and closing links (docs/contract.md §5), and finding
// the link of a transfer or notify, with AutoConnect (§5.8).
//
// Connect claims the peer's name in the LinkTable (one Connect per peer at a
// time; concurrent callers wait for its outcome; a failed link is replaced),
// runs the client side of the handshake (control/handshake.h), creates the
// transport endpoint on the lanes that may reach the peer
// (transport/lane_select.h) and starts its wire-up, unpacks the peer's
// regions meanwhile, waits for the wire-up inside the caller's deadline
// (without progressing the transport: its progress thread does), hands the
// control connection to the ControlLoop and pings the peer at once (the
// peer admits its next client then, core/admission.h).  A failed Connect
// gives an endpoint in mid wire-up to the WireupReaper instead of closing
// it.  Everything runs on the caller's thread and waits at most until its
// deadline.
//
// Thread-safety: any thread; no state of its own beyond what it is given at
// construction (the LinkTable and the WireupReaper lock themselves).
#ifndef ADXL_SRC_CORE_CONNECTOR_H_
#define ADXL_SRC_CORE_CONNECTOR_H_

#include <memory>
#include <string>

#include "adxl/adxl_types.h"
#include "common/engine_name.h"
#include "config/options.h"
#include "control/control.h"
#include "control/handshake.h"
#include "core/link_table.h"
#include "core/wireup_reaper.h"
#include "transport/transport.h"

namespace adxl {

class Connector {
 public:
  // `loop` and `links` must outlive the connector.
  Connector(HandshakeIdentity self, const EngineOptions &options, std::shared_ptr<Transport> transport,
            ControlLoop *loop, LinkTable *links);

  Status Connect(const std::string &remote, int32_t timeout_ms);
  Status Disconnect(const std::string &remote, int32_t timeout_ms);
  // The link a transfer or notify uses.  Without AutoConnect: NOT_CONNECTED
  // when there is none, FAILED when it failed.  With AutoConnect: a missing
  // link is connected, a failed one dropped and connected again, before
  // `deadline`.  Logs one ERROR line (prefixed with `api`) on failure.
  Status AcquireLink(const char *api, const std::string &remote, Clock::time_point deadline,
                     std::shared_ptr<Link> *link);
  // Removes a failed link from the table and closes its control connection
  // (AutoConnect: the next call reconnects).  Idempotent.
  void DropLink(const std::shared_ptr<Link> &link);
  bool auto_connect() const { return auto_connect_; }
  // Endpoints of failed Connects whose wire-up had not ended yet.
  WireupReaper &reaper() { return reaper_; }

 private:
  Status ConnectOnce(const std::shared_ptr<Link> &link, const EngineName &peer, Clock::time_point deadline);

  const HandshakeIdentity self_;
  const bool auto_connect_;
  const std::vector<std::string> protocols_;
  const std::shared_ptr<Transport> transport_;
  ControlLoop *const loop_;
  LinkTable *const links_;
  WireupReaper reaper_;
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_CONNECTOR_H_
