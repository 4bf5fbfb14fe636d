#include "core/buffer_pool.h"

#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "common/log.h"
#include "core/batch_wait.h"

namespace adxl {

struct BufferPool::Buffer {
  struct Free {
    void operator()(uint8_t *p) const { free(p); }
  };
  std::unique_ptr<uint8_t, Free> data;   // released after the registration
  std::shared_ptr<LocalRegion> region;  // holds the transport registration
};

// A buffer taken from the pool, given back when the lease ends.
class BufferPool::Lease {
 public:
  Lease(BufferPool *pool, Buffer *b) : pool_(pool), b_(b) {}
  Lease(Lease &&o) noexcept : pool_(o.pool_), b_(o.b_) { o.b_ = nullptr; }
  Lease &operator=(Lease &&) = delete;
  ~Lease() {
    if (b_ != nullptr) pool_->Release(b_);
  }
  uint8_t *data() const { return b_->data.get(); }

 private:
  BufferPool *pool_;
  Buffer *b_;
};

BufferPool::BufferPool(std::shared_ptr<Transport> transport, size_t bytes)
    : transport_(std::move(transport)), bytes_(bytes), regions_(Registry::Limits{UINT32_MAX, UINT64_MAX, UINT64_MAX}) {}

BufferPool::~BufferPool() = default;

std::unique_ptr<BufferPool> BufferPool::Create(const std::shared_ptr<Transport> &transport, uint32_t count,
                                               size_t bytes, std::string *why) {
  std::unique_ptr<BufferPool> pool(new BufferPool(transport, bytes));  // private constructor
  constexpr size_t kAlign = 2u << 20;  // huge-page friendly
  for (uint32_t i = 0; i < count; ++i) {
    auto b = std::make_unique<Buffer>();
    void *p = nullptr;
    if (posix_memalign(&p, kAlign, bytes) != 0) {
      *why = "cannot allocate staging buffer of " + std::to_string(bytes) + " bytes";
      return nullptr;
    }
    b->data.reset(static_cast<uint8_t *>(p));
    memset(p, 0, bytes);  // fault the pages in now, not during a transfer
    b->region = std::make_shared<LocalRegion>();
    int rc = TransportMem::Register(transport, p, bytes, ADXL_PLUGIN_MEM_HOST, &b->region->mem);
    if (rc != ADXL_PLUGIN_OK) {
      *why = "the transport refused to register a staging buffer (status " + std::to_string(rc) + ")";
      return nullptr;
    }
    b->region->addr = reinterpret_cast<uintptr_t>(p);
    b->region->len = bytes;
    b->region->type = MEM_HOST;
    pool->regions_.Insert(b->region);
    pool->Release(b.get());  // not shared yet; the lock only satisfies the analysis
    pool->buffers_.push_back(std::move(b));
  }
  return pool;
}

BufferPool::Buffer *BufferPool::TryAcquire() {
  MutexLock l(&mu_);
  if (free_.empty()) return nullptr;
  Buffer *b = free_.back();
  free_.pop_back();
  return b;
}

BufferPool::Buffer *BufferPool::AcquireUntil(Clock::time_point deadline) {
  MutexLock l(&mu_);
  if (!cv_.WaitUntil(&mu_, deadline, [&]() ADXL_REQUIRES(mu_) { return !free_.empty(); })) return nullptr;
  Buffer *b = free_.back();
  free_.pop_back();
  return b;
}

void BufferPool::Release(Buffer *b) {
  {
    MutexLock l(&mu_);
    free_.push_back(b);
  }
  cv_.NotifyOne();
}

namespace {

// A piece of a caller's descriptor placed in a staging buffer.
struct Piece {
  uintptr_t user;
  uintptr_t remote;
  size_t len;
  size_t buf_off;
};

std::vector<std::vector<Piece>> Chunk(const std::vector<TransferOpDesc> &descs, size_t cap) {
  std::vector<std::vector<Piece>> chunks(1);
  size_t used = 0;
  for (const TransferOpDesc &d : descs) {
    size_t done = 0;
    while (done < d.len) {
      if (used == cap) {
        chunks.emplace_back();
        used = 0;
      }
      const size_t n = std::min(d.len - done, cap - used);
      chunks.back().push_back(Piece{d.local_addr + done, d.remote_addr + done, n, used});
      used += n;
      done += n;
    }
  }
  return chunks;
}

}  // namespace

Status BufferPool::Run(const std::shared_ptr<Link> &link, TransferOp op, const std::vector<TransferOpDesc> &descs,
                       Clock::time_point deadline, const PostFn &post, const AbortFn &abort, uint64_t *bytes,
                       uint64_t *ops, std::string *why) {
  // 1. No range wraps (the copies below would touch the wrapped address;
  // ClassifyLocal let such a descriptor through for the checks to report),
  // and every remote range lies in the peer's registered memory.
  for (size_t i = 0; i < descs.size(); ++i) {
    const TransferOpDesc &d = descs[i];
    if (DescriptorOverflows(i, d, why)) return PARAM_INVALID;
    if (!link->CoversRemote(d.remote_addr, d.len)) {
      char buf[160];
      snprintf(buf, sizeof(buf), "descriptor %zu {remote 0x%" PRIxPTR ", len %zu}: ", i, d.remote_addr, d.len);
      *why = std::string(buf) + "remote range is not inside memory the peer registered";
      return PARAM_INVALID;
    }
  }
  // 2. Chunks through the buffers, up to all of them in flight.
  struct InFlight {
    Lease lease;
    const std::vector<Piece> *pieces;
    TransferPlan plan;
    std::unique_ptr<Batch> batch;
  };
  const std::vector<std::vector<Piece>> chunks = Chunk(descs, bytes_);
  std::deque<InFlight> inflight;
  size_t next = 0;
  Status result = SUCCESS;
  *bytes = 0;
  *ops = 0;
  auto fail = [&](Status st, const std::string &what) {
    if (result == SUCCESS) {
      result = st;
      *why = what;
    }
  };
  BatchWait wait(*transport_);  // one for the whole call (batch_wait.h)
  while (result == SUCCESS && (next < chunks.size() || !inflight.empty())) {
    // Post what free buffers allow.
    while (result == SUCCESS && next < chunks.size()) {
      Buffer *b = inflight.empty() ? AcquireUntil(deadline) : TryAcquire();
      if (b == nullptr) {
        if (inflight.empty()) fail(TIMEOUT, "no staging buffer became free before the deadline");
        break;
      }
      Lease lease(this, b);
      const std::vector<Piece> &chunk = chunks[next];
      std::vector<TransferOpDesc> staged;
      staged.reserve(chunk.size());
      for (const Piece &p : chunk) {
        if (op == WRITE) memcpy(lease.data() + p.buf_off, reinterpret_cast<const void *>(p.user), p.len);
        staged.push_back(TransferOpDesc{reinterpret_cast<uintptr_t>(lease.data()) + p.buf_off, p.remote, p.len});
      }
      TransferPlan plan;
      std::string plan_why;
      Status st;
      {
        Link::RegionsView remote(*link);
        st = BuildTransferPlan(staged, regions_, remote.table(), &plan, &plan_why);
      }
      if (st != SUCCESS) {  // the peer withdrew a region meanwhile
        fail(st, plan_why);
        break;
      }
      std::unique_ptr<Batch> batch;
      st = post(plan, &batch);
      if (st != SUCCESS) {
        fail(st, "the transport refused a staged chunk");
        break;
      }
      inflight.push_back(InFlight{std::move(lease), &chunk, std::move(plan), std::move(batch)});
      ++next;
    }
    if (result != SUCCESS || inflight.empty()) break;
    // Complete the oldest chunk.
    // One step at a time: a buffer another call gives back meanwhile is
    // put to work before the oldest chunk completed.
    InFlight &f = inflight.front();
    int rc = ADXL_PLUGIN_OK;
    const BatchWait::Outcome waited = wait.Step(*f.batch, deadline, &rc);
    if (waited == BatchWait::Outcome::kTimedOut) {
      fail(TIMEOUT, "the deadline passed with staged chunks in flight");
      break;
    }
    if (waited == BatchWait::Outcome::kRunning) continue;
    if (rc != ADXL_PLUGIN_OK && Clock::now() >= deadline) {
      // A post_by plugin drops what would land after the deadline (the
      // same-node copy stops there inside post): the call's timeout.
      fail(TIMEOUT, "a staged chunk was cut at the deadline (status " + std::to_string(rc) + ")");
      break;
    }
    if (rc != ADXL_PLUGIN_OK) {
      fail(FAILED, "a staged chunk failed in the transport (status " + std::to_string(rc) + ")");
      break;
    }
    for (const Piece &p : *f.pieces) {
      if (op == READ) memcpy(reinterpret_cast<void *>(p.user), f.lease.data() + p.buf_off, p.len);
      *bytes += p.len;
    }
    *ops += f.plan.iov.size();
    inflight.pop_front();
  }
  if (result == SUCCESS) return SUCCESS;
  if (result == TIMEOUT || result == FAILED) {
    // Nothing of this call in flight (no buffer came free in time): nothing
    // to fence; the caller still fails the link (buffer_pool.h).
    if (!inflight.empty()) abort(result);
    return result;
  }
  // Refused mid-way (PARAM_INVALID, RESOURCE_EXHAUSTED): let what is in
  // flight finish before its buffers go back.
  while (!inflight.empty()) {
    int rc = ADXL_PLUGIN_OK;
    if (wait.Until(*inflight.front().batch, deadline, &rc) == BatchWait::Outcome::kTimedOut) {
      abort(TIMEOUT);
      return TIMEOUT;
    }
    inflight.pop_front();
  }
  return result;
}

}  // namespace adxl
