// Clang thread-safety analysis (-Wthread-safety) for the engine and its
// plugins: the macros, and a mutex the analysis understands.
//
// libstdc++'s std::mutex carries no capability attributes, so state guarded
// by one cannot be checked.  adxl::Mutex is a std::mutex that can, and
// adxl::MutexLock its scoped holder.  Declare what a lock guards with
// ADXL_GUARDED_BY(mu_), what a method needs with ADXL_REQUIRES(mu_) or
// ADXL_EXCLUDES(mu_) (a method that calls into something that may re-enter,
// such as UCP, must not hold the lock), and the nesting order with
// ADXL_ACQUIRED_AFTER.  With GCC the macros expand to nothing; the CI build
// with clang (scripts/thread_safety.sh) turns every violation into an error.
#ifndef ADXL_COMMON_THREAD_ANNOTATIONS_H_
#define ADXL_COMMON_THREAD_ANNOTATIONS_H_

#include <mutex>

#if defined(__clang__)
#define ADXL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define ADXL_THREAD_ANNOTATION(x)
#endif

#define ADXL_CAPABILITY(x) ADXL_THREAD_ANNOTATION(capability(x))
#define ADXL_SCOPED_CAPABILITY ADXL_THREAD_ANNOTATION(scoped_lockable)
#define ADXL_GUARDED_BY(x) ADXL_THREAD_ANNOTATION(guarded_by(x))
#define ADXL_PT_GUARDED_BY(x) ADXL_THREAD_ANNOTATION(pt_guarded_by(x))
#define ADXL_ACQUIRED_AFTER(...) ADXL_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define ADXL_ACQUIRED_BEFORE(...) ADXL_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ADXL_REQUIRES(...) ADXL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ADXL_EXCLUDES(...) ADXL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ADXL_ACQUIRE(...) ADXL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ADXL_RELEASE(...) ADXL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define ADXL_NO_THREAD_SAFETY_ANALYSIS ADXL_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace adxl {

class ADXL_CAPABILITY("mutex") Mutex {
 public:
  void Lock() ADXL_ACQUIRE() { mu_.lock(); }
  void Unlock() ADXL_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

class ADXL_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex *mu) ADXL_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ADXL_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock &) = delete;
  MutexLock &operator=(const MutexLock &) = delete;

 private:
  Mutex *mu_;
};

}  // namespace adxl

#endif  // ADXL_COMMON_THREAD_ANNOTATIONS_H_
