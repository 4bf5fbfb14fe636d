#include "core/transfers.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "config/option_table.h"
#include "core/batch_wait.h"
#include "core/sync_slicer.h"

namespace adxl {
namespace {

constexpr int32_t kAsyncAutoConnectMs = 3000;  // AutoConnect budget of TransferAsync (docs/contract.md §5.8)

const char *OpName(TransferOp op) { return op == READ ? "READ" : "WRITE"; }

// ADXL_STATS_DISABLE=1 turns transfer counting off.  It exists only to
// measure what counting costs (docs/link_stats.md); nothing else
// should set it.
bool CountingEnabled() {
  const char *e = EnvOnlySetting("ADXL_STATS_DISABLE");
  return e == nullptr || strcmp(e, "1") != 0;
}

}  // namespace

Transfers::Transfers(std::shared_ptr<Transport> transport, const EngineOptions &options, const Registrar *registrar,
                     Connector *connector)
    : transport_(transport),
      counting_(CountingEnabled()),
      registrar_(registrar),
      connector_(connector),
      staged_(std::move(transport), options, registrar, connector) {}

Status Transfers::Prepare(const char *api, const std::string &remote, TransferOp op,
                          const std::vector<TransferOpDesc> &descs, Clock::time_point connect_deadline,
                          std::shared_ptr<Link> *link_out, TransferPlan *plan) {
  if (op != READ && op != WRITE) {
    ADXL_ERROR("%s to '%s': operation %d is neither READ nor WRITE", api, remote.c_str(), static_cast<int>(op));
    return PARAM_INVALID;
  }
  if (descs.empty()) {
    ADXL_ERROR("%s to '%s': empty descriptor list", api, remote.c_str());
    return PARAM_INVALID;
  }
  for (size_t i = 0; i < descs.size(); ++i) {
    if (descs[i].local_addr == 0 || descs[i].remote_addr == 0 || descs[i].len == 0) {
      ADXL_ERROR("%s to '%s': descriptor %zu has a zero %s", api, remote.c_str(), i,
                 descs[i].len == 0 ? "length" : "address");
      return PARAM_INVALID;
    }
  }
  std::shared_ptr<Link> link;
  Status st = connector_->AcquireLink(api, remote, connect_deadline, &link);
  if (st != SUCCESS) return st;
  *link_out = link;  // also when the plan fails: the error is counted against the link
  std::string why;
  st = Plan(descs, *link, plan, &why);
  // A range the peer registered after our table was made (Link::RefreshOnMiss):
  // planned once more.
  if (st == PARAM_INVALID && link->RefreshOnMiss(descs, connect_deadline)) {
    *plan = TransferPlan{};
    why.clear();
    st = Plan(descs, *link, plan, &why);
  }
  if (st != SUCCESS) {
    ADXL_ERROR("%s %s to '%s': %s", api, OpName(op), remote.c_str(), why.c_str());
    return st;
  }
  return SUCCESS;
}

Status Transfers::Plan(const std::vector<TransferOpDesc> &descs, const Link &link, TransferPlan *plan,
                       std::string *why) const {
  // Both tables held still for the plan alone, in the documented order
  // (engine.h); the plan keeps what it uses alive after.
  Registrar::RegistryView local(*registrar_);
  Link::RegionsView remote(link);
  return BuildTransferPlan(descs, local.registry(), remote.table(), plan, why);
}

Status Transfers::Sync(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                       int32_t timeout_ms) {
  // Counted once per call, whatever way it ended: one clock read more than
  // the call needs anyway (its deadline starts at `start`) and a few relaxed
  // additions to counters of this link alone.
  const Clock::time_point start = Clock::now();
  std::shared_ptr<Link> link;
  uint64_t bytes = 0;
  const Status st = SyncOn(remote, op, descs, timeout_ms, start, &link, &bytes);
  if (counting_ && link) link->stats->RecordTransfer(op, st, descs.size(), bytes, Clock::now() - start);
  return st;
}

Status Transfers::SyncOn(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                         int32_t timeout_ms, Clock::time_point start, std::shared_ptr<Link> *link_out,
                         uint64_t *bytes_out) {
  if (timeout_ms <= 0) {
    ADXL_ERROR("TransferSync to '%s': timeout %d ms must be > 0", remote.c_str(), timeout_ms);
    return PARAM_INVALID;
  }
  const Clock::time_point deadline = start + std::chrono::milliseconds(timeout_ms);
  bool staged = false;
  Status st = staged_.Run(remote, op, descs, deadline, timeout_ms, &staged, link_out, bytes_out);
  if (staged) return st;
  std::shared_ptr<Link> &link = *link_out;
  TransferPlan plan;
  st = Prepare("TransferSync", remote, op, descs, deadline, &link, &plan);
  if (st != SUCCESS) return st;
  // Posted in slices with the deadline checked before each: lanes that copy
  // inside Post (cma, mapped memory) would otherwise run a large batch far
  // past the caller's deadline.  Lanes that only queue work have every slice
  // in flight at once, as if posted whole.  A slice is no larger than the
  // time left could move (SyncSlicer::CapFor): with a short deadline even
  // the network lane's Post, which gathers into staging buffers, returns
  // near it.
  std::vector<std::unique_ptr<Batch>> batches;
  int rc = ADXL_PLUGIN_OK;
  auto timed_out = [&] {
    link->FenceAfterTimeout();
    ADXL_ERROR("TransferSync %s to '%s': timed out after %d ms; the link is failed until reconnected", OpName(op),
               remote.c_str(), timeout_ms);
    return TIMEOUT;
  };
  if (Clock::now() >= deadline) {
    // Planning used the whole deadline (a large plan on a loaded machine):
    // nothing was posted, so there is nothing to fence, but the call ends as
    // every TIMEOUT does (docs/contract.md §6.4).
    link->Fail("a transfer timed out");
    ADXL_ERROR("TransferSync %s to '%s': timed out after %d ms before anything was posted; the link is failed until "
               "reconnected",
               OpName(op), remote.c_str(), timeout_ms);
    return TIMEOUT;
  }
  Status refused = SUCCESS;  // a slice the transport refused: the earlier ones still finish first
  std::vector<adxl_plugin_iov_t> slice;
  SyncSlicer slicer(plan.iov);
  while (!slicer.done()) {
    if (!batches.empty() && Clock::now() >= deadline) return timed_out();
    if (!slicer.Next(&slice, SyncSlicer::CapFor(deadline - Clock::now()))) break;
    std::unique_ptr<Batch> batch;
    refused = link->Post(op, slice.data(), slice.size(), &batch, deadline);
    if (refused != SUCCESS) break;
    batches.push_back(std::move(batch));
  }
  BatchWait wait(*transport_);
  for (const auto &batch : batches) {
    if (wait.Until(*batch, deadline, &rc) == BatchWait::Outcome::kTimedOut) return timed_out();
    // Failed once the deadline had passed: a post_by plugin drops what
    // would land late (the same-node copy stops at the deadline inside
    // post), and that is this call's timeout.
    if (rc != ADXL_PLUGIN_OK && Clock::now() >= deadline) return timed_out();
    if (rc != ADXL_PLUGIN_OK) break;
  }
  if (refused != SUCCESS) return refused;
  if (rc != ADXL_PLUGIN_OK) {
    if (link->disconnected()) {
      ADXL_ERROR("TransferSync %s to '%s': the link was disconnected meanwhile", OpName(op), remote.c_str());
    } else {
      link->Fail("transfer failed in the transport (status " + std::to_string(rc) + ")");
      ADXL_ERROR("TransferSync %s to '%s': failed in the transport (status %d)", OpName(op), remote.c_str(), rc);
    }
    return FAILED;
  }
  (op == READ ? link->bytes_read : link->bytes_written).fetch_add(plan.bytes, std::memory_order_relaxed);
  link->ops.fetch_add(plan.iov.size(), std::memory_order_relaxed);
  *bytes_out = plan.bytes;
  return SUCCESS;
}

Status Transfers::Async(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                        const void *user_data, TransferReq *req) {
  auto r = std::make_unique<AsyncRequest>();
  r->counted = counting_;
  if (counting_) r->started = Clock::now();
  // A request that never started counts as an error of its link at once;
  // one that started is counted when its final status is reported.
  auto refused = [&r, op](Status st) {
    if (r->counted && r->link) r->link->stats->RecordTransfer(op, st, 0, 0, {});
    return st;
  };
  Status st = Prepare("TransferAsync", remote, op, descs,
                      Clock::now() + std::chrono::milliseconds(kAsyncAutoConnectMs), &r->link, &r->plan);
  if (st != SUCCESS) return refused(st);
  // The slot is reserved before the post and released if the post fails.
  if (!requests_.Reserve(remote)) return refused(RESOURCE_EXHAUSTED);
  st = r->link->Post(op, r->plan.iov.data(), r->plan.iov.size(), &r->batch);
  if (st != SUCCESS) {
    requests_.Unreserve();
    return refused(st);
  }
  r->descriptors = descs.size();
  r->op = op;
  r->user_data = user_data;
  *req = reinterpret_cast<TransferReq>(static_cast<uintptr_t>(requests_.Commit(std::move(r))));
  return SUCCESS;
}

Status Transfers::GetStatus(TransferReq req, TransferStatus *status) {
  *status = TransferStatus::FAILED;
  if (req == nullptr) {
    ADXL_ERROR("GetTransferStatus: null request");
    return FAILED;
  }
  transport_->Progress();
  return requests_.Poll(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(req)), status);
}

void Transfers::GetStatuses(uint32_t max_count, bool skip_waiting, std::vector<AsyncRequests::Result> *results) {
  transport_->Progress();
  requests_.PollAll(max_count, skip_waiting, results);
}

}  // namespace adxl

