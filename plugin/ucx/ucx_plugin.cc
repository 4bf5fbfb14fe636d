// The UCX transport plugin: the ADXL plugin ABI (include/adxl/plugin) on UCX.
// This file is the ABI only: one thunk per entry of the operations table,
// each wrapped in Guarded<> (no C++ exception crosses the C ABI: one that
// escapes an entry becomes ADXL_PLUGIN_ERR_NO_RESOURCE), turning ABI
// arguments into calls of the lanes.
//
// Which lane runs where:
//  - HCCS lane (same node), host memory (hccs_lane.h): the direct mapping (mapped_lane.h)
//    for peer regions their owner shared as a file (MallocMem with
//    EnableUseFabricMem=1) and this process could map at key unpack, memcpy
//    by the posting thread; every other region over UCT's cross-memory
//    attach (cma_lane.h, process_vm_readv/writev by the posting thread and
//    the lane's copy threads).  Both are truly one-sided and synchronous: the
//    batch is complete when post returns.
//  - RDMA lane (other nodes), host memory: the AM lane (am_lane.h, UCP
//    active messages into addresses the receiver validates) unless an
//    InfiniBand device exists (/sys/class/infiniband), then UCP RMA
//    (rma_lane.h); ADXL_UCX_RDMA_PROTOCOL=am|rma overrides, and UCP RMA is
//    also the fallback when the AM lane cannot start.  UCP runs without its
//    shared-memory transports (UCX_TLS=^sm unless the user sets UCX_TLS).
//    With ADXL_UCX_RDMA_PATHS the AM lane runs over several network paths,
//    one connection per path, batches striped over them (net_paths.h).
//  - Device memory, on both lanes: UCP RMA (rma_lane.h), with a UCP endpoint
//    beside the cma one on the HCCS lane; offered only where UCX has the
//    memory type and its newer RMA protocols (ucx_context.cc).
// Addresses and packed keys: ucx_blob.h.  The UCP context, worker, settings
// and progress thread: ucx_context.h.  Locks: none here; see the lanes and
// ucx_context.h for theirs and their nesting under UCP's worker lock.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <sched.h>
#include <unistd.h>
#include <vector>

#include <ucp/api/ucp.h>

#include "adxl/plugin/adxl_plugin.h"
#include "am/am_lane.h"
#include "core/fault_injection.h"
#include "core/ucx_blob.h"
#include "hccs/cma_lane.h"
#include "hccs/hccs_lane.h"
#include "hccs/mapped_lane.h"
#include "paths/net_paths.h"
#include "paths/path_failover.h"
#include "paths/path_link.h"
#include "rma/rma_lane.h"
#include "ucx_context.h"
#include "ucx_handles.h"

namespace {

// The one exception-to-status guard: Guarded<Impl>::Call has Impl's
// signature, is noexcept, and maps an exception to ERR_NO_RESOURCE (int
// results), 0 (other results) or nothing (void: the release entries, which
// throw nothing in practice).
template <auto Impl>
struct Guarded;
template <typename R, typename... A, R (*Impl)(A...)>
struct Guarded<Impl> {
  static R Call(A... a) noexcept {
    try {
      return Impl(a...);
    } catch (...) {
      if constexpr (std::is_void_v<R>) {
        return;
      } else if constexpr (std::is_same_v<R, int>) {
        return ADXL_PLUGIN_ERR_NO_RESOURCE;
      } else {
        return R{};
      }
    }
  }
};

// Runs f at scope exit.
template <typename F>
struct Defer {
  F f;
  ~Defer() { f(); }
};
template <typename F>
Defer(F) -> Defer<F>;

// MappedLane::Region::kind values, in the order EpDescribe lists them.
const char *const kMappedKinds[4] = {"memfd", "shm", "hugetlbfs", "file"};

int CopyOut(const std::string &blob, void *buf, size_t *len) {
  const size_t cap = *len;
  *len = blob.size();
  if (buf == nullptr || cap < blob.size()) return ADXL_PLUGIN_ERR_NO_RESOURCE;
  memcpy(buf, blob.data(), blob.size());
  return ADXL_PLUGIN_OK;
}

int Open(const adxl_plugin_config_t *cfg, adxl_plugin_context_t **out) {
  if (out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  return adxl_plugin_context::Open(cfg, out);
}

void Close(adxl_plugin_context_t *ctx) {
  if (ctx != nullptr) adxl_plugin_context::Close(ctx);
}

int Query(adxl_plugin_context_t *ctx, adxl_plugin_caps_t *caps) {
  if (ctx == nullptr || caps == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  *caps = adxl_plugin_caps_t{};
  caps->flags = ADXL_PLUGIN_CAP_MEM_HOST | (ctx->device_memory ? ADXL_PLUGIN_CAP_MEM_DEVICE : 0u);
  snprintf(caps->transports, sizeof(caps->transports), "%s", ctx->transports.c_str());
  return ADXL_PLUGIN_OK;
}

int GetAddress(adxl_plugin_context_t *ctx, void *buf, size_t *len) {
  if (ctx == nullptr || len == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  ucp_address_t *addr = nullptr;
  size_t n = 0;
  ucs_status_t st = ucp_worker_get_address(ctx->worker, &addr, &n);
  if (st != UCS_OK) return FromUcs(st);
  Defer release{[&] { ucp_worker_release_address(ctx->worker, addr); }};
  ucx_blob::Address a;
  a.ucp.assign(reinterpret_cast<const char *>(addr), n);
  a.cma = ctx->cma.address();
  if (!AddPathAddresses(ctx, &a)) return ADXL_PLUGIN_ERR_NO_RESOURCE;
  std::string blob;
  if (!ucx_blob::EncodeAddress(a, &blob)) return ADXL_PLUGIN_ERR_NO_RESOURCE;
  return CopyOut(blob, buf, len);
}

int MemReg(adxl_plugin_context_t *ctx, void *addr, size_t len, int mem_type, const char *share_path,
           uint64_t share_offset, adxl_plugin_mem_t **out) {
  if (ctx == nullptr || addr == nullptr || len == 0 || out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  if (mem_type == ADXL_PLUGIN_MEM_DEVICE && !ctx->device_memory) {
    ctx->log(ADXL_PLUGIN_LOG_ERROR, "device memory is not supported: %s", ctx->device_why.c_str());
    return ADXL_PLUGIN_ERR_UNSUPPORTED;
  }
  if (mem_type != ADXL_PLUGIN_MEM_DEVICE && mem_type != ADXL_PLUGIN_MEM_HOST) return ADXL_PLUGIN_ERR_INVALID;
  auto mem = std::make_unique<adxl_plugin_mem>();
  mem->device = mem_type == ADXL_PLUGIN_MEM_DEVICE;
  if (!mem->device) {
    mem->addr = addr;
    mem->len = len;
    if (share_path != nullptr) mem->share_path = share_path;
    mem->share_given = share_path != nullptr;
    mem->share_offset = share_offset;
  }
  // Every mover in turn, all or none (core/mover.h).
  const int st = ctx->movers.Register(addr, len, mem.get());
  if (st != ADXL_PLUGIN_OK) return st;
  *out = mem.release();
  return ADXL_PLUGIN_OK;
}

int MemPack(adxl_plugin_context_t *ctx, adxl_plugin_mem_t *mem, void *buf, size_t *len) {
  if (ctx == nullptr || mem == nullptr || len == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  void *packed = nullptr;
  size_t n = 0;
  ucs_status_t st = ucp_rkey_pack(ctx->ucp, mem->memh, &packed, &n);
  if (st != UCS_OK) return FromUcs(st);
  Defer release{[&] { ucp_rkey_buffer_release(packed); }};
  ucx_blob::Key k;
  k.ucp.assign(static_cast<const char *>(packed), n);
  k.flags = (mem->cma_ok ? ucx_blob::Key::kCmaUsable : 0) | (mem->device ? ucx_blob::Key::kDevice : 0);
  k.cma_key = mem->cma_key;
  k.base = reinterpret_cast<uintptr_t>(mem->addr);
  k.len = mem->len;
  k.offset = mem->share_offset;
  k.share_path = mem->share_path;
  std::string blob;
  if (!ucx_blob::EncodeKey(k, &blob)) return ADXL_PLUGIN_ERR_NO_RESOURCE;
  return CopyOut(blob, buf, len);
}

void MemDereg(adxl_plugin_context_t *ctx, adxl_plugin_mem_t *mem) {
  if (ctx == nullptr || mem == nullptr) return;
  ctx->movers.Deregister(mem);
  delete mem;
}

// UCP reported the endpoint's failure; runs under UCP's worker lock.
void EpError(void *arg, ucp_ep_h, ucs_status_t status) {
  auto *ep = static_cast<adxl_plugin_ep *>(arg);
  const int why = FromUcs(status) == ADXL_PLUGIN_OK ? ADXL_PLUGIN_ERR_IO : FromUcs(status);
  // A link over network paths moves nothing over its main endpoint (the
  // paths' own connections report theirs: path_failover.h).
  const bool paths = ep->on_paths.load();
  if (!paths) ep->failed.store(why);
  ep->ctx->log(ADXL_PLUGIN_LOG_WARN, "UCX endpoint failed: %s%s", ucs_status_string(status),
               paths ? " (the link's main connection; it moves over its network paths)" : "");
  // Inside ucp_worker_progress: the AM lane's batches on this endpoint are
  // ended by the progress thread, outside it.
  if (ep->am) {
    ep->ctx->am.EndpointFailed(ep->id, why);
    ep->ctx->Wake();
  }
}

int EpCreate(adxl_plugin_context_t *ctx, const void *address, size_t len, uint32_t lanes, adxl_plugin_ep_t **out) {
  if (ctx == nullptr || address == nullptr || len == 0 || out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  ucx_blob::Address a;
  if (!ucx_blob::ParseAddress(address, len, &a)) {
    ctx->log(ADXL_PLUGIN_LOG_ERROR, "malformed peer address (%zu bytes)", len);
    return ADXL_PLUGIN_ERR_INVALID;
  }
  auto ep = std::make_unique<adxl_plugin_ep>();
  ep->id = ctx->next_ep_id.fetch_add(1);
  ep->ctx = ctx;
  ucs_status_t st = UCS_OK;
  if (lanes & ADXL_PLUGIN_LANE_HCCS) {
    ep->cma_ep = ctx->cma.Connect(a.cma);
    if (ep->cma_ep != nullptr) {
      ep->lane = ADXL_PLUGIN_LANE_HCCS;
      // Device memory on this lane goes through UCP (cuda_ipc on one node).
      if (ctx->device_memory && !a.ucp.empty() &&
          (ep->ep = CreateUcpEp(ctx, ctx->worker, a.ucp, EpError, ep.get(), &st)) == nullptr) {
        ctx->log(ADXL_PLUGIN_LOG_WARN, "HCCS lane: no UCP endpoint for device memory; only host memory moves");
      }
      *out = ep.release();
      return ADXL_PLUGIN_OK;
    }
    ctx->log(ADXL_PLUGIN_LOG_INFO, "HCCS lane (cma) cannot reach the peer%s",
             (lanes & ADXL_PLUGIN_LANE_RDMA) ? "; using the RDMA lane" : "");
  }
  if (!(lanes & ADXL_PLUGIN_LANE_RDMA) || a.ucp.empty()) return ADXL_PLUGIN_ERR_UNSUPPORTED;
  ep->lane = ADXL_PLUGIN_LANE_RDMA;
  ep->am = ctx->rdma_over_am;  // before the endpoint exists: EpError reads it
  ep->ep = CreateUcpEp(ctx, ctx->worker, a.ucp, EpError, ep.get(), &st);
  if (ep->ep == nullptr) return FromUcs(st);
  // With network paths, batches move over one connection per path
  // (net_paths.h) instead of the connections below.
  if (ep->am && ConnectPaths(ep.get(), a)) ep->on_paths.store(true);
  // Further connections of the AM lane.  One that cannot be made leaves the
  // link with those that were: closing them now, in mid wire-up, could make
  // the peer's UCP abort (a wire-up reply it owes to a closed connection).
  for (unsigned i = 1; ep->am && !ep->paths && i < ctx->rdma_connections; ++i) {
    ucp_ep_h more = CreateUcpEp(ctx, ctx->worker, a.ucp, EpError, ep.get(), &st);
    if (more == nullptr) {
      ctx->log(ADXL_PLUGIN_LOG_WARN, "RDMA lane: %u of %u connections to the peer made (%s); using those",
               i, ctx->rdma_connections, ucs_status_string(st));
      break;
    }
    ep->more_eps.push_back(more);
  }
  *out = ep.release();
  return ADXL_PLUGIN_OK;
}

uint32_t EpLane(adxl_plugin_ep_t *ep) { return ep == nullptr ? 0 : ep->lane; }

void EpDestroy(adxl_plugin_ep_t *ep, int force) {
  if (ep == nullptr) return;
  adxl_plugin_context *ctx = ep->ctx;
  FaultDelay(ctx->ep_destroy_delay_us);  // a seam of the test build (fault_injection.h)
  if (ep->cma_ep != nullptr) ctx->cma.Disconnect(ep->cma_ep);  // nothing in flight: cma is synchronous
  if (ep->paths) ClosePaths(ep, force != 0);  // fenced, closed and abandoned
  if (ep->ep != nullptr) {
    // Nothing more is sent on it from a callback while it closes.
    if (ep->am) ctx->am.Fence(ep->id, ADXL_PLUGIN_ERR_CANCELED);
    for (ucp_ep_h e : ep->more_eps) CloseUcpEp(ctx, ctx->worker, e, force != 0);
    CloseUcpEp(ctx, ctx->worker, ep->ep, force != 0);
    // Batches still waiting for answers over this endpoint end now, and no
    // late READ data of theirs is written.
    if (ep->am) ctx->am.Abandon(ep->id, ADXL_PLUGIN_ERR_CANCELED);
  }
  delete ep;
}

int EpDescribe(adxl_plugin_ep_t *ep, char *buf, size_t len) {
  if (ep == nullptr || buf == nullptr || len == 0) return ADXL_PLUGIN_ERR_INVALID;
  if (ep->lane == ADXL_PLUGIN_LANE_HCCS) {
    // cma for private memory; "mapped/<kind>" for each kind of peer region
    // mapped directly (MappedLane::Region::kind).
    std::string s = "cma/memory";
    for (size_t i = 0; i < 4; ++i) {
      if (ep->mapped_kinds[i].load() > 0) s += std::string(",mapped/") + kMappedKinds[i];
    }
    snprintf(buf, len, "%s", s.c_str());
    return ADXL_PLUGIN_OK;
  }
  // The RDMA lane names what moves its bytes ("am:" active messages, "rma:"
  // UCP put/get) and, past one, its connections ("am*3:"), then UCP's
  // transports, so that a test can tell which mover a link runs on.
  std::string mover = ep->am ? "am" : "rma";
  if (!ep->more_eps.empty()) mover += "*" + std::to_string(1 + ep->more_eps.size());
  snprintf(buf, len, "%s:%s", mover.c_str(), (ep->paths ? DescribePaths(ep) : DescribeUcpEp(ep->ep)).c_str());
  return ADXL_PLUGIN_OK;
}

void RkeyDestroy(adxl_plugin_rkey_t *rkey) {
  if (rkey == nullptr) return;
  if (rkey->rkey != nullptr) ucp_rkey_destroy(rkey->rkey);
  if (rkey->cma_ok) rkey->ctx->cma.Release(&rkey->cma);
  MappedLane::Unmap(&rkey->mapped);
  delete rkey;
}

// The HCCS lane's part of a key: the peer's shared pages mapped here where
// it shared them, and the cma key where usable.  False: neither reaches it.
bool UnpackHccs(adxl_plugin_context *ctx, const ucx_blob::Key &k, adxl_plugin_rkey_t *rkey, std::string *why) {
  if (!k.share_path.empty()) {
    std::string map_why;
    if (!MappedLane::Map(k.share_path, k.base, k.len, k.offset, &rkey->mapped, &map_why)) {
      ctx->log(ADXL_PLUGIN_LOG_INFO, "cannot map the peer's shared region %s (%s); using cma", k.share_path.c_str(),
               map_why.c_str());
    }
  }
  if (k.cma_usable()) rkey->cma_ok = ctx->cma.Unpack(k.cma_key, &rkey->cma, why);
  return rkey->cma_ok || rkey->mapped.mapped != nullptr;
}

int RkeyUnpack(adxl_plugin_ep_t *ep, const void *packed, size_t len, adxl_plugin_rkey_t **out) {
  if (ep == nullptr || packed == nullptr || len == 0 || out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  adxl_plugin_context *ctx = ep->ctx;
  ucx_blob::Key k;
  if (!ucx_blob::ParseKey(packed, len, &k)) {
    ctx->log(ADXL_PLUGIN_LOG_ERROR, "malformed remote key (%zu bytes)", len);
    return ADXL_PLUGIN_ERR_INVALID;
  }
  std::unique_ptr<adxl_plugin_rkey, void (*)(adxl_plugin_rkey *)> rkey(new adxl_plugin_rkey(), RkeyDestroy);
  rkey->ctx = ctx;
  rkey->device = k.device();
  if (rkey->device && (!ctx->device_memory || ep->ep == nullptr)) {
    // The peer's device memory stays out of reach from here, but its host
    // regions do not: keep the link, and fail transfers to this one (Post).
    ctx->log(ADXL_PLUGIN_LOG_INFO, "a peer region is device memory, which this side cannot reach (%s)",
             ctx->device_memory ? "no UCP endpoint to the peer" : ctx->device_why.c_str());
  } else if (rkey->device || ep->lane == ADXL_PLUGIN_LANE_RDMA) {
    ucs_status_t st = ucp_ep_rkey_unpack(ep->ep, k.ucp.data(), &rkey->rkey);
    if (st != UCS_OK) {
      rkey->rkey = nullptr;
      ctx->log(ADXL_PLUGIN_LOG_ERROR, "ucp_ep_rkey_unpack%s: %s", rkey->device ? " (device region)" : "",
               ucs_status_string(st));
      return FromUcs(st);
    }
  } else {
    std::string why;
    if (!UnpackHccs(ctx, k, rkey.get(), &why)) {
      ctx->log(ADXL_PLUGIN_LOG_ERROR, "HCCS lane key: %s", why.empty() ? "region not reachable over cma" : why.c_str());
      return ADXL_PLUGIN_ERR_INVALID;
    }
    if (rkey->mapped.mapped != nullptr) {
      ep->mapped_regions.fetch_add(1);
      for (size_t i = 0; i < 4; ++i) {
        if (strcmp(rkey->mapped.kind, kMappedKinds[i]) == 0) ep->mapped_kinds[i].fetch_add(1);
      }
    }
    // With device memory the endpoint has UCP too, and a batch that moves
    // device memory moves its host regions through UCP as well (Post).
    if (ep->ep != nullptr && ucp_ep_rkey_unpack(ep->ep, k.ucp.data(), &rkey->rkey) != UCS_OK) rkey->rkey = nullptr;
  }
  *out = rkey.release();
  return ADXL_PLUGIN_OK;
}

int RkeyDescribe(adxl_plugin_rkey_t *rkey, char *buf, size_t len) {
  if (rkey == nullptr || buf == nullptr || len == 0) return ADXL_PLUGIN_ERR_INVALID;
  // The order HccsLane::Post and Post choose in: a mapping first, then cma; UCP
  // for device regions and on the RDMA lane.
  std::string path;
  if (rkey->device) {
    path = rkey->rkey != nullptr ? "ucp" : "unreachable";
  } else if (rkey->mapped.mapped != nullptr) {
    path = std::string("mapped/") + rkey->mapped.kind;
  } else if (rkey->cma_ok) {
    path = "cma";
  } else {
    path = rkey->rkey != nullptr ? "ucp" : "unreachable";
  }
  snprintf(buf, len, "%s", path.c_str());
  return ADXL_PLUGIN_OK;
}

// RDMA lane over active messages: the batch completes when the peer has
// answered every operation (am_lane.h).
void PostAm(adxl_plugin_ep_t *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
            adxl_plugin_batch_t *batch) {
  std::vector<AmLane::Op> ops;
  ops.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const adxl_plugin_iov_t &v = iov[i];
    ops.push_back({reinterpret_cast<void *>(static_cast<uintptr_t>(v.local_addr)),
                   v.local != nullptr ? v.local->memh : nullptr, v.remote_addr, static_cast<size_t>(v.length)});
  }
  batch->refs.fetch_add(1);  // held by the AM lane until done
  auto done = [](void *arg, int status) {
    auto *b = static_cast<adxl_plugin_batch *>(arg);
    b->status.store(status, std::memory_order_release);
    b->Unref();
  };
  std::vector<ucp_ep_h> eps(1, ep->ep);
  eps.insert(eps.end(), ep->more_eps.begin(), ep->more_eps.end());
  if (!ep->ctx->am.Post(ep->id, eps.data(), eps.size(), put, ops.data(), ops.size(), deadline_ns, done, batch)) {
    batch->refs.fetch_sub(1);
    batch->status.store(ADXL_PLUGIN_ERR_NO_RESOURCE);
  }
  ep->ctx->Wake();
}

// post and post_by.  deadline_ns (0: none) bounds where bytes may still
// land: the AM lane's target drops WRITE data that would land after it
// (am_lane.h).  The other lanes ignore it: HCCS copies end inside post, and
// UCP RMA runs over RDMA devices, whose closed endpoints deliver nothing
// more (device memory over TCP RMA is the case not covered).
int PostBy(adxl_plugin_ep_t *ep, int op, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
           adxl_plugin_batch_t **out) {
  if (ep == nullptr || (iov == nullptr && count != 0) || out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  if (op != ADXL_PLUGIN_GET && op != ADXL_PLUGIN_PUT) return ADXL_PLUGIN_ERR_INVALID;
  int failed = ep->failed.load(std::memory_order_acquire);
  if (failed != ADXL_PLUGIN_OK) return failed;
  const bool put = op == ADXL_PLUGIN_PUT;
  // A batch that touches device memory anywhere moves as plain UCP RMA
  // (see the header comment), all of it: host operations in it too.
  bool device = false;
  for (size_t i = 0; i < count && !device; ++i) {
    device = (iov[i].local != nullptr && iov[i].local->device) || (iov[i].remote != nullptr && iov[i].remote->device);
  }
  // An exception (allocation) leaves the lanes before they queued anything:
  // the batch goes, and post fails.
  std::unique_ptr<adxl_plugin_batch, void (*)(adxl_plugin_batch *)> batch(new adxl_plugin_batch(),
                                                                         [](adxl_plugin_batch *b) { b->Unref(); });
  if (device) {
    RmaLane::Post(ep, put, iov, count, true, batch.get());
  } else if (ep->lane == ADXL_PLUGIN_LANE_HCCS) {
    HccsLane::Post(ep, put, iov, count, batch.get());
  } else if (ep->am && ep->paths) {
    PostOnPaths(ep, put, iov, count, deadline_ns, batch.get());  // count 0: every connection's wire-up probe
  } else if (ep->am) {
    PostAm(ep, put, iov, count, deadline_ns, batch.get());  // count 0: the wire-up probe (am_lane.h)
  } else {
    RmaLane::Post(ep, put, iov, count, false, batch.get());  // count 0: a UCP flush (wire-up)
  }
  *out = batch.release();
  return ADXL_PLUGIN_OK;
}

int Post(adxl_plugin_ep_t *ep, int op, const adxl_plugin_iov_t *iov, size_t count, adxl_plugin_batch_t **out) {
  return PostBy(ep, op, iov, count, 0, out);
}

int Test(adxl_plugin_batch_t *batch) {
  if (batch == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  const int status = batch->status.load(std::memory_order_acquire);
  // The wait of a WRITE with a failed attempt (net_paths.h), whether it
  // then succeeded or not: the caller may reuse the region once it ended.
  const int64_t ready_at = batch->ready_at_ns.load(std::memory_order_relaxed);
  if (status != ADXL_PLUGIN_IN_PROGRESS && ready_at != 0 && PathFailover::NowNs() < ready_at) {
    return ADXL_PLUGIN_IN_PROGRESS;
  }
  return status;
}

void Release(adxl_plugin_batch_t *batch) {
  if (batch != nullptr) batch->Unref();
}

int Progress(adxl_plugin_context_t *ctx) {
  if (ctx == nullptr) return 0;
  // Hints, read without ordering: a stale answer costs one redundant
  // progress call or one yield, never an event (the progress thread polls
  // until kProgressLinger after the last one, and sleeps only when armed).
  if (ctx->progress_polling.load(std::memory_order_relaxed)) {
    // The progress thread drives the workers (ucx_context.h): leave the CPU
    // to it and to the peer, and report its latest pass, so that a caller
    // progressing "until idle" (the engine's fence drain) waits until that
    // thread's passes find nothing.
    sched_yield();
    return static_cast<int>(ctx->progress_pass_events.load(std::memory_order_relaxed));
  }
  return static_cast<int>(ProgressAllWorkers(ctx));
}

int Drain(adxl_plugin_context_t *ctx, uint64_t deadline_ns) {
  return ctx == nullptr ? ADXL_PLUGIN_ERR_INVALID : DrainContext(ctx, deadline_ns);
}

const adxl_plugin_ops_t kOps = {
    ADXL_PLUGIN_ABI_VERSION, sizeof(adxl_plugin_ops_t), "ucx",
    Guarded<Open>::Call, Guarded<Close>::Call, Guarded<Query>::Call, Guarded<GetAddress>::Call,
    Guarded<MemReg>::Call, Guarded<MemPack>::Call, Guarded<MemDereg>::Call, Guarded<EpCreate>::Call,
    Guarded<EpLane>::Call, Guarded<EpDestroy>::Call, Guarded<EpDescribe>::Call, Guarded<RkeyUnpack>::Call,
    Guarded<RkeyDestroy>::Call, Guarded<RkeyDescribe>::Call, Guarded<Post>::Call, Guarded<Test>::Call, Guarded<Release>::Call,
    Guarded<Progress>::Call, Guarded<PostBy>::Call, Guarded<Drain>::Call,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const adxl_plugin_ops_t *adxl_plugin_get_ops(
    uint32_t engine_abi_version) {
  // A refusal is the engine's to report (it names both versions): the
  // plugin has no logger before open().
  return engine_abi_version == ADXL_PLUGIN_ABI_VERSION ? &kOps : nullptr;
}
