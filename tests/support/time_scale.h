// The one factor by which tests widen their timing bounds for slow builds.
//
// A bound a test asserts ("DeregisterMem returned within 250 ms", "the
// TIMEOUT came within the deadline plus 50 ms plus scheduling slack") is
// written as what a plain build on a loaded 2-core machine needs and passed
// through ScaledMs().  ADXL_TEST_TIME_SCALE (a number >= 1, default 1) is
// read once per process; scripts/sanitize.sh raises it for the ASan and TSan
// builds, whose code runs several times slower.  A bad value falls back to 1
// with a line on stderr, so a typo cannot silently hide a defect.
//
// What is not scaled: the deadlines a test gives the engine, the engine's
// own contractual numbers when a test checks them exactly (a TIMEOUT never
// comes before its deadline), and the waits a test makes on purpose (the
// straggler wait of timeout_checks.h).  A test whose defect would show as a
// delay keeps that delay well above the scaled bound (e.g. by giving the
// engine a long heartbeat), so that it fails under every scale.
#ifndef ADXL_TESTS_SUPPORT_TIME_SCALE_H_
#define ADXL_TESTS_SUPPORT_TIME_SCALE_H_

#include <cstdio>
#include <cstdlib>

namespace adxl_test {

// The factor: ADXL_TEST_TIME_SCALE, or 1 when unset or not a number in [1, 100].
inline double TimeScale() {
  static const double scale = [] {
    const char *e = std::getenv("ADXL_TEST_TIME_SCALE");
    if (e == nullptr || *e == '\0') return 1.0;
    char *end = nullptr;
    const double v = std::strtod(e, &end);
    if (end == e || *end != '\0' || !(v >= 1.0 && v <= 100.0)) {
      std::fprintf(stderr, "ADXL_TEST_TIME_SCALE='%s' is not a number in [1, 100]; using 1\n", e);
      return 1.0;
    }
    return v;
  }();
  return scale;
}

// A timing bound of `ms` milliseconds (as on a plain build), scaled.
inline double ScaledMs(double ms) { return ms * TimeScale(); }

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_TIME_SCALE_H_
