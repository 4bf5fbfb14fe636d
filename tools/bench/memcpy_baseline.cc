#include "memcpy_baseline.h"

#include <cstring>
#include <string>

#include "device_copy.h"

namespace bench {

StepResult MemcpyStep(uint8_t *dst, const uint8_t *src, size_t block, size_t count, bool device) {
  StepResult out;
  std::string why;
  const Clock::time_point t0 = Clock::now();
  if (device) {
    for (size_t i = 0; i < count; ++i) {
      if (!DeviceCopy(dst + i * block, src + i * block, block, &why)) {
        out.Fail(why);
        break;
      }
    }
  } else {
    for (size_t i = 0; i < count; ++i) memcpy(dst + i * block, src + i * block, block);
  }
  const Clock::time_point t1 = Clock::now();
  out.seconds = std::chrono::duration<double>(t1 - t0).count();
  out.call_us.push_back(Micros(t1 - t0));
  return out;
}

StepResult MemcpyLatency(uint8_t *dst, const uint8_t *src, size_t block, int iters, bool device) {
  StepResult out;
  out.call_us.reserve(static_cast<size_t>(iters));
  std::string why;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    const Clock::time_point t0 = Clock::now();
    if (device) {
      if (!DeviceCopy(dst, src, block, &why)) {
        out.Fail(why);
        break;
      }
    } else {
      memcpy(dst, src, block);
    }
    // Keep the compiler from dropping copies whose result is never read.
    asm volatile("" : : "r"(dst) : "memory");
    out.call_us.push_back(Micros(Clock::now() - t0));
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace bench
