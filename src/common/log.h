// Engine logging: one line per event on stderr, "[adxl LEVEL pid] message".
//
// The level comes from ADXL_LOG_LEVEL (error, warn, info, debug; default warn).
// Every rejected call logs one ERROR line saying what was wrong, so a user
// who gets PARAM_INVALID can read why.
#ifndef ADXL_SRC_COMMON_LOG_H_
#define ADXL_SRC_COMMON_LOG_H_

namespace adxl {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

bool LogEnabled(LogLevel level);
void LogWrite(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace adxl

#define ADXL_LOG(level, ...)                                              \
  do {                                                                    \
    if (::adxl::LogEnabled(::adxl::LogLevel::level)) ::adxl::LogWrite(::adxl::LogLevel::level, __VA_ARGS__); \
  } while (0)
#define ADXL_ERROR(...) ADXL_LOG(kError, __VA_ARGS__)
#define ADXL_WARN(...) ADXL_LOG(kWarn, __VA_ARGS__)
#define ADXL_INFO(...) ADXL_LOG(kInfo, __VA_ARGS__)
#define ADXL_DEBUG(...) ADXL_LOG(kDebug, __VA_ARGS__)

#endif  // ADXL_SRC_COMMON_LOG_H_
