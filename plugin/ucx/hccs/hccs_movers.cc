// The HCCS lane's movers' part of a registration (mapped_mover.h, cma_mover.h).
#include <unistd.h>

#include <string>

#include "hccs/cma_lane.h"
#include "hccs/cma_mover.h"
#include "hccs/mapped_lane.h"
#include "hccs/mapped_mover.h"
#include "ucx_handles.h"

int MappedMover::Register(void *addr, size_t len, adxl_plugin_mem *mem) {
  if (mem->device || mem->share_given) return ADXL_PLUGIN_OK;
  MappedLane::Shareable sh;
  std::string why;
  if (!MappedLane::FindShareable(addr, len, &sh, &why)) return ADXL_PLUGIN_OK;  // private memory: cma
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

int CmaMover::Register(void *addr, size_t len, adxl_plugin_mem *mem) {
  if (mem->device) return ADXL_PLUGIN_OK;
  std::string why;
  try {
    mem->cma_ok = cma_.Register(addr, len, &mem->cma_memh, &mem->cma_key, &why);
    if (!mem->cma_ok) log_(ADXL_PLUGIN_LOG_WARN, "%s: the HCCS lane cannot reach this region", why.c_str());
  } catch (...) {
    mem->cma_ok = false;  // registered for the other movers: keep it
  }
  return ADXL_PLUGIN_OK;
}

void CmaMover::Deregister(adxl_plugin_mem *mem) {
  if (mem->cma_ok) cma_.Deregister(mem->cma_memh);
  mem->cma_ok = false;
}
