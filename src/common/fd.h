// An owning file descriptor: closed when the owner goes, moved but never
// copied.  Header-only, because tools/bench (which links only the public
// library) uses it as well as the control channel.
#ifndef ADXL_SRC_COMMON_FD_H_
#define ADXL_SRC_COMMON_FD_H_

#include <unistd.h>

namespace adxl {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd &&o) noexcept : fd_(o.Release()) {}
  Fd &operator=(Fd &&o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.Release();
    }
    return *this;
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives the descriptor up without closing it.
  int Release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace adxl

#endif  // ADXL_SRC_COMMON_FD_H_
