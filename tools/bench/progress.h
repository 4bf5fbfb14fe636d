// A one-line progress indicator on stdout, shown only when stdout is a
// terminal: redirected output (files, CI logs, the test suite) stays clean.
#ifndef ADXL_TOOLS_BENCH_PROGRESS_H_
#define ADXL_TOOLS_BENCH_PROGRESS_H_

#include <string>

namespace bench {

class Progress {
 public:
  explicit Progress(int total_rows);
  ~Progress() { Clear(); }
  // Announces the row being measured now.
  void Row(const std::string &what);
  // Erases the line (before printing results).
  void Clear();

 private:
  bool enabled_;
  int total_;
  int done_ = 0;
  bool shown_ = false;
};

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_PROGRESS_H_
