// RmaMover (rma_mover.h).
#include "rma/rma_mover.h"

#include "core/ucs_status.h"
#include "ucx_handles.h"

int RmaMover::Register(void *addr, size_t len, adxl_plugin_mem *mem) {
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  p.address = addr;
  p.length = len;
  if (mem->device) {
    // The type, not UCX's detection: memory UCX's allocation hooks did not
    // see would be taken for host memory.  That it is device memory is the
    // engine's check (cudaPointerGetAttributes in CUDA builds).
    p.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    p.memory_type = device_type_;
  }
  const ucs_status_t st = ucp_mem_map(ucp_, &p, &mem->memh);
  if (st != UCS_OK) {
    log_(ADXL_PLUGIN_LOG_ERROR, "ucp_mem_map(%p, %zu, %s memory): %s", addr, len, mem->device ? "device" : "host",
         ucs_status_string(st));
    return FromUcs(st);
  }
  return ADXL_PLUGIN_OK;
}

void RmaMover::Deregister(adxl_plugin_mem *mem) {
  ucp_mem_unmap(ucp_, mem->memh);
  mem->memh = nullptr;
}
