// ChildGuard: kills and reaps a forked child however the test ends (a
// stopped child would otherwise outlive a failed assertion).
#ifndef ADXL_TESTS_SUPPORT_CHILD_GUARD_H_
#define ADXL_TESTS_SUPPORT_CHILD_GUARD_H_

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

namespace adxl_test {

struct ChildGuard {
  explicit ChildGuard(pid_t p) : pid(p) {}
  ~ChildGuard() { Kill(); }
  ChildGuard(const ChildGuard &) = delete;
  ChildGuard &operator=(const ChildGuard &) = delete;
  void Kill() {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
  pid_t pid;
};

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_CHILD_GUARD_H_
