// UcpCore::Wake (ucp_core.h).
#include "core/ucp_core.h"

#include <unistd.h>

#include <cstdint>

void UcpCore::Wake() const {
  uint64_t one = 1;
  ssize_t rc = write(wake_fd, &one, sizeof(one));
  (void)rc;  // a full eventfd counter still wakes the thread
}
