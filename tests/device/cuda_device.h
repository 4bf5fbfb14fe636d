// Whether a CUDA device is usable in this process, for the GPU tests of
// adxl_device_tests (device_memory_test.cc, swap_blocks_cuda_test.cc), which
// skip with *why where it is not.
#ifndef ADXL_TESTS_DEVICE_CUDA_DEVICE_H_
#define ADXL_TESTS_DEVICE_CUDA_DEVICE_H_

#include <string>

#ifdef ADXL_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace adxl_test {

inline bool CudaDevice(std::string *why) {
#ifdef ADXL_TEST_HAVE_CUDA
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
    return false;
  }
  if (n <= 0) *why = "no CUDA device";
  return n > 0;
#else
  *why = "libadxl was built without the CUDA toolkit";
  return false;
#endif
}

}  // namespace adxl_test

#endif  // ADXL_TESTS_DEVICE_CUDA_DEVICE_H_
