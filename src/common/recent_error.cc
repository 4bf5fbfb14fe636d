#include "common/recent_error.h"

#include <time.h>

#include <cstdio>

namespace {

struct Recent {
  char msg[1024] = {};
  uint64_t stamp_ns = 0;  // 0: none
};
// Per thread: no lock; each thread reads only what it recorded itself.
thread_local Recent t_recent;

}  // namespace

extern "C" {

void adxl_recent_error_record(const char *msg) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  snprintf(t_recent.msg, sizeof(t_recent.msg), "%s", msg != nullptr ? msg : "");
  t_recent.stamp_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
  if (t_recent.stamp_ns == 0) t_recent.stamp_ns = 1;
}

int adxl_recent_error_take(char *buf, size_t size, uint64_t *stamp_ns) {
  if (t_recent.stamp_ns == 0 || buf == nullptr || size == 0) return 0;
  snprintf(buf, size, "%s", t_recent.msg);
  if (stamp_ns != nullptr) *stamp_ns = t_recent.stamp_ns;
  t_recent.stamp_ns = 0;
  return 1;
}

}  // extern "C"
