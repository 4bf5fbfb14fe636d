// The UCX plugin's ABI handles other than the context (ucx_context.h):
// registrations, endpoints, remote keys and batches, as the movers share
// them.  An endpoint and a key each name the mover bound to them
// (ucx_bind.h), which alone reads the fields that are its own.
//
// Thread-safety: a handle's plain fields are written only by the call that
// creates it (and an endpoint's by the Cancel of ep_destroy) and read
// afterwards; the atomics are what changes while it is in use (an
// endpoint's failure, a batch's status and references).  No locks.
#ifndef ADXL_PLUGIN_UCX_UCX_HANDLES_H_
#define ADXL_PLUGIN_UCX_UCX_HANDLES_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include "adxl/plugin/adxl_plugin.h"
#include "core/mover.h"
#include "hccs/cma_transport.h"
#include "hccs/shared_mapping.h"
#include "paths/stripe.h"

class NetPath;
class PathLink;

struct adxl_plugin_mem {
  ucp_mem_h memh = nullptr;
  bool device = false;  // moves only as UCP RMA (rma_mover.h)
  uct_mem_h cma_memh = UCT_MEM_HANDLE_NULL;
  bool cma_ok = false;
  std::string cma_key;   // packed at registration
  void *addr = nullptr;  // host registrations: key of the AM transport's table
  size_t len = 0;
  std::string share_path;  // MallocMem memory, or a shared file mapping: same-node peers may map this
  bool share_given = false;  // the engine gave share_path (even empty): MappedMover searches for none
  uint64_t share_offset = 0;
  int share_fd = -1;       // found by MappedMover::Register: closed at deregistration
  // Host registrations with network paths: the region registered with each
  // path's context (index = the path's among PathsMover's, paths_mover.h).
  std::vector<ucp_mem_h> path_memh;
};

struct adxl_plugin_ep {
  adxl_plugin_context *ctx = nullptr;
  uint64_t id = 0;  // never reused: names the endpoint to the AM transport
  uint32_t lane = ADXL_PLUGIN_LANE_RDMA;
  // The mover bound to the endpoint (ucx_bind.h): its flushes, teardown
  // (Cancel), description and UCP failure reports.  An atomic: EpError
  // reads it under a worker lock while ep_create still binds (an AM
  // endpoint becomes a network-paths one once its paths pair up).
  std::atomic<Mover *> mover{nullptr};
  ucp_ep_h ep = nullptr;            // RDMA lane; HCCS lane: device memory only
  // RDMA lane over active messages: `ep` and these further connections to
  // the same peer (ADXL_UCX_RDMA_CONNECTIONS - 1 of them), all under `id`;
  // a batch's messages take them in turn (AmMover::Post).
  std::vector<ucp_ep_h> more_eps;
  // RDMA lane over active messages with network paths (net_paths.h): one
  // connection per path paired with the peer's (path_link.h); when set,
  // batches move over these, striped (stripe.h), and not over `ep`.  Shared
  // with the striped batches in flight and the failover worker
  // (path_failover.h), which may use it after the endpoint is gone.
  std::shared_ptr<PathLink> paths;
  CmaTransport::Peer *cma_ep = nullptr;  // HCCS lane
  // HCCS lane: peer regions reached by direct mapping, by what they are
  // (SharedMapping::kKinds: memfd, shm, hugetlbfs, file), for ep_describe.
  std::atomic<int> mapped_kinds[4] = {};
  std::atomic<int> failed{ADXL_PLUGIN_OK};
  // ep_cancel was called: posts from then on fail with CANCELED, and a
  // same-node copy in progress stops at its next piece (hccs/copy_stop.h).
  // Set while posts may run on other threads; never cleared.
  std::atomic<bool> cancelled{false};
  std::atomic<int64_t> alive_checked_ns{0};  // HCCS lane, mapped regions: the peer's last liveness check (MappedMover::Post)
};

struct adxl_plugin_rkey {
  // The mover bound to the key (ucx_bind.h): its operations' and its
  // description's; rkey_destroy gives it back what it unpacked.  Null until
  // bound (a key that fails to unpack).
  Mover *mover = nullptr;
  bool device = false;        // the peer's region is device memory: UCP RMA only
  ucp_rkey_h rkey = nullptr;  // RDMA lane, and device regions on either lane (null: unreachable)
  uct_rkey_bundle_t cma{};    // HCCS lane, bound to cma (cma_mover.h)
  SharedMapping::Region mapped;  // HCCS lane, bound to the mapping: memory the peer shared (mapped_mover.h)
};

// Shared by the engine (until release) and a lane that completes it later
// (until its callback): whoever drops the last reference frees it.
struct adxl_plugin_batch {
  std::atomic<int> status{ADXL_PLUGIN_IN_PROGRESS};
  std::atomic<int> refs{1};
  int post_error = ADXL_PLUGIN_OK;
  // Not complete before this CLOCK_MONOTONIC time (ns; 0: no wait), even
  // once `status` says so: a WRITE re-posted after a network path failed
  // waits until nothing of the failed attempt can land (net_paths.cc).
  // Set before `status`.
  std::atomic<int64_t> ready_at_ns{0};  // RMA mover: set before the flush is issued
  // RMA mover: flushes not ended yet (a wire-up flush covers every UCP
  // endpoint of an endpoint with several connections), and the first error
  // among them; the batch completes when the last one ends.
  std::atomic<int> flushes{0};
  std::atomic<int> flush_error{ADXL_PLUGIN_OK};
  void Unref() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

#endif  // ADXL_PLUGIN_UCX_UCX_HANDLES_H_
