#include "device_copy.h"

#ifdef ADXL_BENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace bench {

#ifdef ADXL_BENCH_HAVE_CUDA

namespace {

bool Check(cudaError_t e, const char *call, std::string *why) {
  if (e == cudaSuccess) return true;
  cudaGetLastError();
  *why = std::string(call) + ": " + cudaGetErrorString(e);
  return false;
}

}  // namespace

bool DeviceCopySupported(std::string *) { return true; }

bool DeviceCopy(void *dst, const void *src, size_t n, std::string *why) {
  return Check(cudaMemcpy(dst, src, n, cudaMemcpyDefault), "cudaMemcpy", why);
}

bool DeviceSet(void *p, int value, size_t n, std::string *why) {
  return Check(cudaMemset(p, value, n), "cudaMemset", why) && Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", why);
}

#else

bool DeviceCopySupported(std::string *why) {
  *why = "this adxl-bench was built without the CUDA toolkit, so it cannot fill or check device memory";
  return false;
}

bool DeviceCopy(void *, const void *, size_t, std::string *why) { return DeviceCopySupported(why); }
bool DeviceSet(void *, int, size_t, std::string *why) { return DeviceCopySupported(why); }

#endif

}  // namespace bench
