// AmMover (am_mover.h).
#include "am/am_mover.h"

#include "am/am_lane.h"
#include "ucx_handles.h"

int AmMover::Register(void *addr, size_t len, adxl_plugin_mem *mem) {
  if (!mem->device) am_.AddRegion(addr, len, mem->memh);  // throws only std::bad_alloc, having added nothing
  return ADXL_PLUGIN_OK;
}

void AmMover::Deregister(adxl_plugin_mem *mem) {
  if (!mem->device) am_.RemoveRegion(mem->addr);
}
