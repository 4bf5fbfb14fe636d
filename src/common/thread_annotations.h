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

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

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
#define ADXL_REQUIRES_SHARED(...) ADXL_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ADXL_EXCLUDES(...) ADXL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ADXL_ACQUIRE(...) ADXL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ADXL_RELEASE(...) ADXL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define ADXL_ACQUIRE_SHARED(...) ADXL_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define ADXL_RELEASE_SHARED(...) ADXL_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define ADXL_RELEASE_GENERIC(...) ADXL_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define ADXL_NO_THREAD_SAFETY_ANALYSIS ADXL_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace adxl {

class ADXL_CAPABILITY("mutex") Mutex {
 public:
  void Lock() ADXL_ACQUIRE() { mu_.lock(); }
  void Unlock() ADXL_RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// The scoped exclusive lock of a Mutex (MutexLock) or a SharedMutex
// (WriterLock): one template, as both lock and unlock the same way.
template <typename M>
class ADXL_SCOPED_CAPABILITY ScopedLock {
 public:
  explicit ScopedLock(M *mu) ADXL_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~ScopedLock() ADXL_RELEASE() { mu_->Unlock(); }
  ScopedLock(const ScopedLock &) = delete;
  ScopedLock &operator=(const ScopedLock &) = delete;

 private:
  M *mu_;
};
using MutexLock = ScopedLock<Mutex>;

// A condition variable over adxl::Mutex: the caller holds the mutex, as the
// analysis checks; the wait releases and re-acquires it like std's.
class CondVar {
 public:
  template <typename Pred>
  bool WaitUntil(Mutex *mu, std::chrono::steady_clock::time_point deadline, Pred pred) ADXL_REQUIRES(mu) {
    std::unique_lock<std::mutex> l(mu->mu_, std::adopt_lock);
    const bool ok = cv_.wait_until(l, deadline, pred);
    l.release();  // still held: the caller's scope releases it
    return ok;
  }
  template <typename Pred>
  void Wait(Mutex *mu, Pred pred) ADXL_REQUIRES(mu) {
    std::unique_lock<std::mutex> l(mu->mu_, std::adopt_lock);
    cv_.wait(l, pred);
    l.release();
  }
  void NotifyAll() { cv_.notify_all(); }
  void NotifyOne() { cv_.notify_one(); }

 private:
  std::condition_variable cv_;
};

// A reader-writer mutex the analysis understands (std::shared_mutex inside).
class ADXL_CAPABILITY("shared_mutex") SharedMutex {
 public:
  void Lock() ADXL_ACQUIRE() { mu_.lock(); }
  void Unlock() ADXL_RELEASE() { mu_.unlock(); }
  void LockShared() ADXL_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() ADXL_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

using WriterLock = ScopedLock<SharedMutex>;

class ADXL_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex *mu) ADXL_ACQUIRE_SHARED(mu) : mu_(mu) { mu_->LockShared(); }
  ~ReaderLock() ADXL_RELEASE_GENERIC() { mu_->UnlockShared(); }
  ReaderLock(const ReaderLock &) = delete;
  ReaderLock &operator=(const ReaderLock &) = delete;

 private:
  SharedMutex *mu_;
};

}  // namespace adxl

#endif  // ADXL_COMMON_THREAD_ANNOTATIONS_H_
