// CmaTransport: what the cma mover (cma_mover.h, which owns it) moves by on
// the HCCS lane, for private (not shareable) memory — cross-memory attach:
// the initiator's own process_vm_writev / process_vm_readv moves the bytes
// between its memory and the peer's.
//
// UCT's cma transport is used for what it is good at: the transport's
// address and the reachability test (same host, same PID namespace, the
// ptrace permission UCX checks), and its memory domain's registration and
// keys.  The copies themselves are this transport's own system calls, batched:
// UCT's cma issues one system call and one completion per descriptor, which
// on small blocks cost more than the copy (measured: 0.78 M descriptors/s at
// 4 KiB).  Here one call carries up to IOV_MAX local and IOV_MAX remote
// iovecs, adjacent local iovecs merged with each other and adjacent remote
// ones with each other (the two lists are independent byte streams of equal
// length), so a batch of 1024 × 4 KiB descriptors is one system call.
//
// Truly one-sided: the kernel copies on the initiator's thread, whether the
// target runs, sleeps or is stopped (SIGSTOP), and when Copy returns nothing
// of it moves any more.
//
// Stopping early (copy_stop.h): every system call carries at most
// CopyStop::kPieceBytes, and the thread about to make one first checks the
// batch's CopyStop (its endpoint cancelled, its deadline passed); a thread
// that finds it set copies nothing more of the batch, and the others stop
// at their next check, so Copy returns within about one piece's time.
//
// Threads.  A batch smaller than kSplitMinBytes (measured: below it the
// hand-off to a copy thread costs more than the second thread gains) runs
// entirely on the caller's thread: a 4 KiB TransferSync is one system call
// there, no lock, no allocation.  A larger batch is cut into one part per
// copy thread by bytes (an operation split where a boundary falls inside
// it) -- in fact into several chunks per thread, which the caller and the
// copy threads take one by one, so that a thread that wakes up late (a
// loaded machine) leaves its share to the others; Copy takes back the jobs
// no thread has started and returns when every chunk is done.
//
// Locks.  CopyThread::mu: the thread's job queue and stop flag; never held
// while a job runs.  Split::mu: how many copy threads still work on a split
// batch.  Nesting: CopyThread::mu -> Split::mu (a thread takes its job and
// counts itself in before it lets go of its queue, so that the caller,
// which takes back jobs nobody took, never misses one that runs).  No lock of this transport is held with UCP's worker lock or
// with the AM transport's locks, and no UCX call is made under one.
//
// Thread-safety: Copy, Register/Deregister, Connect/Disconnect, Unpack and
// Release from any thread; Open once before, and the destructor after, all
// of them.
#ifndef ADXL_PLUGIN_UCX_HCCS_CMA_TRANSPORT_H_
#define ADXL_PLUGIN_UCX_HCCS_CMA_TRANSPORT_H_

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <uct/api/uct.h>

#include "common/thread_annotations.h"
#include "core/cma_tuning.h"
#include "hccs/copy_stop.h"

class CmaTransport {
 public:
  CmaTransport() = default;
  ~CmaTransport();
  CmaTransport(const CmaTransport &) = delete;
  CmaTransport &operator=(const CmaTransport &) = delete;

  // Settings (ADXL_UCX_CMA_SPLIT_BYTES, ADXL_UCX_CMA_SPIN_US; read and
  // checked by UcxParams, ucx_context.cc) and their defaults.
  using Tuning = CmaTuning;
  // Opens the cma transport and `threads` - 1 copy threads (threads >= 1:
  // the caller's thread is the first); false (and *why) when this UCX has
  // no cma.
  bool Open(unsigned threads, const Tuning &tuning, std::string *why);
  bool available() const { return iface_ != nullptr; }
  // The copy threads, for placement (the caller may pin them).
  std::vector<pthread_t> copy_threads() {
    std::vector<pthread_t> v;
    for (auto &t : threads_) v.push_back(t->thread.native_handle());
    return v;
  }

  // Address peers use to reach this process: UCT's device and interface
  // address, then this process's PID (4 bytes, little-endian).
  const std::string &address() const { return address_; }

  // Registration and its packed key (empty when cma needs none).
  bool Register(void *addr, size_t len, uct_mem_h *memh, std::string *packed, std::string *why);
  void Deregister(uct_mem_h memh);

  // Remote keys.
  bool Unpack(const std::string &packed, uct_rkey_bundle_t *rkey, std::string *why);
  void Release(uct_rkey_bundle_t *rkey);

  // A peer process.  nullptr when the peer is not reachable over cma
  // (another host, another PID namespace...).
  struct Peer {
    pid_t pid = 0;
  };
  Peer *Connect(const std::string &peer_address);
  void Disconnect(Peer *peer);

  struct Op {
    void *local;
    uct_mem_h memh;
    size_t len;
    uint64_t remote;
    uct_rkey_t rkey;
  };
  // Copies every op (put: local -> remote; get: remote -> local) and returns
  // when all bytes are in place (UCS_OK) or the first error (every part has
  // ended either way: the caller may reuse the buffers).  Stops early when
  // `stop` says so: UCS_ERR_CANCELED (the endpoint was cancelled) or
  // UCS_ERR_TIMED_OUT (the deadline passed), some bytes moved.  *err_no:
  // the system call's errno on failure, ECANCELED or ETIMEDOUT (may be null).
  ucs_status_t Copy(bool put, Peer *peer, const Op *ops, size_t count, const CopyStop &stop, int *err_no = nullptr);

  // Batches of at least this many bytes are split over the copy threads
  // (the default's measurement: core/cma_tuning.h).
  static constexpr size_t kSplitMinBytes = CmaTuning::kSplitMinBytes;
  // Bytes one system call carries at most: a piece of copy_stop.h, between
  // two checks (the kernel's own cap, MAX_RW_COUNT, is just under 2 GiB).
  static constexpr size_t kMaxCallBytes = CopyStop::kPieceBytes;
  // How long a waiting thread spins before it sleeps (core/cma_tuning.h).
  static constexpr unsigned kSpinUs = CmaTuning::kSpinUs;
  // A split batch is cut into this many chunks per thread, each of at
  // least kMinChunkBytes.
  static constexpr size_t kChunksPerThread = 4;
  static constexpr size_t kMinChunkBytes = 64u << 10;

  // One part of a batch: `bytes` bytes from byte `offset` of ops[first].
  // Copied with as few system calls as the iovec limits and kMaxCallBytes
  // allow, `stop` checked before each; 0 or errno (ECANCELED, ETIMEDOUT:
  // stopped).
  static int CopyPart(bool put, pid_t pid, const Op *ops, size_t count, size_t first, size_t offset, size_t bytes,
                      const CopyStop &stop);

 private:
  // A split batch: cut into chunks that the caller and the copy threads
  // take one by one (next), so that a copy thread that wakes up late -- on
  // a loaded machine, milliseconds -- finds the work done by the others
  // instead of holding the batch up.
  struct Chunk {
    size_t first, offset, bytes;  // CopyPart's arguments
  };
  struct Split {
    bool put;
    pid_t pid;
    const Op *ops;
    size_t count;
    const CopyStop *stop;  // the caller's, which outlives the split
    std::vector<Chunk> chunks;
    std::atomic<size_t> next{0};  // the next chunk to take
    std::atomic<int> err{0};      // the first error
    adxl::Mutex mu;
    adxl::CondVar cv;
    size_t running ADXL_GUARDED_BY(mu) = 0;  // copy threads that took their job
    // running, readable without mu: the caller spins on it a little before
    // it sleeps (then takes mu once, so that the last thread has let go).
    std::atomic<size_t> left{0};
  };
  // Takes chunks of s until none is left.
  static void RunChunks(Split *s);
  // A copy thread: runs jobs (a Split to help with) in order.
  struct CopyThread {
    adxl::Mutex mu;
    adxl::CondVar cv;
    std::deque<Split *> jobs ADXL_GUARDED_BY(mu);
    bool stop ADXL_GUARDED_BY(mu) = false;
    // jobs.size(), readable without mu: the thread spins on it a little
    // after a job (the engine posts the next slice of a batch right away).
    std::atomic<size_t> queued{0};
    std::thread thread;
  };

  bool OpenInterface(std::string *why);
  void RunCopyThread(CopyThread *t);

  uct_component_h component_ = nullptr;
  uct_component_h *components_ = nullptr;
  uct_md_h md_ = nullptr;
  ucs_async_context_t *async_ = nullptr;
  uct_worker_h worker_ = nullptr;
  uct_iface_h iface_ = nullptr;  // address and reachability only
  std::vector<std::unique_ptr<CopyThread>> threads_;
  size_t dev_addr_len_ = 0;
  size_t iface_addr_len_ = 0;
  bool need_reg_ = false;
  size_t rkey_size_ = 0;
  size_t split_min_bytes_ = kSplitMinBytes;
  unsigned spin_us_ = kSpinUs;
  std::string address_;
};

#endif  // ADXL_PLUGIN_UCX_HCCS_CMA_TRANSPORT_H_
