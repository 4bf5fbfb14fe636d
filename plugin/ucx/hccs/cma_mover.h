// CmaMover: cross-memory attach's part of a registration (cma_lane.h): UCT's
// cma memory handle and packed key of a host region.  A region cma cannot
// reach stays registered for the other movers: Register then succeeds with
// mem->cma_ok false (logged), and the HCCS lane cannot reach the region.
#ifndef ADXL_PLUGIN_UCX_HCCS_CMA_MOVER_H_
#define ADXL_PLUGIN_UCX_HCCS_CMA_MOVER_H_

#include "core/mover.h"
#include "core/plugin_log.h"

class CmaLane;

class CmaMover final : public Mover {
 public:
  CmaMover(CmaLane &cma, const PluginLog &log) : cma_(cma), log_(log) {}
  int Register(void *addr, size_t len, adxl_plugin_mem *mem) override;
  void Deregister(adxl_plugin_mem *mem) override;

 private:
  CmaLane &cma_;          // the context's, which outlives its movers
  const PluginLog &log_;  // likewise
};

#endif  // ADXL_PLUGIN_UCX_HCCS_CMA_MOVER_H_
