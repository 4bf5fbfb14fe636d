// Cache-layer logging: one line per event on stderr,
// "[llm_datadist LEVEL pid] message".  Level from ADXL_LOG_LEVEL as for the
// engine (error, warn, info, debug; default warn).  Every rejected call logs
// one ERROR line.
#ifndef LLM_DATADIST_SRC_DD_LOG_H_
#define LLM_DATADIST_SRC_DD_LOG_H_

namespace llm_datadist {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };
bool LogEnabled(LogLevel level);
void LogWrite(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace llm_datadist

#define DD_LOG(level, ...)                                                                       \
  do {                                                                                           \
    if (::llm_datadist::LogEnabled(::llm_datadist::LogLevel::level))                             \
      ::llm_datadist::LogWrite(::llm_datadist::LogLevel::level, __VA_ARGS__);                    \
  } while (0)
#define DD_ERROR(...) DD_LOG(kError, __VA_ARGS__)
#define DD_WARN(...) DD_LOG(kWarn, __VA_ARGS__)
#define DD_INFO(...) DD_LOG(kInfo, __VA_ARGS__)

#endif  // LLM_DATADIST_SRC_DD_LOG_H_
