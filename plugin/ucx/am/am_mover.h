// AmMover: the active-message mover's part of a registration (am_lane.h):
// a host region enters the AM lane's table of regions peers may write to
// and read from (checked on every request), with its UCP memory handle
// (rma_mover.h registers it first).  Device memory never moves here.
#ifndef ADXL_PLUGIN_UCX_AM_AM_MOVER_H_
#define ADXL_PLUGIN_UCX_AM_AM_MOVER_H_

#include "core/mover.h"

class AmLane;

class AmMover final : public Mover {
 public:
  explicit AmMover(AmLane &am) : am_(am) {}
  int Register(void *addr, size_t len, adxl_plugin_mem *mem) override;
  void Deregister(adxl_plugin_mem *mem) override;

 private:
  AmLane &am_;  // the context's, which outlives its movers
};

#endif  // ADXL_PLUGIN_UCX_AM_AM_MOVER_H_
