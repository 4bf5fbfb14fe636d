// Benchmark memory: page-aligned, touched before any timing (so page faults
// are not measured), plus the deterministic pattern and hash both processes
// use to check a transfer without shipping the data.
#ifndef ADXL_TOOLS_BENCH_BUFFER_H_
#define ADXL_TOOLS_BENCH_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace bench {

class PageBuffer {
 public:
  PageBuffer() = default;
  ~PageBuffer();
  PageBuffer(PageBuffer &&o) noexcept;
  PageBuffer &operator=(PageBuffer &&o) noexcept;
  PageBuffer(const PageBuffer &) = delete;
  PageBuffer &operator=(const PageBuffer &) = delete;

  // Maps `len` bytes and writes every page once.
  static bool Allocate(size_t len, PageBuffer *out, std::string *why);

  uint8_t *data() const { return data_; }
  uintptr_t addr() const { return reinterpret_cast<uintptr_t>(data_); }
  size_t size() const { return len_; }

 private:
  uint8_t *data_ = nullptr;
  size_t len_ = 0;
};

// Writes pattern `seed` over [p, p+len): word i of the pattern is a mix of
// the seed and i, so that any misplaced block changes the hash.
void FillPattern(void *p, size_t len, uint64_t seed);
// Overwrites with a value no pattern produces as a whole (the verify pass
// clears the destination before each step).
void Poison(void *p, size_t len);
// A 64-bit hash of [p, p+len), word at a time (several GB/s).
uint64_t HashBytes(const void *p, size_t len);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_BUFFER_H_
