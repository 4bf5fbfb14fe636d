// HostPool (host_pool.h): first-fit chunks of one MallocMem(MEM_HOST) region.
#include "host_pool.h"

#include <iterator>
#include <map>

#include "adxl/adxl_engine.h"
#include "common/thread_annotations.h"

// HostPool is a public type (llm_datadist_host_pool.h): defined in its namespace.
namespace llm_datadist::ext {
using internal::FromEngine;
namespace {

size_t RoundUp(size_t n) { return (n + HostPool::kAlign - 1) / HostPool::kAlign * HostPool::kAlign; }

}  // namespace

struct HostPool::State {
  mutable adxl::Mutex mu;
  uintptr_t base ADXL_GUARDED_BY(mu) = 0;
  size_t size ADXL_GUARDED_BY(mu) = 0;
  std::map<uintptr_t, size_t> free ADXL_GUARDED_BY(mu);  // address -> length; disjoint, never adjacent
};

HostPool::HostPool() : st_(std::make_unique<State>()) {}
HostPool::~HostPool() { Close(); }

Status HostPool::Init(size_t size) {
  if (size == 0 || size > SIZE_MAX - kAlign) return LLM_PARAM_INVALID;
  {
    adxl::MutexLock lock(&st_->mu);
    if (st_->base != 0) return LLM_PARAM_INVALID;
  }
  const size_t rounded = RoundUp(size);
  void *p = nullptr;
  const adxl::Status s = adxl::AdxlEngine::MallocMem(adxl::MEM_HOST, rounded, &p);
  if (s != adxl::SUCCESS) return FromEngine(s);
  {
    adxl::MutexLock lock(&st_->mu);
    if (st_->base == 0) {
      st_->base = reinterpret_cast<uintptr_t>(p);
      st_->size = rounded;
      st_->free = {{st_->base, rounded}};
      return LLM_SUCCESS;
    }
  }
  adxl::AdxlEngine::FreeMem(p);  // a concurrent Init won
  return LLM_PARAM_INVALID;
}

Status HostPool::Alloc(size_t nbytes, Chunk *chunk) {
  if (nbytes > SIZE_MAX - kAlign) return LLM_OUT_OF_MEMORY;
  const size_t n = nbytes < kAlign ? kAlign : RoundUp(nbytes);
  adxl::MutexLock lock(&st_->mu);
  if (st_->base == 0) return LLM_FAILED;
  for (auto it = st_->free.begin(); it != st_->free.end(); ++it) {
    if (it->second < n) continue;
    const uintptr_t a = it->first;
    const size_t rest = it->second - n;
    st_->free.erase(it);
    if (rest > 0) st_->free.emplace(a + n, rest);
    *chunk = {a, n};
    return LLM_SUCCESS;
  }
  return LLM_OUT_OF_MEMORY;
}

void HostPool::Release(const std::vector<Chunk> &chunks) {
  adxl::MutexLock lock(&st_->mu);
  for (const Chunk &c : chunks) {
    const bool inside = st_->base != 0 && c.first >= st_->base && c.second != 0 &&
                        c.first + c.second <= st_->base + st_->size;
    if (!inside) continue;
    auto next = st_->free.emplace(c.first, c.second).first;
    if (next != st_->free.begin()) {  // merge with the range before
      auto prev = std::prev(next);
      if (prev->first + prev->second == next->first) {
        prev->second += next->second;
        st_->free.erase(next);
        next = prev;
      }
    }
    auto after = std::next(next);
    if (after != st_->free.end() && next->first + next->second == after->first) {  // and the one after
      next->second += after->second;
      st_->free.erase(after);
    }
  }
}

size_t HostPool::FreeBytes() const {
  adxl::MutexLock lock(&st_->mu);
  size_t n = 0;
  for (const auto &f : st_->free) n += f.second;
  return n;
}

uintptr_t HostPool::Base() const {
  adxl::MutexLock lock(&st_->mu);
  return st_->base;
}

size_t HostPool::Size() const {
  adxl::MutexLock lock(&st_->mu);
  return st_->size;
}

void HostPool::Close() {
  uintptr_t base = 0;
  {
    adxl::MutexLock lock(&st_->mu);
    base = st_->base;
    st_->base = 0;
    st_->free.clear();
  }
  if (base != 0) adxl::AdxlEngine::FreeMem(reinterpret_cast<void *>(base));
}

}  // namespace llm_datadist::ext
