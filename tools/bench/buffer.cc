#include "buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include "adxl/adxl_engine.h"
#include "device_copy.h"
#include "directions.h"

namespace bench {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void *MapAnonymous(size_t len, Pages pages, std::string *why) {
  void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    // Advice only: where transparent huge pages are off ("never") or the
    // kernel has none free, kHuge quietly gets base pages.
    madvise(p, len, pages == Pages::kHuge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    return p;
  }
  *why = "cannot map a buffer of " + std::to_string(len) + " bytes: " + strerror(errno);
  return nullptr;
}

void *EngineMalloc(size_t len, std::string *why) {
  void *p = nullptr;
  adxl::Status st = adxl::AdxlEngine::MallocMem(adxl::MEM_HOST, len, &p);
  if (st == adxl::SUCCESS && p != nullptr) return p;
  *why = "AdxlEngine::MallocMem(MEM_HOST, " + std::to_string(len) + ") returned status " + std::to_string(st) +
         " (see the engine's log above)";
  return nullptr;
}

}  // namespace

PageBuffer::~PageBuffer() { Release(); }

void PageBuffer::Release() {
  if (data_ == nullptr) return;
  if (memory_ == Memory::kAdxl || device_) {
    adxl::AdxlEngine::FreeMem(data_);
  } else {
    munmap(data_, len_);
  }
  data_ = nullptr;
  len_ = 0;
}

PageBuffer::PageBuffer(PageBuffer &&o) noexcept
    : data_(std::exchange(o.data_, nullptr)), len_(std::exchange(o.len_, 0)), memory_(o.memory_), device_(o.device_) {}

PageBuffer &PageBuffer::operator=(PageBuffer &&o) noexcept {
  if (this != &o) {
    Release();
    data_ = std::exchange(o.data_, nullptr);
    len_ = std::exchange(o.len_, 0);
    memory_ = o.memory_;
    device_ = o.device_;
  }
  return *this;
}

bool PageBuffer::AllocateDevice(size_t len, PageBuffer *out, std::string *why) {
  if (len == 0) {
    *why = "buffer of 0 bytes";
    return false;
  }
  if (!DeviceCopySupported(why)) return false;
  void *p = nullptr;
  adxl::Status st = adxl::AdxlEngine::MallocMem(adxl::MEM_DEVICE, len, &p);
  if (st != adxl::SUCCESS || p == nullptr) {
    *why = "AdxlEngine::MallocMem(MEM_DEVICE, " + std::to_string(len) + ") returned status " + std::to_string(st) +
           " (see the engine's log above)";
    return false;
  }
  PageBuffer b;
  b.data_ = static_cast<uint8_t *>(p);
  b.len_ = len;
  b.device_ = true;
  if (!DeviceSet(p, 0, len, why)) return false;  // b frees the block
  *out = std::move(b);
  return true;
}

bool PageBuffer::Allocate(size_t len, Memory memory, Pages pages, PageBuffer *out, std::string *why) {
  if (len == 0) {
    *why = "buffer of 0 bytes";
    return false;
  }
  // Touching more than the free memory would end in the OOM killer, not an
  // error message: refuse up front.
  const uint64_t free_bytes =
      static_cast<uint64_t>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (len > free_bytes) {
    *why = "a buffer of " + std::to_string(len) + " bytes does not fit in the " + std::to_string(free_bytes) +
           " bytes of free memory (use a smaller --transfer-size)";
    return false;
  }
  void *p = memory == Memory::kAdxl ? EngineMalloc(len, why) : MapAnonymous(len, pages, why);
  if (p == nullptr) return false;
  PageBuffer b;
  b.data_ = static_cast<uint8_t *>(p);
  b.len_ = len;
  b.memory_ = memory;
  // Touch every page now: the first write to an anonymous page faults, and a
  // fault inside a timed step would be measured as transfer time.  MallocMem
  // promises populated pages; the same loop makes that our guarantee too.
  const long page = sysconf(_SC_PAGESIZE);
  for (size_t off = 0; off < len; off += static_cast<size_t>(page)) b.data_[off] = 1;
  *out = std::move(b);
  return true;
}

std::map<adxl::AscendString, adxl::AscendString> EngineOptions(Memory memory) {
  if (memory == Memory::kAdxl) return {{"EnableUseFabricMem", "1"}};
  return {};
}

std::string TransparentHugePagesSetting() {
  // The file reads e.g. "always [madvise] never": the bracketed word is the mode.
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(f, line)) return "unknown";
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "unknown";
  return line.substr(open + 1, close - open - 1);
}

std::string MemoryLabel(adxl::MemType type, Memory memory) {
  std::string label = MemoryName(type);
  // --memory says where host buffers come from; device buffers always come
  // from MallocMem(MEM_DEVICE).
  if (type == adxl::MEM_HOST && memory == Memory::kAdxl) label += "-adxl";
  return label;
}

void FillPattern(void *p, size_t len, uint64_t seed) {
  auto *bytes = static_cast<uint8_t *>(p);
  const uint64_t base = Mix(seed + 0x9e3779b97f4a7c15ull);
  size_t words = len / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w = Mix(base ^ i);
    memcpy(bytes + 8 * i, &w, 8);
  }
  for (size_t i = words * 8; i < len; ++i) bytes[i] = static_cast<uint8_t>(Mix(base ^ i));
}

void Poison(void *p, size_t len) { memset(p, 0xA5, len); }

uint64_t HashBytes(const void *p, size_t len) {
  const auto *bytes = static_cast<const uint8_t *>(p);
  uint64_t h = 0xcbf29ce484222325ull ^ len;
  size_t words = len / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    memcpy(&w, bytes + 8 * i, 8);
    // Position-dependent, so that swapped blocks do not cancel out.
    h = (h ^ Mix(w + i)) * 0x100000001b3ull;
  }
  for (size_t i = words * 8; i < len; ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  return Mix(h);
}

bool FillBuffer(const PageBuffer &b, size_t len, uint64_t seed, std::string *why) {
  if (!b.device()) {
    FillPattern(b.data(), len, seed);
    return true;
  }
  std::vector<uint8_t> host(len);
  FillPattern(host.data(), len, seed);
  return DeviceCopy(b.data(), host.data(), len, why);
}

bool PoisonBuffer(const PageBuffer &b, size_t len, std::string *why) {
  if (b.device()) return DeviceSet(b.data(), 0xA5, len, why);
  Poison(b.data(), len);
  return true;
}

bool HashBuffer(const PageBuffer &b, size_t len, uint64_t *hash, std::string *why) {
  if (!b.device()) {
    *hash = HashBytes(b.data(), len);
    return true;
  }
  std::vector<uint8_t> host(len);
  if (!DeviceCopy(host.data(), b.data(), len, why)) return false;
  *hash = HashBytes(host.data(), len);
  return true;
}

}  // namespace bench
