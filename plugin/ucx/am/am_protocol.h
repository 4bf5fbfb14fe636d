// The AM transport's wire format (am_transport.h) and the buffer helpers its
// initiator (am_initiator.cc) and target (am_target.cc) sides share.
//
// Messages are arrays of little-endian u64 words (both ends run this code
// on the same architecture; UCP's worker address already ties them to it):
//
//   kWrite        [token][msg | nops << 32][budget][remote, len] x nops   data: the bytes, in order
//   kReadRequest  [token][msg | nops << 32][0][remote, len] x nops        no data
//                 (nops 0: a wire-up probe, answered by a kReadData of 0 bytes)
//   kAck          [token][msg | status << 32]                              no data
//   kReadData     [token][msg | status << 32][total]                       data: the bytes, in order
//
// `token` names the initiator's batch, `msg` the message within it.
// `budget`: microseconds left until the WRITE's deadline when the message
// was sent, 0 for none (am_transport.h, "Deadlines"); READ requests carry 0.
//
// Thread-safety: free functions over their arguments; no state, no locks.
#ifndef ADXL_PLUGIN_UCX_AM_AM_PROTOCOL_H_
#define ADXL_PLUGIN_UCX_AM_AM_PROTOCOL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <ucp/api/ucp.h>

namespace am_protocol {

// UCP active-message ids of the transport (any ids unused by other handlers of
// the worker; these spell 'A'..'D').
enum AmId : unsigned { kWrite = 0x41, kAck = 0x42, kReadRequest = 0x43, kReadData = 0x44 };

// Header sizes in words (see the layouts above).
constexpr size_t kRequestFixedWords = 3;
constexpr size_t kAckWords = 2;
constexpr size_t kReadDataWords = 3;

// Bound on waiting for requests of a closed endpoint to end (Abandon,
// ReleaseTargetOps): UCP fails them when the endpoint is force-closed, so
// this is a safety net, not a protocol timeout.
constexpr auto kAbandonWait = std::chrono::seconds(1);

// A UCP request's status as the transport reports it (ADXL_PLUGIN_*).
int StatusOf(ucs_status_t st);

// The second header word: a 32-bit message index and a 32-bit count/status.
uint64_t Pack32(uint32_t lo, int32_t hi);

// Parses a WRITE / READ request header: token, message word and budget
// into words[0..2], and the (address, length) pairs that follow into *pairs
// (copied: UCP does not promise the header any alignment).  False when
// malformed, or when it lists more than `max_ops` operations, or none
// unless `probe_ok` (READ requests: the wire-up probe).
bool ParseRequest(const void *header, size_t header_len, size_t max_ops, bool probe_ok,
                  uint64_t words[kRequestFixedWords], std::vector<uint64_t> *pairs);

// CLOCK_MONOTONIC now, in nanoseconds (the plugin ABI's deadline clock).
uint64_t MonotonicNs();

// A WRITE header's budget for deadline_ns (0: none): the microseconds left,
// rounded up, at least 1 (a deadline already passed still has one).
uint64_t BudgetUs(uint64_t deadline_ns);

// Points a request's buffer at an iov list: contiguous for one entry (so
// that its memh applies), UCP's iov datatype for several, nothing for none.
void SetBuffer(const std::vector<ucp_dt_iov_t> &iov, ucp_mem_h memh, ucp_request_param_t *p, void **buffer,
               size_t *count);

// Copies an iov list into one contiguous buffer.
void Gather(const std::vector<ucp_dt_iov_t> &iov, char *out);

// Copies `len` contiguous bytes over an iov list.
void Scatter(const void *data, size_t len, const std::vector<ucp_dt_iov_t> &iov);

// Waits for a UCP request while progressing the worker (bounded by
// kAbandonWait), then frees it.  Call outside ucp_worker_progress.
void WaitAndFree(ucp_worker_h worker, ucs_status_ptr_t req);

}  // namespace am_protocol

#endif  // ADXL_PLUGIN_UCX_AM_AM_PROTOCOL_H_
