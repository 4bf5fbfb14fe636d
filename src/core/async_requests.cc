#include "core/async_requests.h"

#include <algorithm>
#include <cinttypes>

#include "common/log.h"

namespace adxl {

bool AsyncRequests::Reserve(const std::string &remote) {
  MutexLock l(&mu_);
  if (requests_.size() + reserved_ >= kMaxRequests) {
    ADXL_ERROR("TransferAsync to '%s': %zu requests not yet reported; query their status first", remote.c_str(),
               requests_.size() + reserved_);
    return false;
  }
  ++reserved_;
  return true;
}

void AsyncRequests::Unreserve() {
  MutexLock l(&mu_);
  --reserved_;
}

uint64_t AsyncRequests::Commit(std::unique_ptr<AsyncRequest> request) {
  MutexLock l(&mu_);
  --reserved_;
  const uint64_t id = next_id_++;
  requests_[id] = std::move(request);
  return id;
}

Status AsyncRequests::Poll(uint64_t id, TransferStatus *status) {
  *status = TransferStatus::FAILED;
  std::unique_ptr<AsyncRequest> done;
  {
    MutexLock l(&mu_);
    auto it = requests_.find(id);
    if (it == requests_.end()) {
      ADXL_ERROR("GetTransferStatus: unknown request %" PRIu64 " (never issued, or its final status was reported)", id);
      return PARAM_INVALID;
    }
    AsyncRequest &r = *it->second;
    if (r.link->disconnected()) {
      ADXL_ERROR("GetTransferStatus: request %" PRIu64 " to '%s' ended: the link was disconnected", id,
                 r.link->remote().c_str());
      if (r.counted) r.link->stats->RecordTransfer(r.op, NOT_CONNECTED, 0, 0, {});
      requests_.erase(it);
      return NOT_CONNECTED;
    }
    if (r.batch->Test() == ADXL_PLUGIN_IN_PROGRESS) {
      *status = TransferStatus::WAITING;
      return SUCCESS;
    }
    done = std::move(it->second);
    requests_.erase(it);
  }
  const int rc = done->batch->Test();
  if (rc == ADXL_PLUGIN_OK) {
    *status = TransferStatus::COMPLETED;
    (done->op == READ ? done->link->bytes_read : done->link->bytes_written).fetch_add(done->plan.bytes);
    done->link->ops.fetch_add(done->plan.iov.size());
  } else {
    *status = TransferStatus::FAILED;
    done->link->Fail("transfer failed in the transport (status " + std::to_string(rc) + ")");
  }
  if (done->counted) {
    done->link->stats->RecordTransfer(done->op, rc == ADXL_PLUGIN_OK ? SUCCESS : FAILED, done->descriptors,
                                      done->plan.bytes, Clock::now() - done->started);
  }
  return SUCCESS;
}

void AsyncRequests::PollAll(uint32_t max_count, bool skip_waiting, std::vector<Result> *results) {
  results->clear();
  if (max_count == 0) return;
  std::vector<std::pair<uint64_t, const void *>> ids;
  {
    MutexLock l(&mu_);
    ids.reserve(requests_.size());
    for (const auto &kv : requests_) ids.emplace_back(kv.first, kv.second->user_data);
  }
  std::sort(ids.begin(), ids.end());
  for (const auto &id : ids) {
    if (results->size() >= max_count) break;
    {
      // Reported by a concurrent query meanwhile: not ours to report.
      MutexLock l(&mu_);
      if (requests_.count(id.first) == 0) continue;
    }
    TransferStatus status = TransferStatus::FAILED;
    const Status st = Poll(id.first, &status);
    if (st == PARAM_INVALID) continue;  // lost the race after all
    if (st == SUCCESS && status == TransferStatus::WAITING && skip_waiting) continue;
    results->push_back(Result{id.first, id.second, status});
  }
}

}  // namespace adxl
