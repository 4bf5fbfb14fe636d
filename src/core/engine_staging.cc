// Engine: TransferSync through the buffer pool (buffer_pool.h) when
// the local side is unregistered host memory and BufferPool is on.
#include <cinttypes>

#include "memory/device_memory.h"
#include "core/engine.h"
#include "common/log.h"

namespace adxl {

Status Engine::TransferStaged(const std::string &remote, TransferOp op,
                                                  const std::vector<TransferOpDesc> &descs,
                                                  Clock::time_point deadline, int32_t timeout_ms, bool *handled) {
  *handled = false;
  if (options_.pool_buffers == 0 || descs.empty() || (op != READ && op != WRITE)) return SUCCESS;
  for (const TransferOpDesc &d : descs) {
    if (d.local_addr == 0 || d.remote_addr == 0 || d.len == 0) return SUCCESS;  // the ordinary checks say why
  }
  LocalKind kind;
  {
    std::shared_lock<std::shared_mutex> l(reg_mu_);
    kind = ClassifyLocal(descs, *registry_);
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
  Status st = AcquireLink("TransferSync", remote, deadline, &link);
  if (st != SUCCESS) return st;
  BufferPool *pool = nullptr;
  {
    std::lock_guard<std::mutex> l(pool_mu_);
    if (!pool_) {
      std::string why;
      pool_ = BufferPool::Create(transport_, options_.pool_buffers, size_t{options_.pool_buffer_mib} << 20, &why);
      if (!pool_) {
        ADXL_ERROR("TransferSync %s to '%s': cannot set up the buffer pool (%u x %u MiB): %s", op_name,
                   remote.c_str(), options_.pool_buffers, options_.pool_buffer_mib, why.c_str());
        return RESOURCE_EXHAUSTED;
      }
    }
    pool = pool_.get();  // lives until Finalize, which waits for this call
  }
  auto post = [&](const TransferPlan &plan, std::unique_ptr<Batch> *batch) {
    return Post(link, op, plan.iov.data(), plan.iov.size(), batch);
  };
  auto abort = [&](Status why) {
    if (why == TIMEOUT) {
      FenceAfterTimeout(link);
    } else {
      link->Fail("a staged transfer failed in the transport");
    }
  };
  uint64_t bytes = 0, ops = 0;
  std::string why;
  st = pool->Run(link, op, descs, deadline, post, abort, &bytes, &ops, &why);
  (op == READ ? link->bytes_read : link->bytes_written).fetch_add(bytes, std::memory_order_relaxed);
  link->ops.fetch_add(ops, std::memory_order_relaxed);
  if (st == TIMEOUT) {
    ADXL_ERROR("TransferSync %s to '%s' (staged): timed out after %d ms (%s)%s", op_name, remote.c_str(), timeout_ms,
               why.c_str(), link->state() == LinkState::kFailed ? "; the link is failed until reconnected" : "");
  } else if (st != SUCCESS) {
    ADXL_ERROR("TransferSync %s to '%s' (staged): %s", op_name, remote.c_str(), why.c_str());
  }
  return st;
}

}  // namespace adxl
