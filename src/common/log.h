// The project's one logger: one line per event on stderr,
// "[<component> LEVEL pid] message".
//
// The component says which layer spoke: "adxl" for the engine (the default),
// "llm_datadist" for the cache layer (its library is compiled with
// ADXL_LOG_COMPONENT="llm_datadist", src/llm_datadist/CMakeLists.txt).  A
// transport plugin logs through the engine: its messages arrive through
// PluginLogCallback (adxl_plugin_config_t::log) and are written under the
// engine's component, prefixed with the plugin's name.
//
// The level comes from ADXL_LOG_LEVEL (off, error, warn, info, debug; default
// warn) for every component and for plugins alike.  Every rejected call logs
// one ERROR line saying what was wrong, so a user who gets PARAM_INVALID can
// read why.
#ifndef ADXL_SRC_COMMON_LOG_H_
#define ADXL_SRC_COMMON_LOG_H_

// Hidden: each library that compiles log.cc (libadxl, libllm_datadist) keeps
// its copy to itself.
#pragma GCC visibility push(hidden)
namespace adxl {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

bool LogEnabled(LogLevel level);
// Writes the line when `level` is enabled; ERROR lines are recorded even when not.
void LogWrite(const char *component, LogLevel level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// The log callback the engine hands a plugin (adxl_plugin_config_t::log):
// `level` is an adxl_plugin_log_level_t, `arg` the plugin's name (a
// NUL-terminated string, or NULL).
void PluginLogCallback(void *arg, int level, const char *msg);

}  // namespace adxl
#pragma GCC visibility pop

#ifndef ADXL_LOG_COMPONENT
#define ADXL_LOG_COMPONENT "adxl"
#endif

// ERROR lines are always formatted (LogWrite records them for
// aclGetRecentErrMsg, common/recent_error.h) and printed if the level allows.
#define ADXL_LOG(level, ...)                                                             \
  do {                                                                                   \
    if (::adxl::LogLevel::level == ::adxl::LogLevel::kError ||                          \
        ::adxl::LogEnabled(::adxl::LogLevel::level))                                     \
      ::adxl::LogWrite(ADXL_LOG_COMPONENT, ::adxl::LogLevel::level, __VA_ARGS__);        \
  } while (0)
#define ADXL_ERROR(...) ADXL_LOG(kError, __VA_ARGS__)
#define ADXL_WARN(...) ADXL_LOG(kWarn, __VA_ARGS__)
#define ADXL_INFO(...) ADXL_LOG(kInfo, __VA_ARGS__)
#define ADXL_DEBUG(...) ADXL_LOG(kDebug, __VA_ARGS__)

#endif  // ADXL_SRC_COMMON_LOG_H_
