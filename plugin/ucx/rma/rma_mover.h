// RmaMover: UCP's part of a registration: the region mapped with the UCP
// context (ucp_mem_map), device memory with its memory type.  Its memory
// handle is what UCP RMA (rma_lane.h) puts and gets with, what the AM mover
// (am_mover.h) hands to UCP, and what mem_pack packs as the UCP key; every
// registration has it, so it comes first in the context's MoverSet.
#ifndef ADXL_PLUGIN_UCX_RMA_RMA_MOVER_H_
#define ADXL_PLUGIN_UCX_RMA_RMA_MOVER_H_

#include <ucp/api/ucp.h>

#include "core/mover.h"
#include "core/plugin_log.h"

class RmaMover final : public Mover {
 public:
  // `device_type`: the memory type device registrations are mapped with.
  RmaMover(ucp_context_h ucp, ucs_memory_type_t device_type, const PluginLog &log)
      : ucp_(ucp), device_type_(device_type), log_(log) {}
  int Register(void *addr, size_t len, adxl_plugin_mem *mem) override;
  void Deregister(adxl_plugin_mem *mem) override;

 private:
  ucp_context_h ucp_;
  ucs_memory_type_t device_type_;
  const PluginLog &log_;  // the context's, which outlives its movers
};

#endif  // ADXL_PLUGIN_UCX_RMA_RMA_MOVER_H_
