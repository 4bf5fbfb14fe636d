// Fault-injection seams (fault_injection.h): compiled into the production
// plugin without ADXL_UCX_FAULT_INJECTION (no key, no delay) and into the
// test build's plugin with it.
#include "core/fault_injection.h"

#if ADXL_UCX_FAULT_INJECTION
#include <unistd.h>

#include <cstdlib>
#include <cstring>

bool ParseFaultParam(const char *key, const char *value, FaultInjection *f) {
  if (strcmp(key, "test_read_data_delay_us") == 0) {
    f->read_data_delay_us = static_cast<unsigned>(strtoul(value, nullptr, 10));
    return true;
  }
  if (strcmp(key, "test_write_accept_delay_us") == 0) {
    f->write_accept_delay_us = static_cast<unsigned>(strtoul(value, nullptr, 10));
    return true;
  }
  if (strcmp(key, "test_ep_destroy_delay_us") == 0) {
    f->ep_destroy_delay_us = static_cast<unsigned>(strtoul(value, nullptr, 10));
    return true;
  }
  if (strcmp(key, "test_hccs_piece_delay_us") == 0) {
    f->hccs_piece_delay_us = static_cast<unsigned>(strtoul(value, nullptr, 10));
    return true;
  }
  if (strcmp(key, "test_foreign_pump_delay_us") == 0) {
    f->foreign_pump_delay_us = static_cast<unsigned>(strtoul(value, nullptr, 10));
    return true;
  }
  if (strcmp(key, "test_own_delay_us") == 0) {
    f->own_delay_us = static_cast<unsigned>(strtoul(value, nullptr, 10));
    return true;
  }
  if (strcmp(key, "test_progress_pause_us") == 0) {
    f->progress_pause_us = static_cast<unsigned>(strtoul(value, nullptr, 10));
    return true;
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
