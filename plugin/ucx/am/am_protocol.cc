#include "am/am_protocol.h"

#include <time.h>

#include <algorithm>
#include <cstring>

#include "adxl/plugin/adxl_plugin.h"

namespace am_protocol {

int StatusOf(ucs_status_t st) {
  if (st == UCS_OK) return ADXL_PLUGIN_OK;
  if (st == UCS_ERR_CANCELED) return ADXL_PLUGIN_ERR_CANCELED;
  return ADXL_PLUGIN_ERR_IO;
}

uint64_t Pack32(uint32_t lo, int32_t hi) {
  return static_cast<uint64_t>(lo) | (static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32);
}

void SetBuffer(const std::vector<ucp_dt_iov_t> &iov, ucp_mem_h memh, ucp_request_param_t *p, void **buffer,
               size_t *count) {
  if (iov.size() == 1) {
    *buffer = iov[0].buffer;
    *count = iov[0].length;
    if (memh != nullptr) {
      p->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
      p->memh = memh;
    }
  } else if (iov.empty()) {
    *buffer = nullptr;
    *count = 0;
  } else {
    p->op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p->datatype = ucp_dt_make_iov();
    *buffer = const_cast<ucp_dt_iov_t *>(iov.data());
    *count = iov.size();
  }
}

void Gather(const std::vector<ucp_dt_iov_t> &iov, char *out) {
  for (const ucp_dt_iov_t &v : iov) {
    memcpy(out, v.buffer, v.length);
    out += v.length;
  }
}

void Scatter(const void *data, size_t len, const std::vector<ucp_dt_iov_t> &iov) {
  const char *p = static_cast<const char *>(data);
  for (const ucp_dt_iov_t &v : iov) {
    const size_t n = std::min(len, v.length);
    memcpy(v.buffer, p, n);
    p += n;
    len -= n;
  }
}

void WaitAndFree(ucp_worker_h worker, ucs_status_ptr_t req) {
  if (req == nullptr || UCS_PTR_IS_ERR(req)) return;
  const auto until = std::chrono::steady_clock::now() + kAbandonWait;
  while (ucp_request_check_status(req) == UCS_INPROGRESS && std::chrono::steady_clock::now() < until) {
    ucp_worker_progress(worker);
  }
  ucp_request_free(req);
}

uint64_t MonotonicNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

uint64_t BudgetUs(uint64_t deadline_ns) {
  if (deadline_ns == 0) return 0;
  const uint64_t now = MonotonicNs();
  return deadline_ns > now ? std::max<uint64_t>(1, (deadline_ns - now + 999) / 1000) : 1;
}

bool ParseRequest(const void *header, size_t header_len, size_t max_ops, bool probe_ok,
                  uint64_t words[kRequestFixedWords], std::vector<uint64_t> *pairs) {
  if (header_len < kRequestFixedWords * sizeof(uint64_t) || header_len % sizeof(uint64_t) != 0) return false;
  memcpy(words, header, kRequestFixedWords * sizeof(uint64_t));
  const size_t n = static_cast<size_t>(words[1] >> 32);
  if ((n == 0 && !probe_ok) || n > max_ops || header_len != (kRequestFixedWords + 2 * n) * sizeof(uint64_t)) {
    return false;
  }
  pairs->resize(2 * n);
  // A probe has no pairs: an empty vector's data() may be null, which
  // memcpy must not get even for 0 bytes.
  if (n > 0) {
    memcpy(pairs->data(), static_cast<const char *>(header) + kRequestFixedWords * sizeof(uint64_t),
           2 * n * sizeof(uint64_t));
  }
  return true;
}

}  // namespace am_protocol
