#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace bench {

Progress::Progress(int total_rows) : enabled_(isatty(STDOUT_FILENO) == 1), total_(total_rows) {}

void Progress::Row(const std::string &what) {
  ++done_;
  if (!enabled_) return;
  printf("\r\033[K[%d/%d] %s", done_, total_, what.c_str());
  fflush(stdout);
  shown_ = true;
}

void Progress::Clear() {
  if (!shown_) return;
  printf("\r\033[K");
  fflush(stdout);
  shown_ = false;
}

}  // namespace bench
