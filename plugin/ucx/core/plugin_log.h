// The UCX plugin's logging: through the engine only.  The engine hands its
// logger to open() (adxl_plugin_config_t::log); the engine decides what is
// written (ADXL_LOG_LEVEL) and how.  With no callback (NULL) the plugin says
// nothing.  Safe from any thread, including UCP callbacks: it formats into a
// stack buffer and calls the callback.
#ifndef ADXL_PLUGIN_UCX_CORE_PLUGIN_LOG_H_
#define ADXL_PLUGIN_UCX_CORE_PLUGIN_LOG_H_

#include <cstdarg>
#include <cstdio>

#include "adxl/plugin/adxl_plugin.h"

struct PluginLog {
  void (*fn)(void *arg, int level, const char *msg) = nullptr;
  void *arg = nullptr;

  // level: ADXL_PLUGIN_LOG_*.
  void operator()(int level, const char *fmt, ...) const __attribute__((format(printf, 3, 4))) {
    if (fn == nullptr) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fn(arg, level, buf);
  }
};

#endif  // ADXL_PLUGIN_UCX_CORE_PLUGIN_LOG_H_
