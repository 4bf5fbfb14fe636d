// Host <-> device copies for the cache layer's SwapKvBlocks (the Python
// package's swap_blocks).  One job: move bytes between host memory and the
// device memory of whichever runtime owns it.  Its own static library
// (adxl_device_copy, src/CMakeLists.txt), so that the cache layer, which sees
// only libadxl's public API, can copy without libadxl exporting anything.
//
// Which runtime copies a piece, by its device-side address, first match:
//  1. CUDA, when this library was built with the toolkit (ADXL_HAVE_CUDA,
//     a static runtime of its own with hidden symbols, as libadxl's: both
//     share the driver's primary context, so libadxl's cudaMalloc memory and
//     an application's are valid here) and the address is CUDA device memory
//     or managed memory (cudaPointerGetAttributes): cudaMemcpy.
//  2. The host ACL emulation (memory/acl_host.h), when the range lies in one
//     of its aclrtMalloc blocks: that memory is host memory, so memcpy.
//  3. A runtime the application already loaded, as the Python package did
//     with ctypes (dlopen RTLD_NOLOAD only: nothing is loaded here):
//     libcudart's cudaMemcpy (builds without CUDA; with CUDA, step 1 already
//     judged the address), else, when the emulation is not loaded,
//     libascendcl's aclrtMemcpy (a real ACL runtime).  The address is not
//     checked first: that runtime's own error says what was wrong.
//  4. Otherwise UNSUPPORTED, *why saying what was looked for.
// Exercised by tests in builds with and without the CUDA toolkit: steps 2
// and 4 everywhere; step 1 on a GPU (tests/device/swap_blocks_cuda_test.cc,
// CUDA device and managed memory; it skips without a GPU, as in CI: run on
// an H200 host, docs/performance.md "On a GPU host").  Step 3 is written
// from the runtimes' documented calls and run by no test; step 1 is compiled
// only where the toolkit is found, the CUDA part of step 3 only where it is
// not.
//
// Contract:
//  - DeviceCopy copies the pieces in order and returns at the first that
//    fails: SUCCESS; UNSUPPORTED when no runtime above can copy its device
//    side; FAILED when the runtime's copy failed (*why names its error).
//    Pieces before the failing one have been copied.
//  - The host side is trusted to be host memory of at least len bytes.
//  - Thread-safe; no locks (the lookups of steps 1 and 2 cache themselves).
#ifndef ADXL_SRC_MEMORY_DEVICE_COPY_H_
#define ADXL_SRC_MEMORY_DEVICE_COPY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "adxl/adxl_types.h"

namespace adxl {

// The values are cudaMemcpyKind's and aclrtMemcpyKind's, which agree on these two.
enum class CopyKind : int { kHostToDevice = 1, kDeviceToHost = 2 };

struct CopyPiece {
  uintptr_t dst;
  uintptr_t src;
  size_t len;
};

Status DeviceCopy(const std::vector<CopyPiece> &pieces, CopyKind kind, std::string *why);

}  // namespace adxl

#endif  // ADXL_SRC_MEMORY_DEVICE_COPY_H_
