// Engine: the HIXL batch GetTransferStatus over the async requests.
#include <algorithm>

#include "core/engine.h"
#include "common/log.h"

namespace adxl {

Status Engine::GetTransferStatuses(uint32_t max_count, bool skip_waiting,
                                                       std::vector<RequestResult> *results) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  results->clear();
  if (!initialized_.load()) {
    ADXL_ERROR("GetTransferStatus: engine is not initialized");
    return FAILED;
  }
  if (max_count == 0) return SUCCESS;
  // Request ids grow with submission, so id order is submission order.
  std::vector<std::pair<uint64_t, const void *>> ids;
  {
    std::lock_guard<std::mutex> l(req_mu_);
    ids.reserve(requests_.size());
    for (const auto &kv : requests_) ids.emplace_back(kv.first, kv.second->user_data);
  }
  std::sort(ids.begin(), ids.end());
  for (const auto &id : ids) {
    if (results->size() >= max_count) break;
    {
      // Reported by a concurrent query meanwhile: not ours to report.
      std::lock_guard<std::mutex> l(req_mu_);
      if (requests_.count(id.first) == 0) continue;
    }
    TransferStatus status = TransferStatus::FAILED;
    const Status st = PollRequest(id.first, status);
    if (st == PARAM_INVALID) continue;  // lost the race after all
    if (st == SUCCESS && status == TransferStatus::WAITING && skip_waiting) continue;
    results->push_back(
        RequestResult{reinterpret_cast<TransferReq>(static_cast<uintptr_t>(id.first)), id.second, status});
  }
  return SUCCESS;
}

}  // namespace adxl
