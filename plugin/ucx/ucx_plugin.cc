// The UCX transport plugin: the ADXL plugin ABI (include/adxl/plugin) on UCX.
// This file is the ABI only: one thunk per entry of the operations table,
// each wrapped in Guarded<> (no C++ exception crosses the C ABI: one that
// escapes an entry becomes ADXL_PLUGIN_ERR_NO_RESOURCE), turning ABI
// arguments into calls of the movers (core/mover.h).
//
// Which mover runs where (ucx_bind.h binds each endpoint and key to one):
//  - HCCS lane (same node), host memory: the direct mapping (hccs/mapped_mover.h)
//    for peer regions their owner shared as a file (MallocMem with
//    EnableUseFabricMem=1) and this process could map at key unpack, memcpy
//    by the posting thread; every other region over UCT's cross-memory
//    attach (hccs/cma_mover.h, process_vm_readv/writev by the posting thread
//    and the cma copy threads).  Both are truly one-sided and synchronous:
//    the batch is complete when post returns.
//  - RDMA lane (other nodes), host memory: active messages (am/am_mover.h,
//    into addresses the receiver validates) unless an InfiniBand device
//    exists (/sys/class/infiniband), then UCP RMA (rma/rma_mover.h);
//    ADXL_UCX_RDMA_PROTOCOL=am|rma overrides, and UCP RMA is also the
//    fallback when active messages cannot start.  UCP runs without its
//    shared-memory transports (UCX_TLS=^sm unless the user sets UCX_TLS).
//    With ADXL_UCX_RDMA_PATHS active messages run over several network
//    paths, one connection per path, batches striped over them
//    (paths/paths_mover.h).
//  - Device memory, on both lanes: UCP RMA (rma/rma_mover.h), with a UCP
//    endpoint beside the cma one on the HCCS lane; offered only where UCX
//    has the memory type and its newer RMA protocols (ucx_context.cc).
// Addresses and packed keys: ucx_blob.h.  The UCP context, worker, settings
// and progress thread: ucx_context.h.  Locks: none here; see the movers and
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
#include "core/fault_injection.h"
#include "core/ucx_blob.h"
#include "hccs/cma_mover.h"
#include "am/am_protocol.h"
#include "paths/paths_mover.h"
#include "ucx_bind.h"
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
  a.cma = ctx->cma_mover->transport().address();
  if (!ctx->paths_mover->AddAddresses(&a)) return ADXL_PLUGIN_ERR_NO_RESOURCE;
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

// UCP reported the failure of one of the endpoint's UCP endpoints; runs
// under that worker's lock.  The endpoint's mover says what it means.
void EpError(void *arg, ucp_ep_h, ucs_status_t status) {
  auto *ep = static_cast<adxl_plugin_ep *>(arg);
  const int why = FromUcs(status) == ADXL_PLUGIN_OK ? ADXL_PLUGIN_ERR_IO : FromUcs(status);
  const bool failed = ep->mover.load()->EndpointFailed(ep, why);
  ep->ctx->log(ADXL_PLUGIN_LOG_WARN, "UCX endpoint failed: %s%s", ucs_status_string(status),
               failed ? "" : " (the link's main connection; it moves over its network paths)");
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
  int st = ADXL_PLUGIN_OK;
  try {
    st = BindEndpoint(ep.get(), a, lanes, EpError);
  } catch (...) {
    // Out of memory part-way: UCP endpoints made so far (some in no list
    // yet: a connection being appended, a network path being paired) name
    // `ep` or its parts as their error handler's argument, and closing them
    // in mid wire-up can make the peer's UCP abort (ucx_bind.cc).  So `ep`
    // is left alive, unused, and never freed: a small leak on a process out
    // of memory instead of a callback into freed memory.
    (void)ep.release();
    throw;  // Guarded: ERR_NO_RESOURCE
  }
  if (st != ADXL_PLUGIN_OK) return st;
  *out = ep.release();
  return ADXL_PLUGIN_OK;
}

uint32_t EpLane(adxl_plugin_ep_t *ep) { return ep == nullptr ? 0 : ep->lane; }

// The start of ep_destroy(force) while calls on ep may still run
// (adxl_plugin.h): only the flag, which PostBy and the same-node copies
// read; the movers' Cancel comes with ep_destroy, once those calls returned.
void EpCancel(adxl_plugin_ep_t *ep) {
  if (ep != nullptr) ep->cancelled.store(true, std::memory_order_relaxed);
}

void EpDestroy(adxl_plugin_ep_t *ep, int force) {
  if (ep == nullptr) return;
  FaultDelay(ep->ctx->ep_destroy_delay_us);  // a seam of the test build (fault_injection.h)
  ep->mover.load()->Cancel(ep, force != 0);
  delete ep;
}

int EpDescribe(adxl_plugin_ep_t *ep, char *buf, size_t len) {
  if (ep == nullptr || buf == nullptr || len == 0) return ADXL_PLUGIN_ERR_INVALID;
  snprintf(buf, len, "%s", ep->mover.load()->DescribeEndpoint(ep).c_str());
  return ADXL_PLUGIN_OK;
}

void RkeyDestroy(adxl_plugin_rkey_t *rkey) {
  if (rkey == nullptr) return;
  if (rkey->rkey != nullptr) ucp_rkey_destroy(rkey->rkey);
  if (rkey->mover != nullptr) rkey->mover->ReleaseKey(rkey);
  delete rkey;
}

int RkeyUnpack(adxl_plugin_ep_t *ep, const void *packed, size_t len, adxl_plugin_rkey_t **out) {
  if (ep == nullptr || packed == nullptr || len == 0 || out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  ucx_blob::Key k;
  if (!ucx_blob::ParseKey(packed, len, &k)) {
    ep->ctx->log(ADXL_PLUGIN_LOG_ERROR, "malformed remote key (%zu bytes)", len);
    return ADXL_PLUGIN_ERR_INVALID;
  }
  std::unique_ptr<adxl_plugin_rkey, void (*)(adxl_plugin_rkey *)> rkey(new adxl_plugin_rkey(), RkeyDestroy);
  const int st = BindKey(ep, k, rkey.get());
  if (st != ADXL_PLUGIN_OK) return st;
  *out = rkey.release();
  return ADXL_PLUGIN_OK;
}

int RkeyDescribe(adxl_plugin_rkey_t *rkey, char *buf, size_t len) {
  if (rkey == nullptr || buf == nullptr || len == 0) return ADXL_PLUGIN_ERR_INVALID;
  // The path the key's bound mover takes: "mapped/<kind>", "cma", "ucp",
  // or "unreachable" (ucx_bind.h).
  snprintf(buf, len, "%s", rkey->mover->DescribeKey(rkey).c_str());
  return ADXL_PLUGIN_OK;
}

// post and post_by: to the movers bound to the batch's keys (ucx_bind.h).
// deadline_ns (0: none) bounds where bytes may still land: the AM movers'
// targets drop WRITE data that would land after it (am_transport.h); the
// HCCS copies, which end inside post, stop at the first piece that would
// start after it (hccs/copy_stop.h).  The RMA mover ignores it: UCP RMA runs
// over RDMA devices, whose closed endpoints deliver nothing more (device
// memory over TCP RMA is the case not covered).
int PostBy(adxl_plugin_ep_t *ep, int op, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
           adxl_plugin_batch_t **out) {
  if (ep == nullptr || (iov == nullptr && count != 0) || out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  if (op != ADXL_PLUGIN_GET && op != ADXL_PLUGIN_PUT) return ADXL_PLUGIN_ERR_INVALID;
  if (ep->cancelled.load(std::memory_order_relaxed)) return ADXL_PLUGIN_ERR_CANCELED;
  int failed = ep->failed.load(std::memory_order_acquire);
  if (failed != ADXL_PLUGIN_OK) return failed;
  // An exception (allocation) leaves the movers before they queued
  // anything: the batch goes, and post fails.
  std::unique_ptr<adxl_plugin_batch, void (*)(adxl_plugin_batch *)> batch(new adxl_plugin_batch(),
                                                                         [](adxl_plugin_batch *b) { b->Unref(); });
  PostBound(ep, op == ADXL_PLUGIN_PUT, iov, count, deadline_ns, batch.get());
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
  // CLOCK_MONOTONIC ns, as net_paths.cc sets it.
  const auto now = [] { return static_cast<int64_t>(am_protocol::MonotonicNs()); };
  if (status != ADXL_PLUGIN_IN_PROGRESS && ready_at != 0 && now() < ready_at) {
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
    Guarded<Progress>::Call, Guarded<PostBy>::Call, Guarded<Drain>::Call, Guarded<EpCancel>::Call,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const adxl_plugin_ops_t *adxl_plugin_get_ops(
    uint32_t engine_abi_version) {
  // A refusal is the engine's to report (it names both versions): the
  // plugin has no logger before open().
  return engine_abi_version == ADXL_PLUGIN_ABI_VERSION ? &kOps : nullptr;
}
