// BufferPool: staging of sync transfers whose local side is unregistered host
// memory (option BufferPool "N:S", docs/contract.md §3.5 and §6.2).
//
// The pool owns N host buffers of S bytes, registered with the transport only
// (never in the engine's registry: they are not advertised to peers and do not
// count against the registration limits).  A staged call is cut into chunks
// of at most S bytes (small descriptors share a chunk, large ones span
// several); WRITE copies a chunk into a buffer and posts it, READ posts into a
// buffer and copies out when it completed.  Up to N chunks are in flight at
// once, across all calls: a call that holds none waits for a free buffer, a
// call that holds some completes its own oldest first, so calls never wait on
// each other while holding buffers.  One deadline covers the whole call.
//
// Contract of Run():
//  - every remote range is checked against the peer's regions before anything
//    moves (PARAM_INVALID with *why otherwise);
//  - SUCCESS: every byte is in place (READ: in the caller's memory);
//  - TIMEOUT / FAILED: `abort(status)` runs while buffers are still in
//    flight, and must make sure nothing more moves on the link (fence / fail
//    it); only then are the buffers given back.  For READ the caller's memory
//    is written only by Run itself, so nothing lands there after it returned.
//    A TIMEOUT with nothing of the call in flight (no buffer came free in
//    time) runs no `abort`: the caller ends it as any TIMEOUT (fails the link,
//    docs/contract.md §6.4) without a fence.
// Thread-safe.
#ifndef ADXL_SRC_CORE_BUFFER_POOL_H_
#define ADXL_SRC_CORE_BUFFER_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "adxl/adxl_types.h"
#include "common/thread_annotations.h"
#include "core/link.h"
#include "core/transfer_plan.h"
#include "memory/registry.h"
#include "transport/transport.h"

namespace adxl {

class BufferPool {
 public:
  // Posts one plan on the link (the engine's own Post, so staging uses the
  // same lanes as any transfer).
  using PostFn = std::function<Status(const TransferPlan &plan, std::unique_ptr<Batch> *batch)>;
  using AbortFn = std::function<void(Status why)>;

  // Allocates and registers `count` buffers of `bytes` each.
  static std::unique_ptr<BufferPool> Create(const std::shared_ptr<Transport> &transport, uint32_t count,
                                            size_t bytes, std::string *why);
  ~BufferPool();
  BufferPool(const BufferPool &) = delete;
  BufferPool &operator=(const BufferPool &) = delete;

  // One staged transfer (see the contract above).  *moved: bytes moved and
  // plugin operations posted, for the link's counters.
  Status Run(const std::shared_ptr<Link> &link, TransferOp op, const std::vector<TransferOpDesc> &descs,
             Clock::time_point deadline, const PostFn &post, const AbortFn &abort, uint64_t *bytes, uint64_t *ops,
             std::string *why);

 private:
  struct Buffer;
  class Lease;
  BufferPool(std::shared_ptr<Transport> transport, size_t bytes);
  Buffer *TryAcquire();
  Buffer *AcquireUntil(Clock::time_point deadline);
  void Release(Buffer *b);

  std::shared_ptr<Transport> transport_;
  size_t bytes_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  Registry regions_;  // the buffers as local regions, for BuildTransferPlan; fixed after Create
  Mutex mu_;  // a leaf (engine.h): guards free_; held only to take or give back a buffer
  CondVar cv_;
  std::vector<Buffer *> free_ ADXL_GUARDED_BY(mu_);
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_BUFFER_POOL_H_
