// MappedMover (mapped_mover.h): registration, binding and batches of the
// HCCS lane over the direct mapping.
#include "hccs/mapped_mover.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "hccs/cma_transport.h"
#include "hccs/copy_stop.h"
#include "hccs/shared_mapping.h"
#include "ucx_handles.h"

int MappedMover::Register(void *addr, size_t len, adxl_plugin_mem *mem) {
  if (mem->device || mem->share_given) return ADXL_PLUGIN_OK;
  SharedMapping::Shareable sh;
  std::string why;
  if (!SharedMapping::FindShareable(addr, len, &sh, &why)) return ADXL_PLUGIN_OK;  // private memory: cma
  try {
    mem->share_path = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(sh.fd);
  } catch (...) {
    close(sh.fd);
    throw;
  }
  mem->share_fd = sh.fd;
  mem->share_offset = sh.offset;
  log_(ADXL_PLUGIN_LOG_INFO, "region %p (%zu bytes) is a shared %s mapping: same-node peers map it directly", addr,
       len, sh.kind);
  return ADXL_PLUGIN_OK;
}

void MappedMover::Deregister(adxl_plugin_mem *mem) {
  if (mem->share_fd >= 0) close(mem->share_fd);
  mem->share_fd = -1;
}

bool MappedMover::UnpackKey(const ucx_blob::Key &k, adxl_plugin_rkey *rkey) {
  if (k.share_path.empty()) return false;
  std::string why;
  if (!SharedMapping::Map(k.share_path, k.base, k.len, k.offset, &rkey->mapped, &why)) {
    log_(ADXL_PLUGIN_LOG_INFO, "cannot map the peer's shared region %s (%s); using cma", k.share_path.c_str(),
         why.c_str());
    return false;
  }
  return true;
}

void MappedMover::ReleaseKey(adxl_plugin_rkey *rkey) { SharedMapping::Unmap(&rkey->mapped); }

std::string MappedMover::DescribeKey(const adxl_plugin_rkey *rkey) const {
  return std::string("mapped/") + rkey->mapped.kind;
}

void MappedMover::Post(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
                       adxl_plugin_batch *batch) {
  if (count > 0) {
    // The mapping outlives its owner: a batch to a peer that is gone fails,
    // as on cma (whose system call says ESRCH).  kill(pid, 0) is a system
    // call, so at most one per kAliveCheckNs per endpoint: a batch within
    // that time of the peer's death may still land in its orphaned pages.
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    const int64_t last = ep->alive_checked_ns.load(std::memory_order_relaxed);
    if (now - last >= kAliveCheckNs) {
      ep->alive_checked_ns.store(now, std::memory_order_relaxed);
      if (kill(ep->cma_ep->pid, 0) != 0 && errno == ESRCH) {
        log_(ADXL_PLUGIN_LOG_ERROR, "mapped %s batch: the peer process is gone", put ? "put" : "get");
        ep->failed.store(ADXL_PLUGIN_ERR_IO);
        batch->status.store(ADXL_PLUGIN_ERR_IO);
        return;
      }
    }
  }
  const CopyStop stop{&ep->cancelled, deadline_ns, piece_delay_us_};
  // Bytes copied since the last check: one check per CopyStop::kPieceBytes,
  // across operations (a check per 4 KiB operation would cost more than
  // its copy), an operation cut where a piece ends inside it.
  size_t since = CopyStop::kPieceBytes;  // checked before the first byte
  for (size_t i = 0; i < count; ++i) {
    const adxl_plugin_iov_t &v = iov[i];
    // The engine checked the range against the peer's region, which is the
    // mapped one: outside it is a bad argument, never a stray write.
    if (v.remote == nullptr || !SharedMapping::Contains(v.remote->mapped, v.remote_addr, v.length)) {
      log_(ADXL_PLUGIN_LOG_ERROR, "mapped %s batch: operation %zu lies outside the peer's mapped region",
           put ? "put" : "get", i);
      batch->status.store(ADXL_PLUGIN_ERR_INVALID);
      return;
    }
    char *local = reinterpret_cast<char *>(static_cast<uintptr_t>(v.local_addr));
    for (uint64_t done = 0; done < v.length;) {
      if (since >= CopyStop::kPieceBytes) {
        if (const int e = stop.Check()) {
          // Cancelled: the endpoint is going (the engine knows why).  The
          // deadline: the rest would land late; the endpoint goes on.
          log_(e == ECANCELED ? ADXL_PLUGIN_LOG_DEBUG : ADXL_PLUGIN_LOG_INFO, "mapped %s batch: %s", put ? "put" : "get",
               e == ECANCELED ? "stopped, the endpoint was cancelled" : "the deadline passed, the rest dropped");
          batch->status.store(e == ECANCELED ? ADXL_PLUGIN_ERR_CANCELED : ADXL_PLUGIN_ERR_IO);
          return;
        }
        since = 0;
      }
      const uint64_t n = std::min<uint64_t>(v.length - done, CopyStop::kPieceBytes - since);
      SharedMapping::Copy(put, v.remote->mapped, local + done, v.remote_addr + done, n);
      done += n;
      since += n;
    }
  }
  batch->status.store(ADXL_PLUGIN_OK, std::memory_order_release);
}

bool MappedMover::EndpointFailed(adxl_plugin_ep *ep, int why) {
  ep->failed.store(why);
  return true;
}
