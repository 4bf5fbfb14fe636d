// The transfer directions, named as in the reference benchmark:
// <source><r if remote>2<r if remote><destination>, H = host, D = device.
// "H2rH" is a WRITE from local host memory to remote host memory, "rH2H" a
// READ of remote host memory into local host memory.
#ifndef ADXL_TOOLS_BENCH_DIRECTIONS_H_
#define ADXL_TOOLS_BENCH_DIRECTIONS_H_

#include <cstring>

#include "adxl/adxl_types.h"

namespace bench {

struct Direction {
  const char *name;
  adxl::TransferOp op;
  adxl::MemType initiator_memory;
  adxl::MemType target_memory;
};

inline const Direction *FindDirection(const char *name) {
  using adxl::MEM_DEVICE;
  using adxl::MEM_HOST;
  static const Direction kAll[] = {
      {"H2rH", adxl::WRITE, MEM_HOST, MEM_HOST},     {"rH2H", adxl::READ, MEM_HOST, MEM_HOST},
      {"D2rD", adxl::WRITE, MEM_DEVICE, MEM_DEVICE}, {"rD2D", adxl::READ, MEM_DEVICE, MEM_DEVICE},
      {"D2rH", adxl::WRITE, MEM_DEVICE, MEM_HOST},   {"rH2D", adxl::READ, MEM_DEVICE, MEM_HOST},
      {"H2rD", adxl::WRITE, MEM_HOST, MEM_DEVICE},   {"rD2H", adxl::READ, MEM_HOST, MEM_DEVICE},
  };
  for (const Direction &d : kAll) {
    if (strcmp(d.name, name) == 0) return &d;
  }
  return nullptr;
}

inline bool UsesDevice(const Direction &d) {
  return d.initiator_memory == adxl::MEM_DEVICE || d.target_memory == adxl::MEM_DEVICE;
}

inline const char *MemoryName(adxl::MemType t) { return t == adxl::MEM_DEVICE ? "device" : "host"; }

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_DIRECTIONS_H_
