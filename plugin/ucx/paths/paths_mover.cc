// PathsMover (paths_mover.h): registration with every path, binding,
// batches, teardown.  Its paths' lifetime and progress: paths_progress.cc.
#include "paths/paths_mover.h"

#include <string>
#include <utility>

#include "am/am_mover.h"
#include "paths/net_path.h"
#include "paths/net_paths.h"
#include "paths/path_failover.h"
#include "ucx_handles.h"

PathsMover::PathsMover(const UcpCore &core, AmMover &main) : core_(core), main_(main) {}

// Out of line: NetPath and PathFailover are complete here.
PathsMover::~PathsMover() = default;

bool PathsMover::AddAddresses(ucx_blob::Address *a) const {
  for (const auto &p : paths_) {
    ucp_address_t *addr = nullptr;
    size_t n = 0;
    ucs_status_t st = ucp_worker_get_address(p->worker(), &addr, &n);
    if (st != UCS_OK) {
      core_.log(ADXL_PLUGIN_LOG_ERROR, "worker address of path %s: %s", p->device().c_str(), ucs_status_string(st));
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

bool PathsMover::Connect(adxl_plugin_ep *ep, const ucx_blob::Address &peer) {
  return ConnectPaths(ep, peer, paths_, failover_.get(), core_);
}

int PathsMover::Register(void *addr, size_t len, adxl_plugin_mem *mem) {
  if (mem->device) return ADXL_PLUGIN_OK;
  std::string why;
  try {
    mem->path_memh.reserve(paths_.size());  // push_back below does not throw
    for (const auto &p : paths_) {
      ucp_mem_map_params_t mp{};
      mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
      mp.address = addr;
      mp.length = len;
      ucp_mem_h memh = nullptr;
      ucs_status_t st = ucp_mem_map(p->ucp(), &mp, &memh);
      if (st != UCS_OK) {
        why = "ucp_mem_map on path " + p->device() + ": " + ucs_status_string(st);
        break;
      }
      mem->path_memh.push_back(memh);
      p->am.AddRegion(addr, len, memh);
    }
  } catch (...) {
    why = "out of memory";
  }
  if (why.empty()) return ADXL_PLUGIN_OK;
  Deregister(mem);  // RemoveRegion of a region never added is a no-op
  core_.log(ADXL_PLUGIN_LOG_ERROR, "region %p (%zu bytes) on the network paths: %s", addr, len, why.c_str());
  return ADXL_PLUGIN_ERR_NO_RESOURCE;
}

void PathsMover::Deregister(adxl_plugin_mem *mem) {
  for (size_t i = 0; i < mem->path_memh.size(); ++i) {
    paths_[i]->am.RemoveRegion(mem->addr);
    ucp_mem_unmap(paths_[i]->ucp(), mem->path_memh[i]);
  }
  mem->path_memh.clear();
}

void PathsMover::Post(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
                      adxl_plugin_batch *batch) {
  PostOnPaths(ep, put, iov, count, deadline_ns, batch, main_.transport());
}

void PathsMover::Cancel(adxl_plugin_ep *ep, bool force) {
  ClosePaths(ep, force);  // fenced, closed and abandoned
  main_.Cancel(ep, force);
}

bool PathsMover::EndpointFailed(adxl_plugin_ep *ep, int why) {
  main_.EndBatches(ep, why);
  return false;
}

std::string PathsMover::DescribeEndpoint(const adxl_plugin_ep *ep) const { return "am:" + DescribePaths(ep); }

std::string PathsMover::DescribeKey(const adxl_plugin_rkey *rkey) const {
  return rkey->rkey != nullptr ? "ucp" : "unreachable";
}
