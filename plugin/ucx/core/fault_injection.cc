// Fault-injection seams (fault_injection.h): compiled into the production
// plugin without ADXL_UCX_FAULT_INJECTION (no key, no delay) and into the
// test build's plugin with it.
#include "core/fault_injection.h"

#if ADXL_UCX_FAULT_INJECTION
#include <unistd.h>

#include <cstdlib>
#include <cstring>

bool ParseFaultParam(const char *key, const char *value, FaultInjection *f) {
  // Every seam is a delay in microseconds (fault_injection.h).
  static constexpr struct {
    const char *key;
    unsigned FaultInjection::*field;
  } kSeams[] = {
      {"test_read_data_delay_us", &FaultInjection::read_data_delay_us},
      {"test_write_accept_delay_us", &FaultInjection::write_accept_delay_us},
      {"test_ep_destroy_delay_us", &FaultInjection::ep_destroy_delay_us},
      {"test_progress_pause_us", &FaultInjection::progress_pause_us},
      {"test_hccs_piece_delay_us", &FaultInjection::hccs_piece_delay_us},
      {"test_own_delay_us", &FaultInjection::own_delay_us},
      {"test_foreign_pump_delay_us", &FaultInjection::foreign_pump_delay_us},
  };
  for (const auto &seam : kSeams) {
    if (strcmp(key, seam.key) == 0) {
      f->*seam.field = static_cast<unsigned>(strtoul(value, nullptr, 10));
      return true;
    }
  }
  return false;
}

void FaultDelay(unsigned us) {
  if (us > 0) usleep(us);
}

#else

bool ParseFaultParam(const char *, const char *, FaultInjection *) { return false; }

void FaultDelay(unsigned) {}

#endif
