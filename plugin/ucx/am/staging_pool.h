// StagingPool: reusable contiguous staging buffers for the AM transport, each
// allocated and registered with UCP once.
//
// Why: a message of several operations is gathered into (or received into)
// one contiguous buffer.  A fresh heap buffer per message costs UCP a memory
// registration and the allocator an mmap/munmap pair every time: measured
// on the RDMA lane over TCP, messages staged that way ran ~20x slower than
// the same bytes sent from registered memory.  Pooled buffers are registered
// once (ucp_mem_map) and handed out with their memh.
//
// Buffers are kBufferBytes each; the pool grows on demand up to max_buffers
// and then hands out nothing (Get() returns an empty Buffer): the caller
// falls back to a plain heap buffer, slower but correct.
//
// Locks: mu_ guards the free list and the count; a leaf (taken under the AM
// transport's mu_ when a batch is freed, and inside UCP callbacks under UCP's
// worker lock); no UCP call is made while holding it.
//
// Thread-safety: Get/Put from any thread; Init and Close from one thread,
// with no buffer handed out.
#ifndef ADXL_PLUGIN_UCX_AM_STAGING_POOL_H_
#define ADXL_PLUGIN_UCX_AM_STAGING_POOL_H_

#include <cstddef>
#include <utility>
#include <vector>

#include <ucp/api/ucp.h>

#include "common/thread_annotations.h"

class StagingPool {
 public:
  // One pooled buffer; returns itself to its pool when destroyed.  Empty
  // (data() == nullptr) when the pool had none to give.
  class Buffer {
   public:
    Buffer() = default;
    Buffer(StagingPool *pool, char *data, ucp_mem_h memh) : pool_(pool), data_(data), memh_(memh) {}
    Buffer(Buffer &&o) noexcept { *this = std::move(o); }
    Buffer &operator=(Buffer &&o) noexcept {
      if (this != &o) {
        Reset();
        std::swap(pool_, o.pool_);
        std::swap(data_, o.data_);
        std::swap(memh_, o.memh_);
      }
      return *this;
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    ~Buffer() { Reset(); }
    char *data() const { return data_; }
    ucp_mem_h memh() const { return memh_; }

   private:
    void Reset();
    StagingPool *pool_ = nullptr;
    char *data_ = nullptr;
    ucp_mem_h memh_ = nullptr;
  };

  static constexpr size_t kBufferBytes = size_t{1} << 20;

  void Init(ucp_context_h ucp, size_t max_buffers);
  // A buffer of kBufferBytes, or an empty one.
  Buffer Get() ADXL_EXCLUDES(mu_);
  // Unmaps every buffer; all must have been returned.
  void Close() ADXL_EXCLUDES(mu_);

 private:
  struct Entry {
    char *data;
    ucp_mem_h memh;
  };
  void Put(char *data, ucp_mem_h memh) ADXL_EXCLUDES(mu_);

  ucp_context_h ucp_ = nullptr;
  size_t max_buffers_ = 0;
  adxl::Mutex mu_;
  std::vector<Entry> free_ ADXL_GUARDED_BY(mu_);
  std::vector<Entry> all_ ADXL_GUARDED_BY(mu_);
  size_t growing_ ADXL_GUARDED_BY(mu_) = 0;  // buffers being mapped outside the lock
};

#endif  // ADXL_PLUGIN_UCX_AM_STAGING_POOL_H_
