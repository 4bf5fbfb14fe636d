// MoverSet (mover.h): registration with every mover, undone in one place.
#include "core/mover.h"

#include "adxl/plugin/adxl_plugin.h"

int MoverSet::Register(void *addr, size_t len, adxl_plugin_mem *mem) const {
  size_t done = 0;
  try {
    for (; done < movers_.size(); ++done) {
      const int st = movers_[done]->Register(addr, len, mem);
      if (st != ADXL_PLUGIN_OK) {
        Undo(done, mem);
        return st;
      }
    }
  } catch (...) {
    Undo(done, mem);
    throw;
  }
  return ADXL_PLUGIN_OK;
}

void MoverSet::Undo(size_t done, adxl_plugin_mem *mem) const {
  while (done > 0) movers_[--done]->Deregister(mem);
}
