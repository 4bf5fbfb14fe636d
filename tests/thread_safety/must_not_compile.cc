// Negative check of scripts/thread_safety.sh: this file breaks the rules the
// analysis enforces, and the script fails if clang accepts it (a check that
// cannot fail proves nothing).
#include "common/thread_annotations.h"

class Counter {
 public:
  // Reads guarded state without its lock.
  int Unlocked() const { return value_; }
  // Calls a method that must not run under mu_ while holding it (the rule
  // "no call into something that may re-enter while holding a lane lock").
  void Nested() {
    adxl::MutexLock l(&mu_);
    MayReenter();
  }
  void MayReenter() ADXL_EXCLUDES(mu_) {}

 private:
  mutable adxl::Mutex mu_;
  int value_ ADXL_GUARDED_BY(mu_) = 0;
};

int main() {
  Counter c;
  c.Nested();
  return c.Unlocked();
}
