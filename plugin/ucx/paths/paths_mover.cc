// PathsMover (paths_mover.h).
#include "paths/paths_mover.h"

#include <string>

#include "am/am_mover.h"
#include "paths/net_path.h"
#include "paths/net_paths.h"
#include "ucx_handles.h"

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
  log_(ADXL_PLUGIN_LOG_ERROR, "region %p (%zu bytes) on the network paths: %s", addr, len, why.c_str());
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
  PostOnPaths(ep, put, iov, count, deadline_ns, batch);
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
