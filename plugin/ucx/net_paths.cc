// The RDMA lane over several network paths, for the ABI entries (net_paths.h).
#include "net_paths.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "net_path.h"
#include "stripe.h"
#include "ucp_endpoint.h"

namespace {

// One plugin batch striped over the paths: freed by the last part to end.
struct StripedBatch {
  struct Part {
    StripedBatch *parent = nullptr;
    size_t conn = 0;  // index in the link's path_conns (and path_rates)
    size_t bytes = 0;
    std::chrono::steady_clock::time_point start;
  };
  adxl_plugin_batch *batch = nullptr;  // one reference, dropped at the end
  std::shared_ptr<stripe::PathRates> rates;
  std::atomic<size_t> remaining{0};
  std::atomic<int> error{ADXL_PLUGIN_OK};
  std::vector<Part> parts;  // sized before the first post, never resized
};

// AmLane::DoneFn of one part (from a UCP callback, the posting thread or
// the progress thread; outside the lane's locks).
void PartDone(void *arg, int status) {
  auto *part = static_cast<StripedBatch::Part *>(arg);
  StripedBatch *sb = part->parent;
  if (status == ADXL_PLUGIN_OK) {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - part->start;
    sb->rates->Record(part->conn, part->bytes, took.count());
  } else {
    int none = ADXL_PLUGIN_OK;
    sb->error.compare_exchange_strong(none, status);
  }
  if (sb->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::unique_ptr<StripedBatch> last(sb);
  last->batch->status.store(last->error.load(), std::memory_order_release);
  last->batch->Unref();
}

}  // namespace

bool AddPathAddresses(adxl_plugin_context *ctx, ucx_blob::Address *a) {
  for (const auto &p : ctx->paths) {
    ucp_address_t *addr = nullptr;
    size_t n = 0;
    ucs_status_t st = ucp_worker_get_address(p->worker(), &addr, &n);
    if (st != UCS_OK) {
      ctx->log(ADXL_PLUGIN_LOG_ERROR, "worker address of path %s: %s", p->device().c_str(), ucs_status_string(st));
      return false;
    }
    ucx_blob::PathAddress pa;
    pa.ipv4 = p->ipv4();
    pa.prefix = p->prefix();
    pa.ucp.assign(reinterpret_cast<const char *>(addr), n);
    ucp_worker_release_address(p->worker(), addr);
    a->paths.push_back(std::move(pa));
  }
  return true;
}

bool RegisterOnPaths(adxl_plugin_context *ctx, adxl_plugin_mem *mem, std::string *why) {
  for (const auto &p : ctx->paths) {
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = mem->addr;
    mp.length = mem->len;
    ucp_mem_h memh = nullptr;
    ucs_status_t st = ucp_mem_map(p->ucp(), &mp, &memh);
    if (st != UCS_OK) {
      *why = "ucp_mem_map on path " + p->device() + ": " + ucs_status_string(st);
      DeregisterOnPaths(ctx, mem);
      return false;
    }
    mem->path_memh.push_back(memh);
    try {
      p->am.AddRegion(mem->addr, mem->len, memh);
    } catch (...) {
      *why = "out of memory";
      DeregisterOnPaths(ctx, mem);  // RemoveRegion of a region never added is a no-op
      return false;
    }
  }
  return true;
}

void DeregisterOnPaths(adxl_plugin_context *ctx, adxl_plugin_mem *mem) {
  for (size_t i = 0; i < mem->path_memh.size(); ++i) {
    ctx->paths[i]->am.RemoveRegion(mem->addr);
    ucp_mem_unmap(ctx->paths[i]->ucp(), mem->path_memh[i]);
  }
  mem->path_memh.clear();
}

void ConnectPaths(adxl_plugin_ep *ep, const ucx_blob::Address &peer, ucp_err_handler_cb_t on_error) {
  adxl_plugin_context *ctx = ep->ctx;
  if (ctx->paths.empty() || peer.paths.empty()) {
    if (!ctx->paths.empty() || !peer.paths.empty()) {
      ctx->log(ADXL_PLUGIN_LOG_INFO, "RDMA lane: %s has network paths, %s not: the link uses one connection",
               ctx->paths.empty() ? "the peer" : "this side", ctx->paths.empty() ? "this side" : "the peer");
    }
    return;
  }
  std::vector<bool> used(peer.paths.size(), false);
  for (size_t i = 0; i < ctx->paths.size(); ++i) {
    NetPath *p = ctx->paths[i].get();
    size_t j = 0;
    while (j < peer.paths.size() && (used[j] || !p->Reaches(peer.paths[j].ipv4))) ++j;
    if (j == peer.paths.size()) {
      ctx->log(ADXL_PLUGIN_LOG_INFO, "RDMA lane: no path of the peer in the subnet of path %s", p->device().c_str());
      continue;
    }
    ucs_status_t st = UCS_OK;
    ucp_ep_h e = CreateUcpEp(ctx, p->worker(), peer.paths[j].ucp, on_error, ep, &st);
    if (e == nullptr) {
      ctx->log(ADXL_PLUGIN_LOG_WARN, "RDMA lane: no connection over path %s (%s); the link goes without it",
               p->device().c_str(), ucs_status_string(st));
      continue;
    }
    used[j] = true;
    ep->path_conns.push_back(PathConn{p, i, e});
  }
  if (ep->path_conns.empty()) {
    ctx->log(ADXL_PLUGIN_LOG_WARN, "RDMA lane: no network path pairs with the peer's; the link uses one connection");
    return;
  }
  ep->path_rates = std::make_shared<stripe::PathRates>(ep->path_conns.size());
}

void FencePaths(adxl_plugin_ep *ep, int why) {
  for (const PathConn &c : ep->path_conns) c.path->am.Fence(ep->id, why);
}

void ClosePaths(adxl_plugin_ep *ep, bool force) {
  for (const PathConn &c : ep->path_conns) CloseUcpEp(ep->ctx, c.path->worker(), c.ep, force);
}

void AbandonPaths(adxl_plugin_ep *ep, int why) {
  for (const PathConn &c : ep->path_conns) c.path->am.Abandon(ep->id, why);
}

void PathsFailed(adxl_plugin_ep *ep, int why) {
  for (const PathConn &c : ep->path_conns) c.path->am.EndpointFailed(ep->id, why);
}

void PostOnPaths(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
                 adxl_plugin_batch *batch) {
  adxl_plugin_context *ctx = ep->ctx;
  const size_t n = ep->path_conns.size();
  // Part c < n: path connection c.  count 0 (the wire-up): every connection
  // probed, the path connections and, as part n, the main endpoint's.
  const size_t parts = count == 0 ? n + 1 : n;
  std::vector<std::vector<AmLane::Op>> ops(parts);
  auto sb = std::make_unique<StripedBatch>();
  sb->rates = ep->path_rates;
  sb->parts.resize(parts);
  size_t posting = parts;
  if (count > 0) {
    std::vector<size_t> lens(count);
    for (size_t i = 0; i < count; ++i) lens[i] = static_cast<size_t>(iov[i].length);
    const size_t whole_on = ep->next_whole_path.fetch_add(1, std::memory_order_relaxed) % n;
    const std::vector<std::vector<stripe::Piece>> slices =
        stripe::StripeOps(lens.data(), count, ep->path_rates->Weights(), whole_on);
    posting = 0;
    for (size_t c = 0; c < n; ++c) {
      // Each path's operations, with that path's registration of the local side.
      const size_t path = ep->path_conns[c].index;
      for (const stripe::Piece &pc : slices[c]) {
        const adxl_plugin_iov_t &v = iov[pc.op];
        ucp_mem_h memh = v.local != nullptr && path < v.local->path_memh.size() ? v.local->path_memh[path] : nullptr;
        ops[c].push_back({reinterpret_cast<void *>(static_cast<uintptr_t>(v.local_addr + pc.offset)), memh,
                          v.remote_addr + pc.offset, pc.len});
        sb->parts[c].bytes += pc.len;
      }
      if (!slices[c].empty()) ++posting;
    }
  }
  for (size_t c = 0; c < parts; ++c) {
    sb->parts[c].parent = sb.get();
    sb->parts[c].conn = c;
  }
  sb->batch = batch;
  batch->refs.fetch_add(1);  // held until the last part ends
  sb->remaining.store(posting, std::memory_order_relaxed);
  StripedBatch *owned = sb.release();  // the last PartDone frees it
  for (size_t c = 0; c < parts; ++c) {
    if (count > 0 && ops[c].empty()) continue;
    StripedBatch::Part *part = &owned->parts[c];
    part->start = std::chrono::steady_clock::now();
    bool posted;
    if (c < n) {
      const PathConn &conn = ep->path_conns[c];
      posted = conn.path->am.Post(ep->id, &conn.ep, 1, put, ops[c].data(), ops[c].size(), deadline_ns, PartDone, part);
    } else {
      posted = ctx->am.Post(ep->id, &ep->ep, 1, put, nullptr, 0, deadline_ns, PartDone, part);
    }
    if (!posted) PartDone(part, ADXL_PLUGIN_ERR_NO_RESOURCE);  // nothing started on this connection
  }
  ctx->Wake();
}

std::string DescribePaths(adxl_plugin_ep *ep) {
  std::string s;
  for (const PathConn &c : ep->path_conns) {
    if (!s.empty()) s += "+";
    s += DescribeUcpEp(c.ep);
  }
  return s;
}
