// Device memory for adxl-bench: the only file that knows the CUDA runtime
// (built with ADXL_BENCH_HAVE_CUDA where the toolkit was found, see
// CMakeLists.txt).  The engine buffers of device directions come from
// AdxlEngine::MallocMem(MEM_DEVICE); this fills, poisons and hashes them
// through host copies, and is the memcpy baseline of device directions.
#ifndef ADXL_TOOLS_BENCH_DEVICE_COPY_H_
#define ADXL_TOOLS_BENCH_DEVICE_COPY_H_

#include <cstddef>
#include <string>

namespace bench {

// False (with *why) when this adxl-bench was built without the CUDA toolkit.
bool DeviceCopySupported(std::string *why);

// cudaMemcpy(dst, src, n, cudaMemcpyDefault): host or device on either side,
// done when it returns.
bool DeviceCopy(void *dst, const void *src, size_t n, std::string *why);
// cudaMemset.
bool DeviceSet(void *p, int value, size_t n, std::string *why);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_DEVICE_COPY_H_
