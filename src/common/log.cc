#include "common/log.h"

#include <strings.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "adxl/plugin/adxl_plugin.h"
#include "common/recent_error.h"

namespace adxl {
namespace {

// The most verbose level written; -1 writes nothing.
int LevelFromEnv() {
  const char *v = getenv("ADXL_LOG_LEVEL");
  if (v == nullptr) return static_cast<int>(LogLevel::kWarn);
  if (strcasecmp(v, "off") == 0) return -1;
  if (strcasecmp(v, "error") == 0) return static_cast<int>(LogLevel::kError);
  if (strcasecmp(v, "info") == 0) return static_cast<int>(LogLevel::kInfo);
  if (strcasecmp(v, "debug") == 0) return static_cast<int>(LogLevel::kDebug);
  return static_cast<int>(LogLevel::kWarn);
}

const char *Name(LogLevel l) {
  switch (l) {
    case LogLevel::kError: return "ERROR";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    default: return "DEBUG";
  }
}

LogLevel FromPluginLevel(int level) {
  switch (level) {
    case ADXL_PLUGIN_LOG_ERROR: return LogLevel::kError;
    case ADXL_PLUGIN_LOG_WARN: return LogLevel::kWarn;
    case ADXL_PLUGIN_LOG_INFO: return LogLevel::kInfo;
    default: return LogLevel::kDebug;
  }
}

}  // namespace

bool LogEnabled(LogLevel level) {
  static const int configured = LevelFromEnv();
  return static_cast<int>(level) <= configured;
}

void LogWrite(const char *component, LogLevel level, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (level == LogLevel::kError) {
    // For aclGetRecentErrMsg (common/recent_error.h), printed or not.
    char line[1100];
    snprintf(line, sizeof(line), "[%s] %s", component, msg);
    adxl_recent_error_record(line);
  }
  if (!LogEnabled(level)) return;
  // One fprintf per line keeps lines from different threads whole.
  fprintf(stderr, "[%s %s %d] %s\n", component, Name(level), static_cast<int>(getpid()), msg);
}

void PluginLogCallback(void *arg, int level, const char *msg) {
  const LogLevel l = FromPluginLevel(level);
  if (l != LogLevel::kError && !LogEnabled(l)) return;
  const char *plugin = arg != nullptr ? static_cast<const char *>(arg) : "?";
  LogWrite("adxl", l, "plugin %s: %s", plugin, msg != nullptr ? msg : "");
}

}  // namespace adxl
