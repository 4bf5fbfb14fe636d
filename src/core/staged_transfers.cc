#include "core/staged_transfers.h"

#include <algorithm>
#include <cinttypes>

#include "common/log.h"
#include "memory/device_memory.h"
#include "memory/local_kind.h"

namespace adxl {

StagedTransfers::StagedTransfers(std::shared_ptr<Transport> transport, const EngineOptions &options,
                                 const Registrar *registrar, Connector *connector)
    : transport_(std::move(transport)),
      buffers_(options.pool_buffers),
      buffer_mib_(options.pool_buffer_mib),
      registrar_(registrar),
      connector_(connector) {}

Status StagedTransfers::Run(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
                            Clock::time_point deadline, int32_t timeout_ms, bool *handled,
                            std::shared_ptr<Link> *link_out, uint64_t *bytes_out) {
  *handled = false;
  if (buffers_ == 0 || descs.empty() || (op != READ && op != WRITE)) return SUCCESS;
  for (const TransferOpDesc &d : descs) {
    if (d.local_addr == 0 || d.remote_addr == 0 || d.len == 0) return SUCCESS;  // the ordinary checks say why
  }
  LocalKind kind;
  {
    Registrar::RegistryView local(*registrar_);
    kind = ClassifyLocal(descs, local.registry());
  }
  if (kind == LocalKind::kRegistered) return SUCCESS;
  *handled = true;
  const char *op_name = op == READ ? "READ" : "WRITE";
  if (kind == LocalKind::kMixed) {
    ADXL_ERROR("TransferSync %s to '%s': some local ranges are registered and some are not; with a buffer pool "
               "all descriptors of one call must be of one kind",
               op_name, remote.c_str());
    return PARAM_INVALID;
  }
  // The pool copies with memcpy on the CPU: host memory only.
  for (const TransferOpDesc &d : descs) {
    if (IsDeviceAddress(d.local_addr)) {
      ADXL_ERROR("TransferSync %s to '%s': local 0x%" PRIxPTR " is unregistered device memory, which the buffer "
                 "pool (host memory) cannot stage; register it as MEM_DEVICE",
                 op_name, remote.c_str(), d.local_addr);
      return PARAM_INVALID;
    }
  }
  std::shared_ptr<Link> link;
  Status st = connector_->AcquireLink("TransferSync", remote, deadline, &link);
  if (st != SUCCESS) return st;
  *link_out = link;
  // Ranges the peer registered after our table was made: the pool checks
  // them (again) before anything moves, whatever the refresh answered.
  link->RefreshOnMiss(descs, deadline);
  BufferPool *pool = nullptr;
  {
    MutexLock l(&pool_mu_);
    if (!pool_) {
      std::string why;
      pool_ = BufferPool::Create(transport_, buffers_, size_t{buffer_mib_} << 20, &why);
      if (!pool_) {
        ADXL_ERROR("TransferSync %s to '%s': cannot set up the buffer pool (%u x %u MiB): %s", op_name,
                   remote.c_str(), buffers_, buffer_mib_, why.c_str());
        return RESOURCE_EXHAUSTED;
      }
    }
    pool = pool_.get();  // lives as long as this object, which outlives every call
  }
  auto post = [&](const TransferPlan &plan, std::unique_ptr<Batch> *batch) {
    return link->Post(op, plan.iov.data(), plan.iov.size(), batch, deadline);
  };
  bool aborted = false;
  auto abort = [&](Status why) {
    aborted = true;
    if (why == TIMEOUT) {
      link->FenceAfterTimeout();
    } else {
      link->Fail("a staged transfer failed in the transport");
    }
  };
  uint64_t bytes = 0, ops = 0;
  std::string why;
  st = pool->Run(link, op, descs, deadline, post, abort, &bytes, &ops, &why);
  (op == READ ? link->bytes_read : link->bytes_written).fetch_add(bytes, std::memory_order_relaxed);
  link->ops.fetch_add(ops, std::memory_order_relaxed);
  *bytes_out = bytes;
  if (st == TIMEOUT && !aborted) {
    // No buffer came free in time: nothing of this call is in flight, so
    // there is nothing to fence, but the call ends as every TIMEOUT does
    // (docs/contract.md §6.4: the link is then failed).
    link->Fail("a transfer timed out");
  }
  if (st == TIMEOUT) {
    ADXL_ERROR("TransferSync %s to '%s' (staged): timed out after %d ms (%s)%s", op_name, remote.c_str(), timeout_ms,
               why.c_str(), link->state() == LinkState::kFailed ? "; the link is failed until reconnected" : "");
  } else if (st != SUCCESS) {
    ADXL_ERROR("TransferSync %s to '%s' (staged): %s", op_name, remote.c_str(), why.c_str());
  }
  return st;
}

}  // namespace adxl
