// HccsLane::Post: the HCCS lane's batches (hccs_lane.h).
#include "hccs/hccs_lane.h"

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hccs/cma_lane.h"
#include "hccs/mapped_lane.h"
#include "ucx_context.h"

void HccsLane::Post(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, adxl_plugin_batch *batch) {
  CmaLane::Op small[kStackOps];
  std::vector<CmaLane::Op> large;
  if (count > kStackOps) large.resize(count);
  CmaLane::Op *ops = count > kStackOps ? large.data() : small;
  size_t n_ops = 0;
  bool mapped = false;
  for (size_t i = 0; i < count; ++i) {
    const adxl_plugin_iov_t &v = iov[i];
    void *local = reinterpret_cast<void *>(static_cast<uintptr_t>(v.local_addr));
    if (MappedLane::Contains(v.remote->mapped, v.remote_addr, v.length)) {
      if (!mapped) {
        // The mapping outlives its owner: a batch to a peer that is gone
        // fails, as on cma (whose system call says ESRCH).  kill(pid, 0) is
        // a system call, so at most one per kAliveCheckNs per endpoint: a
        // batch within that time of the peer's death may still land in its
        // orphaned pages.
        mapped = true;
        const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now().time_since_epoch())
                                .count();
        const int64_t last = ep->alive_checked_ns.load(std::memory_order_relaxed);
        if (now - last < kAliveCheckNs) {
          // checked a moment ago
        } else if (ep->alive_checked_ns.store(now, std::memory_order_relaxed), kill(ep->cma_ep->pid, 0) != 0 &&
                   errno == ESRCH) {
          ep->ctx->log(ADXL_PLUGIN_LOG_ERROR, "mapped %s batch: the peer process is gone", put ? "put" : "get");
          ep->failed.store(ADXL_PLUGIN_ERR_IO);
          batch->status.store(ADXL_PLUGIN_ERR_IO);
          return;
        }
      }
      MappedLane::Copy(put, v.remote->mapped, local, v.remote_addr, v.length);
      continue;
    }
    if (!v.remote->cma_ok) {
      batch->status.store(ADXL_PLUGIN_ERR_INVALID);
      return;
    }
    ops[n_ops++] = {local, v.local != nullptr ? v.local->cma_memh : UCT_MEM_HANDLE_NULL, v.length, v.remote_addr,
                    v.remote->cma.rkey};
  }
  int err_no = 0;
  ucs_status_t st = n_ops == 0 ? UCS_OK : ep->ctx->cma.Copy(put, ep->cma_ep, ops, n_ops, &err_no);
  if (st != UCS_OK) {
    ep->ctx->log(ADXL_PLUGIN_LOG_ERROR, "cma %s batch of %zu operations failed: %s (%s)", put ? "put" : "get", count,
                 ucs_status_string(st), err_no == ESRCH ? "the peer process is gone" : strerror(err_no));
    ep->failed.store(ADXL_PLUGIN_ERR_IO);
    batch->status.store(ADXL_PLUGIN_ERR_IO);
    return;
  }
  batch->status.store(ADXL_PLUGIN_OK, std::memory_order_release);
}
