// Transfers: TransferSync, TransferAsync and their statuses (docs/contract.md
// §6): validation, the plan (transfer_plan.h), the sync slices and deadline
// (sync_slicer.h), the fence after a TIMEOUT (Link::FenceAfterTimeout), the
// async requests (async_requests.h) and staging (staged_transfers.h).
//
// A sync call waits on the caller's thread until every batch ended or its
// deadline passed; on TIMEOUT the link is fenced before the call returns, so
// nothing lands in either side's memory after it.  Every transfer is counted
// once against its link's LinkCounters (link_stats.h) when it ends: sync
// calls on return, async ones when their final status is reported.
// Thread-safety: any thread.  The class owns no lock (its parts lock
// themselves).  It plans from read-only views of the registrations and the
// link's regions (Registrar::RegistryView, then Link::RegionsView: the
// engine.h order), held for the plan alone; no lock is held while a call
// posts, refreshes or waits (batch_wait.h).
#ifndef ADXL_SRC_CORE_TRANSFERS_H_
#define ADXL_SRC_CORE_TRANSFERS_H_

#include <memory>
#include <string>
#include <vector>

#include "adxl/adxl_types.h"
#include "config/options.h"
#include "core/async_requests.h"
#include "core/connector.h"
#include "core/link.h"
#include "core/registrar.h"
#include "core/staged_transfers.h"
#include "core/transfer_plan.h"
#include "transport/transport.h"

namespace adxl {

class Transfers {
 public:
  // `registrar` and `connector` must outlive this object.
  Transfers(std::shared_ptr<Transport> transport, const EngineOptions &options, const Registrar *registrar,
            Connector *connector);

  Status Sync(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs, int32_t timeout_ms);
  Status Async(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
               const void *user_data, TransferReq *req);
  Status GetStatus(TransferReq req, TransferStatus *status);
  // HIXL batch status (AsyncRequests::PollAll).
  void GetStatuses(uint32_t max_count, bool skip_waiting, std::vector<AsyncRequests::Result> *results);

 private:
  // Validation, link and plan, shared by sync and async transfers.
  // *link is set once the link is known, also when planning then fails.
  Status Prepare(const char *api, const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                 Clock::time_point connect_deadline, std::shared_ptr<Link> *link, TransferPlan *plan);
  // BuildTransferPlan (transfer_plan.h) against this engine's registrations
  // and `link`'s regions, under their read-only views.
  Status Plan(const std::vector<TransferOpDesc> &descs, const Link &link, TransferPlan *plan,
              std::string *why) const;
  // Sync without counting, its deadline `timeout_ms` after `start`: *link
  // is the link it used (null when it never got one), *bytes what it moved
  // on SUCCESS.
  Status SyncOn(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                int32_t timeout_ms, Clock::time_point start, std::shared_ptr<Link> *link, uint64_t *bytes);

  const std::shared_ptr<Transport> transport_;
  const bool counting_;  // per-link statistics (link_stats.h); off only to measure their cost
  const Registrar *const registrar_;
  Connector *const connector_;
  AsyncRequests requests_;
  StagedTransfers staged_;
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_TRANSFERS_H_
