// The "memcpy" baseline: the same blocks copied by one thread between two
// local buffers.  It is the local physical limit a transfer between two
// processes on this host can approach.  Directions with device memory on
// either side copy with cudaMemcpy instead (`device`; device_copy.h), one
// synchronous call per block.
#ifndef ADXL_TOOLS_BENCH_MEMCPY_BASELINE_H_
#define ADXL_TOOLS_BENCH_MEMCPY_BASELINE_H_

#include <cstddef>
#include <cstdint>

#include "measurement.h"

namespace bench {

// Copies block i of src to block i of dst for i < count: one timed step.
StepResult MemcpyStep(uint8_t *dst, const uint8_t *src, size_t block, size_t count, bool device = false);

// `iters` copies of one block, each timed.
StepResult MemcpyLatency(uint8_t *dst, const uint8_t *src, size_t block, int iters, bool device = false);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_MEMCPY_BASELINE_H_
