// The device runtime as the engine sees it (docs/contract.md §4.6, §8): one job, kept out
// of everything else so that only this file knows whether the build has one.
//
// Built with the CUDA toolkit (ADXL_WITH_CUDA, which defines ADXL_HAVE_CUDA
// for device_memory.cc alone), it uses the CUDA runtime, linked statically
// into libadxl with its symbols hidden: libadxl.so needs no libcudart at run
// time (the driver, libcuda.so.1, is found at run time as by any CUDA
// program), and an application's own CUDA runtime is never interposed.  Both
// runtimes share the driver's primary context of a device, so pointers from
// either are valid in the other.  Without the toolkit every call below says
// so (UNSUPPORTED) or knows no device memory.
//
// Contract:
//  - DeviceAlloc: cudaMalloc on the calling thread's current device.
//    UNSUPPORTED when the build has no device runtime or the process no usable
//    device (no driver, no GPU: *why names the runtime's error),
//    RESOURCE_EXHAUSTED when the device is out of memory, FAILED otherwise.
//    Blocks are remembered, so that FreeMem and ExportToShareableHandle can
//    tell them from host blocks.
//  - DeviceFree: false when ptr is not the start of a live DeviceAlloc block
//    (nothing done); else frees it (cudaFree), *status saying how it went.
//  - IsDeviceBlock: ptr is the start of a live DeviceAlloc block.
//  - CheckDeviceRange: SUCCESS when [addr, addr+len) may be registered as
//    MEM_DEVICE: both ends are CUDA device memory (cudaMemoryTypeDevice: not
//    managed, not host memory, registered or pinned) of one device.
//    PARAM_INVALID otherwise, with *why.  Where no CUDA device is usable (or
//    the build has no CUDA) the engine cannot judge and answers SUCCESS with
//    *checked = false: the transport is then told the caller's word (a ROCm
//    build of UCX, say).
//  - IsDeviceAddress: addr is known device memory (false when it cannot be
//    known); for refusing to stage device memory through host buffers.
//  - All functions are thread-safe.  The runtime is only touched by calls
//    about device memory: a host-only program never initializes it.
#ifndef ADXL_SRC_MEMORY_DEVICE_MEMORY_H_
#define ADXL_SRC_MEMORY_DEVICE_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "adxl/adxl_types.h"

namespace adxl {

// "CUDA <version>" or "none".
const char *DeviceRuntimeName();

Status DeviceAlloc(size_t size, void **ptr, std::string *why);
bool DeviceFree(void *ptr, Status *status, std::string *why);
bool IsDeviceBlock(const void *ptr);
Status CheckDeviceRange(uintptr_t addr, size_t len, bool *checked, std::string *why);
bool IsDeviceAddress(uintptr_t addr);

}  // namespace adxl

#endif  // ADXL_SRC_MEMORY_DEVICE_MEMORY_H_
