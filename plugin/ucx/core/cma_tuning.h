// CmaTuning: the cma mover's settings (hccs/cma_transport.h, "Threads") and
// their defaults, here below the movers so that the plugin's parameters
// (ucx_params.h: ADXL_UCX_CMA_SPLIT_BYTES, ADXL_UCX_CMA_SPIN_US) need
// nothing of hccs/.
#ifndef ADXL_PLUGIN_UCX_CORE_CMA_TUNING_H_
#define ADXL_PLUGIN_UCX_CORE_CMA_TUNING_H_

#include <cstddef>

struct CmaTuning {
  // Batches of at least this many bytes are split over the copy threads.
  // Measured on the 2-core reference VM (adxl-bench --lane hccs, one batch
  // of 16 KiB or 256 KiB blocks, 300 loops, split forced on or off with
  // ADXL_UCX_CMA_SPLIT_BYTES, both directions, 2-3 runs each): at 128-512
  // KiB one thread was 5-15 % faster than two, at 768 KiB two threads
  // were even for WRITE and 20-30 % faster for READ, from 1 MiB 20-40 %
  // faster both ways.  ADXL_UCX_CMA_SPLIT_BYTES overrides it.
  static constexpr size_t kSplitMinBytes = 768u << 10;
  // How long a waiting thread spins before it sleeps (a futex wake-up cost
  // tens of microseconds on the 2-core VM); ADXL_UCX_CMA_SPIN_US overrides.
  static constexpr unsigned kSpinUs = 20;

  size_t split_min_bytes = kSplitMinBytes;
  unsigned spin_us = kSpinUs;
};

#endif  // ADXL_PLUGIN_UCX_CORE_CMA_TUNING_H_
