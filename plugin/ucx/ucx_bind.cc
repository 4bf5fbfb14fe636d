// The binding of endpoints, keys and batches to their movers (ucx_bind.h).
#include "ucx_bind.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "am/am_mover.h"
#include "core/ucp_endpoint.h"
#include "core/ucs_status.h"
#include "hccs/cma_mover.h"
#include "hccs/shared_mapping.h"
#include "hccs/mapped_mover.h"
#include "paths/paths_mover.h"
#include "rma/rma_mover.h"
#include "ucx_context.h"

namespace {

// The mover operation `v` goes to, device memory aside: its key's, else the
// endpoint's.
Mover *BoundTo(const adxl_plugin_iov_t &v, Mover *own) {
  return v.remote->mover != nullptr ? v.remote->mover : own;
}

// A batch whose keys are bound to several movers: each moves its own
// operations in turn, into the one batch, which only movers that end it
// inside Post can share (Mover::Synchronous); the first error ends it.
void PostEach(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
              adxl_plugin_batch *batch) {
  Mover *const own = ep->mover.load(std::memory_order_relaxed);
  std::vector<Mover *> movers;  // in the order of their first operation
  for (size_t i = 0; i < count; ++i) {
    Mover *m = BoundTo(iov[i], own);
    if (std::find(movers.begin(), movers.end(), m) != movers.end()) continue;
    if (!m->Synchronous()) {
      ep->ctx->log(ADXL_PLUGIN_LOG_ERROR, "a batch's keys are bound to %s and to other movers, which cannot share it",
                   m->name());
      batch->status.store(ADXL_PLUGIN_ERR_INVALID);
      return;
    }
    movers.push_back(m);
  }
  std::vector<adxl_plugin_iov_t> part;
  part.reserve(count);
  for (Mover *m : movers) {
    part.clear();
    for (size_t i = 0; i < count; ++i) {
      if (BoundTo(iov[i], own) == m) part.push_back(iov[i]);
    }
    m->Post(ep, put, part.data(), part.size(), deadline_ns, batch);
    if (batch->status.load(std::memory_order_acquire) != ADXL_PLUGIN_OK) return;
  }
}

// AmTransport::ClosedFn of an RDMA-lane endpoint's UCP endpoints on the
// context's worker (am_transport.h, "Owned endpoints"): the AM transport
// closed one, a reply endpoint of peer requests on memory being
// deregistered.  The endpoint's mover takes it as a failure of that UCP
// endpoint, as when UCP reports one (EpError).
void MainEpClosed(void *arg, ucp_ep_h) {
  auto *ep = static_cast<adxl_plugin_ep *>(arg);
  const bool failed = ep->mover.load()->EndpointFailed(ep, ADXL_PLUGIN_ERR_IO);
  ep->ctx->log(ADXL_PLUGIN_LOG_WARN,
               "UCX endpoint closed: a peer's request on it used memory being deregistered%s",
               failed ? "" : " (the link's main connection; it moves over its network paths)");
}

// A UCP endpoint of the context's worker to the peer, the plugin's own
// (core/owned_endpoints.h): the peer's requests may come back on it,
// whichever protocol this side moves with (a peer on active messages,
// this side on UCP RMA: a mixed link), and the AM transport then closes it
// only as the mover's Cancel would.  Made in the caller's Creating scope
// of the table, one for all of the link's endpoints.  Null on failure (*st).
ucp_ep_h CreateOwnedEp(adxl_plugin_context *ctx, const std::string &address, ucp_err_handler_cb_t on_error,
                       adxl_plugin_ep *ep, ucs_status_t *st) {
  ucp_ep_h e = CreateUcpEp(ctx, ctx->worker, address, on_error, ep, st);
  if (e != nullptr) ctx->am_mover->transport().Own(e, ep->id, MainEpClosed, ep);
  return e;
}

}  // namespace

int BindEndpoint(adxl_plugin_ep *ep, const ucx_blob::Address &a, uint32_t lanes, ucp_err_handler_cb_t on_error) {
  adxl_plugin_context *ctx = ep->ctx;
  ucs_status_t st = UCS_OK;
  if (lanes & ADXL_PLUGIN_LANE_HCCS) {
    if (ctx->cma_mover->Connect(ep, a.cma)) {
      ep->lane = ADXL_PLUGIN_LANE_HCCS;
      ep->mover.store(ctx->cma_mover);
      // Device memory on this lane goes through UCP (cuda_ipc on one node).
      if (ctx->device_memory && !a.ucp.empty()) {
        OwnedEndpoints::Creating creating(ctx->am_mover->transport());
        ep->ep = CreateOwnedEp(ctx, a.ucp, on_error, ep, &st);
        if (ep->ep == nullptr) {
          ctx->log(ADXL_PLUGIN_LOG_WARN, "HCCS lane: no UCP endpoint for device memory; only host memory moves");
        }
      }
      return ADXL_PLUGIN_OK;
    }
    ctx->log(ADXL_PLUGIN_LOG_INFO, "HCCS lane (cma) cannot reach the peer%s",
             (lanes & ADXL_PLUGIN_LANE_RDMA) ? "; using the RDMA lane" : "");
  }
  if (!(lanes & ADXL_PLUGIN_LANE_RDMA) || a.ucp.empty()) return ADXL_PLUGIN_ERR_UNSUPPORTED;
  ep->lane = ADXL_PLUGIN_LANE_RDMA;
  const bool am = ctx->rdma_over_am;
  // Before the UCP endpoint exists: EpError reads it.
  ep->mover.store(am ? static_cast<Mover *>(ctx->am_mover) : ctx->rma_mover);
  // One creation for the link's endpoints on this worker: a mem_dereg
  // closing the first (paired with the peer's) before the next is made
  // would let UCP hand its memory out again under the same link
  // (core/owned_endpoints.h).  The network paths' endpoints are made in
  // creations of their own workers' tables inside it: no close waits on
  // another table.
  OwnedEndpoints::Creating creating(ctx->am_mover->transport());
  ep->ep = CreateOwnedEp(ctx, a.ucp, on_error, ep, &st);
  if (ep->ep == nullptr) return FromUcs(st);
  // With network paths, batches move over one connection per path
  // (net_paths.h) instead of the connections below.
  if (am && ctx->paths_mover->Connect(ep, a)) ep->mover.store(ctx->paths_mover);
  // Further connections of the AM mover.  One that cannot be made leaves
  // the link with those that were: closing them now, in mid wire-up, could
  // make the peer's UCP abort (a wire-up reply it owes to a closed
  // connection).
  for (unsigned i = 1; am && !ep->paths && i < ctx->rdma_connections; ++i) {
    ucp_ep_h more = CreateOwnedEp(ctx, a.ucp, on_error, ep, &st);
    if (more == nullptr) {
      ctx->log(ADXL_PLUGIN_LOG_WARN, "RDMA lane: %u of %u connections to the peer made (%s); using those", i,
               ctx->rdma_connections, ucs_status_string(st));
      break;
    }
    ep->more_eps.push_back(more);
  }
  return ADXL_PLUGIN_OK;
}

int BindKey(adxl_plugin_ep *ep, const ucx_blob::Key &k, adxl_plugin_rkey *rkey) {
  adxl_plugin_context *ctx = ep->ctx;
  rkey->device = k.device();
  if (rkey->device && (!ctx->device_memory || ep->ep == nullptr)) {
    // The peer's device memory stays out of reach from here, but its host
    // regions do not: keep the link, and fail transfers to this one
    // (RmaMover::Post).
    ctx->log(ADXL_PLUGIN_LOG_INFO, "a peer region is device memory, which this side cannot reach (%s)",
             ctx->device_memory ? "no UCP endpoint to the peer" : ctx->device_why.c_str());
    rkey->mover = ctx->rma_mover;
    return ADXL_PLUGIN_OK;
  }
  if (rkey->device || ep->lane == ADXL_PLUGIN_LANE_RDMA) {
    if (k.ucp.empty()) {  // ucp_ep_rkey_unpack takes no length: it would read past the key
      ctx->log(ADXL_PLUGIN_LOG_ERROR, "remote key without its UCP part (the peer registered no UCP memory handle)");
      return ADXL_PLUGIN_ERR_INVALID;
    }
    // Not on a UCP endpoint the AM transport closed (am_transport.h, "Owned
    // endpoints"); held open meanwhile.
    OwnedEndpoints::Use use(ctx->am_mover->transport(), ep->ep, ep->id);
    if (!use.open()) {
      // Active messages move host memory without the UCP key: a link over
      // network paths, whose main connection that was, still reaches the
      // region ("unreachable" in its description only); an endpoint that
      // failed with it does not.
      const int failed = ep->failed.load();
      if (rkey->device || failed != ADXL_PLUGIN_OK) return failed != ADXL_PLUGIN_OK ? failed : ADXL_PLUGIN_ERR_IO;
      rkey->mover = ep->mover.load();
      return ADXL_PLUGIN_OK;
    }
    const ucs_status_t st = ucp_ep_rkey_unpack(ep->ep, k.ucp.data(), &rkey->rkey);
    if (st != UCS_OK) {
      rkey->rkey = nullptr;
      ctx->log(ADXL_PLUGIN_LOG_ERROR, "ucp_ep_rkey_unpack%s: %s", rkey->device ? " (device region)" : "",
               ucs_status_string(st));
      return FromUcs(st);
    }
    rkey->mover = rkey->device ? ctx->rma_mover : ep->mover.load();
    return ADXL_PLUGIN_OK;
  }
  // Host memory on the HCCS lane: the peer's shared pages mapped here where
  // it shared them, else cma.
  std::string why;
  if (ctx->mapped_mover->UnpackKey(k, rkey)) {
    rkey->mover = ctx->mapped_mover;
    for (size_t i = 0; i < 4; ++i) {
      if (strcmp(rkey->mapped.kind, SharedMapping::kKinds[i]) == 0) ep->mapped_kinds[i].fetch_add(1);
    }
  } else if (ctx->cma_mover->UnpackKey(k, rkey, &why)) {
    rkey->mover = ctx->cma_mover;
  } else {
    ctx->log(ADXL_PLUGIN_LOG_ERROR, "HCCS lane key: %s", why.empty() ? "region not reachable over cma" : why.c_str());
    return ADXL_PLUGIN_ERR_INVALID;
  }
  // With device memory the endpoint has UCP too, and a batch that moves
  // device memory moves its host regions through UCP as well (PostBound).
  // Not on an endpoint the AM transport closed ("Owned endpoints"); held
  // open meanwhile.
  if (ep->ep != nullptr) {
    OwnedEndpoints::Use use(ctx->am_mover->transport(), ep->ep, ep->id);
    if (use.open() && (k.ucp.empty() || ucp_ep_rkey_unpack(ep->ep, k.ucp.data(), &rkey->rkey) != UCS_OK)) {
      rkey->rkey = nullptr;
    }
  }
  return ADXL_PLUGIN_OK;
}

void PostBound(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
               adxl_plugin_batch *batch) {
  Mover *const own = ep->mover.load(std::memory_order_relaxed);
  Mover *m = own;
  bool mixed = false;
  for (size_t i = 0; i < count; ++i) {
    const adxl_plugin_iov_t &v = iov[i];
    if (v.remote == nullptr) {  // every mover needs the key: the peer's region, its mover
      ep->ctx->log(ADXL_PLUGIN_LOG_ERROR, "%s batch: operation %zu of %zu has no remote key", put ? "put" : "get", i,
                   count);
      batch->status.store(ADXL_PLUGIN_ERR_INVALID);
      return;
    }
    if ((v.local != nullptr && v.local->device) || v.remote->device) {
      // Device memory anywhere: plain UCP RMA, all of it (rma_mover.h),
      // which relies on this scan and does not repeat it.
      ep->ctx->rma_mover->PostDevice(ep, put, iov, count, batch);
      return;
    }
    Mover *b = BoundTo(v, own);
    if (i == 0) {
      m = b;
    } else if (b != m) {
      mixed = true;
    }
  }
  if (mixed) {
    PostEach(ep, put, iov, count, deadline_ns, batch);
  } else {
    m->Post(ep, put, iov, count, deadline_ns, batch);
  }
}
