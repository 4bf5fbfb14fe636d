// Link: this engine's directional connection to one peer (docs/contract.md §5).
//
// A link exists on the side that called Connect.  It owns the control
// connection (client end), the transport endpoint, and the peer's advertised
// regions with their unpacked keys.  State moves CONNECTING -> CONNECTED and
// then to FAILED (peer died, heartbeat lost, transfer timed out) or is
// removed by Disconnect; a failed link answers every transfer FAILED until
// it is disconnected and connected again.
#ifndef ADXL_SRC_CORE_LINK_H_
#define ADXL_SRC_CORE_LINK_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "control/control.h"
#include "memory/range_table.h"
#include "transport/transport.h"

namespace adxl {

// A region the peer advertised, with its key unpacked on our endpoint.  When
// the peer withdraws it, `on_retired` (set then) runs once the last transfer
// using it lets go, which acknowledges the withdrawal.
struct RemoteRegion {
  uint64_t id = 0;
  uint32_t mem_type = 0;
  std::unique_ptr<RemoteKey> key;
  std::function<void()> on_retired;
  ~RemoteRegion() {
    key.reset();
    if (on_retired) on_retired();
  }
};

enum class LinkState { kConnecting, kConnected, kFailed };

class Link {
 public:
  using Table = RangeTable<std::shared_ptr<RemoteRegion>>;

  explicit Link(std::string remote) : remote_(std::move(remote)) {}

  const std::string &remote() const { return remote_; }
  LinkState state() const { return state_.load(); }
  bool disconnected() const { return disconnected_.load(); }

  // Set once, by Connect, before the link is published as connected.
  std::shared_ptr<ControlConn> conn;
  std::shared_ptr<Endpoint> endpoint;
  std::string peer_node_id;
  std::string transports;

  // Region table (readers: transfers; writers: the control thread).
  mutable std::shared_mutex regions_mu;
  Table regions;
  std::map<uint64_t, uintptr_t> region_addr_by_id;  // for withdrawals by id

  // Publishes the outcome of Connect to concurrent callers.
  void SetConnected();
  // Marks the link failed (idempotent): cancels the endpoint so that every
  // batch in flight ends now, and logs why once.
  void Fail(const std::string &why);
  // The user disconnected: requests on the link report NOT_CONNECTED, the
  // endpoint is cancelled and the link settles as failed without a warning.
  void Shutdown();
  // Waits until the link leaves CONNECTING or the deadline passes.
  bool WaitSettled(Clock::time_point deadline);

  // Counters (extension API).
  std::atomic<uint64_t> bytes_read{0}, bytes_written{0}, ops{0};

 private:
  std::string remote_;
  std::atomic<LinkState> state_{LinkState::kConnecting};
  std::atomic<bool> disconnected_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_LINK_H_
