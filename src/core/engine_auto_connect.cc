// Engine: finding the link of a transfer or notify, and AutoConnect
// (docs/contract.md §5.8): connect on demand, drop failed links so that the next call
// reconnects.
#include <chrono>

#include "core/engine.h"
#include "common/log.h"

namespace adxl {

Status Engine::AcquireLink(const char *api, const std::string &remote,
                                               Clock::time_point deadline, std::shared_ptr<Link> *out) {
  // Two rounds: a link made by our connect may fail before we use it.
  for (int round = 0;; ++round) {
    std::shared_ptr<Link> link = FindLink(remote);
    if (link && link->state() == LinkState::kConnected) {
      *out = std::move(link);
      return SUCCESS;
    }
    if (!options_.auto_connect) {
      if (!link || link->state() == LinkState::kConnecting) {
        ADXL_ERROR("%s to '%s': not connected", api, remote.c_str());
        return NOT_CONNECTED;
      }
      ADXL_ERROR("%s to '%s': the link failed earlier; Disconnect and Connect again", api, remote.c_str());
      return FAILED;
    }
    if (round == 2) {
      ADXL_ERROR("%s to '%s': AutoConnect made a link that failed at once; giving up", api, remote.c_str());
      return FAILED;
    }
    if (link && link->state() == LinkState::kFailed) DropLink(link);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      ADXL_ERROR("%s to '%s': AutoConnect: the call's deadline passed before a link was made", api, remote.c_str());
      return TIMEOUT;
    }
    ADXL_INFO("%s to '%s': not connected; AutoConnect connects (%lld ms left)", api, remote.c_str(),
              static_cast<long long>(left));
    const Status st = DoConnect(remote, static_cast<int32_t>(std::min<long long>(left, INT32_MAX)));
    if (st != SUCCESS && st != ALREADY_CONNECTED) {
      ADXL_ERROR("%s to '%s': AutoConnect could not connect (status %u)", api, remote.c_str(), st);
      return st;
    }
  }
}

void Engine::DropLink(const std::shared_ptr<Link> &link) {
  {
    std::lock_guard<std::mutex> l(links_mu_);
    auto it = links_.find(link->remote());
    if (it != links_.end() && it->second == link) links_.erase(it);
    if (link->conn) link_by_conn_.erase(link->conn.get());
  }
  if (link->conn) link->conn->Close();
  ADXL_INFO("AutoConnect: dropped the failed link to '%s'; the next call reconnects", link->remote().c_str());
}

}  // namespace adxl
