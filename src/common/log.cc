#include "common/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace adxl {
namespace {

LogLevel LevelFromEnv() {
  const char *v = getenv("ADXL_LOG_LEVEL");
  if (v == nullptr) return LogLevel::kWarn;
  if (strcasecmp(v, "error") == 0) return LogLevel::kError;
  if (strcasecmp(v, "info") == 0) return LogLevel::kInfo;
  if (strcasecmp(v, "debug") == 0) return LogLevel::kDebug;
  return LogLevel::kWarn;
}

const char *Name(LogLevel l) {
  switch (l) {
    case LogLevel::kError: return "ERROR";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    default: return "DEBUG";
  }
}

}  // namespace

bool LogEnabled(LogLevel level) {
  static const LogLevel configured = LevelFromEnv();
  return level <= configured;
}

void LogWrite(LogLevel level, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  // One fprintf per line keeps lines from different threads whole.
  fprintf(stderr, "[adxl %s %d] %s\n", Name(level), static_cast<int>(getpid()), msg);
}

}  // namespace adxl
