// MappedMover: the direct mapping's part of a registration (mapped_lane.h).
// Host memory that is one shared file mapping is found from this process's
// mappings (no option); its file stays open for the registration's life and
// same-node peers map it through /proc/<pid>/fd/<fd>.  A region the engine
// gave a share_path (MallocMem memory) keeps that one.  A region that is no
// shared mapping is no error: it moves over cma (cma_mover.h).
#ifndef ADXL_PLUGIN_UCX_HCCS_MAPPED_MOVER_H_
#define ADXL_PLUGIN_UCX_HCCS_MAPPED_MOVER_H_

#include "core/mover.h"
#include "core/plugin_log.h"

class MappedMover final : public Mover {
 public:
  explicit MappedMover(const PluginLog &log) : log_(log) {}
  int Register(void *addr, size_t len, adxl_plugin_mem *mem) override;
  void Deregister(adxl_plugin_mem *mem) override;

 private:
  const PluginLog &log_;  // the context's, which outlives its movers
};

#endif  // ADXL_PLUGIN_UCX_HCCS_MAPPED_MOVER_H_
