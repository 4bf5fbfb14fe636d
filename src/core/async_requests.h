// AsyncRequests: the TransferAsync requests whose final status was not yet
// reported (docs/contract.md §6.5).
//
// A request gets an id (its TransferReq) that grows with submission, so id
// order is submission order.  At most kMaxRequests are outstanding; a slot
// is reserved before the transfer is posted and released if the post fails,
// so concurrent callers cannot pass the limit together.  A request leaves
// the table when its final status is reported (Poll), which happens once.
//
// A request is counted against its link's statistics (link_stats.h) when
// its final status is reported, from its submission to that report.
//
// Thread-safety: any thread.  mu_ is a leaf: Poll tests a batch (which does
// not call back into the engine) under it, and takes it again after.
#ifndef ADXL_SRC_CORE_ASYNC_REQUESTS_H_
#define ADXL_SRC_CORE_ASYNC_REQUESTS_H_

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "adxl/adxl_types.h"
#include "common/thread_annotations.h"
#include "core/link.h"
#include "core/transfer_plan.h"
#include "transport/transport.h"

namespace adxl {

// An async transfer until its final status was reported.
struct AsyncRequest {
  std::shared_ptr<Link> link;
  std::unique_ptr<Batch> batch;
  TransferPlan plan;
  TransferOp op = READ;
  const void *user_data = nullptr;  // HIXL TransferArgs::user_data, returned by the batch status
  // Statistics (link_stats.h): counted when the final status is reported.
  bool counted = false;
  Clock::time_point started{};
  uint64_t descriptors = 0;
};

class AsyncRequests {
 public:
  static constexpr size_t kMaxRequests = 1u << 16;

  // Reserves a slot; false (logged, naming `remote`) when the table is full.
  bool Reserve(const std::string &remote) ADXL_EXCLUDES(mu_);
  // Releases a reserved slot whose post failed.
  void Unreserve() ADXL_EXCLUDES(mu_);
  // Turns a reserved slot into a request; returns its id.
  uint64_t Commit(std::unique_ptr<AsyncRequest> request) ADXL_EXCLUDES(mu_);

  // The status of request `id`: WAITING while its batch runs; the final
  // COMPLETED or FAILED once, which removes it.  PARAM_INVALID for an
  // unknown id, NOT_CONNECTED (removed) when its link was disconnected.
  Status Poll(uint64_t id, TransferStatus *status) ADXL_EXCLUDES(mu_);

  // HIXL batch status: outstanding requests in submission order; at most
  // max_count results; with skip_waiting, running requests are left out.
  struct Result {
    uint64_t id;
    const void *user_data;
    TransferStatus status;
  };
  void PollAll(uint32_t max_count, bool skip_waiting, std::vector<Result> *results) ADXL_EXCLUDES(mu_);

 private:
  Mutex mu_;
  std::unordered_map<uint64_t, std::unique_ptr<AsyncRequest>> requests_ ADXL_GUARDED_BY(mu_);
  size_t reserved_ ADXL_GUARDED_BY(mu_) = 0;  // slots between Reserve and Commit / Unreserve
  uint64_t next_id_ ADXL_GUARDED_BY(mu_) = 1;
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_ASYNC_REQUESTS_H_
