// Our extension of the vendor's LLM-DataDist C++ API (not in the vendor's
// headers).  The host memory pool of the Python package's allocate_cache /
// allocate_blocks_cache (its init option llm.HostMemPoolConfig): one
// AdxlEngine::MallocMem(MEM_HOST) region, so that same-node peers get the
// engine's direct path for allocated caches, handed out first-fit (lowest
// address) in kAlign-aligned chunks; released chunks merge with their free
// neighbours.
//
// Contract: Init once; Alloc / Release / FreeBytes are thread-safe; Close
// (and the destructor) frees the region, after which Alloc is LLM_FAILED.
// Release takes back chunks Alloc gave (the caller's bookkeeping; a chunk
// outside the region is ignored).
//
// Lock: HostPool::State::mu (host_pool.cc) guards the region and its free
// ranges; a leaf (no other lock is taken under it; MallocMem / FreeMem run
// without it).  The state is behind a pointer so that this public header needs
// none of the engine's internal ones.
#ifndef LLM_DATADIST_LLM_DATADIST_HOST_POOL_H_
#define LLM_DATADIST_LLM_DATADIST_HOST_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "llm_datadist/llm_datadist.h"

namespace llm_datadist {
namespace ext {

class HostPool {
 public:
  static constexpr size_t kAlign = 512;
  using Chunk = std::pair<uintptr_t, size_t>;  // (address, length)

  HostPool();
  ~HostPool();
  HostPool(const HostPool &) = delete;
  HostPool &operator=(const HostPool &) = delete;

  // A region of `size` bytes rounded up to kAlign: LLM_PARAM_INVALID for 0 or
  // a second Init, the engine's status (FromEngine) when MallocMem fails.
  Status Init(size_t size);
  // A chunk of max(kAlign, nbytes rounded up to kAlign) bytes:
  // LLM_OUT_OF_MEMORY when no free range holds it (nothing logged: the
  // caller says why), LLM_FAILED when closed.
  Status Alloc(size_t nbytes, Chunk *chunk);
  void Release(const std::vector<Chunk> &chunks);
  size_t FreeBytes() const;
  uintptr_t Base() const;
  size_t Size() const;
  void Close();

 private:
  struct State;
  std::unique_ptr<State> st_;
};

}  // namespace ext
}  // namespace llm_datadist

#endif  // LLM_DATADIST_LLM_DATADIST_HOST_POOL_H_
