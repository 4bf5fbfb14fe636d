// Benchmark memory: page-aligned, touched before any timing (so page faults
// are not measured), from mmap or from AdxlEngine::MallocMem (--memory), or
// device memory from AdxlEngine::MallocMem(MEM_DEVICE) for the device
// directions; plus the deterministic pattern and hash both processes use to
// check a transfer without shipping the data.
#ifndef ADXL_TOOLS_BENCH_BUFFER_H_
#define ADXL_TOOLS_BENCH_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "adxl/adxl_types.h"
#include "options.h"

namespace bench {

class PageBuffer {
 public:
  PageBuffer() = default;
  ~PageBuffer();
  PageBuffer(PageBuffer &&o) noexcept;
  PageBuffer &operator=(PageBuffer &&o) noexcept;
  PageBuffer(const PageBuffer &) = delete;
  PageBuffer &operator=(const PageBuffer &) = delete;

  // Gets `len` bytes of `memory` (mmap advised as `pages` says, or
  // MallocMem(MEM_HOST) for kAdxl, whose pages are the engine's choice) and
  // writes every page once.
  static bool Allocate(size_t len, Memory memory, Pages pages, PageBuffer *out, std::string *why);
  static bool Allocate(size_t len, Pages pages, PageBuffer *out, std::string *why) {
    return Allocate(len, Memory::kHost, pages, out, why);
  }
  // `len` bytes of AdxlEngine::MallocMem(MEM_DEVICE), zeroed (device_copy.h).
  static bool AllocateDevice(size_t len, PageBuffer *out, std::string *why);

  uint8_t *data() const { return data_; }
  uintptr_t addr() const { return reinterpret_cast<uintptr_t>(data_); }
  size_t size() const { return len_; }
  Memory memory() const { return memory_; }
  bool device() const { return device_; }

 private:
  void Release();

  uint8_t *data_ = nullptr;
  size_t len_ = 0;
  Memory memory_ = Memory::kHost;
  bool device_ = false;  // device memory: only device_copy.h touches its bytes
};

// FillPattern / Poison / HashBytes of the first `len` bytes of a buffer,
// host or device (through a host copy).  False with *why when a device copy
// fails.
bool FillBuffer(const PageBuffer &b, size_t len, uint64_t seed, std::string *why);
bool PoisonBuffer(const PageBuffer &b, size_t len, std::string *why);
bool HashBuffer(const PageBuffer &b, size_t len, uint64_t *hash, std::string *why);

// The engine options that go with buffers of `memory`: kAdxl needs
// EnableUseFabricMem=1, without which MallocMem memory is registered like any
// other and a same-node peer still reaches it by cross-memory attach.
std::map<adxl::AscendString, adxl::AscendString> EngineOptions(Memory memory);

// A row's memory column: "host" (mmap), "host-adxl" (MallocMem) or "device".
// The kernel's transparent-huge-page mode ("always", "madvise", "never"), or
// "unknown": says whether --pages huge can get huge pages on this machine.
std::string TransparentHugePagesSetting();

std::string MemoryLabel(adxl::MemType type, Memory memory);

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
