// ErrorLines: how many ERROR lines the library wrote to stderr while a test's
// call ran (the contract's "a clear status and one log line" for bad input).
#ifndef ADXL_TESTS_SUPPORT_ERROR_LINES_H_
#define ADXL_TESTS_SUPPORT_ERROR_LINES_H_

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace adxl_test {

// Runs f() with stderr captured: the number of " ERROR " lines it wrote,
// and the text (for the failure message).
template <typename F>
std::pair<int, std::string> ErrorLinesAndText(F f) {
  testing::internal::CaptureStderr();
  f();
  const std::string err = testing::internal::GetCapturedStderr();
  int n = 0;
  for (size_t p = err.find(" ERROR "); p != std::string::npos; p = err.find(" ERROR ", p + 1)) ++n;
  return {n, err};
}

// The number of " ERROR " lines alone.
template <typename F>
int ErrorLines(F f) {
  return ErrorLinesAndText(f).first;
}

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_ERROR_LINES_H_
