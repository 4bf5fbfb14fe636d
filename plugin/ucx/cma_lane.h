// CmaLane: the HCCS lane of the UCX plugin — UCT's cross-memory-attach
// transport ("cma", process_vm_readv/writev) used directly.
//
// Why UCT and not UCP: UCP 1.13 never selects cma for RMA, and its shared-
// memory RMA on user memory is emulated (needs the target to progress).  cma
// zero-copy is truly one-sided on any registered memory: the initiator's own
// system call moves the bytes, so a stopped target still completes, and when
// a call returns nothing of it moves any more.
//
// UCT's single-copy transports queue each zcopy and move the bytes while the
// UCT worker is progressed (in segments); Copy() posts a whole batch and
// progresses until every byte is in place.  A UCT worker is single-threaded,
// so the lane opens several "stripes" (a worker and an interface each, one
// endpoint per stripe to every peer), each used by one thread at a time:
//   - a large batch (kStripeMinBytes or more) is cut into one part per
//     stripe by bytes; the caller copies the first part, the lane's copy
//     threads (one per further stripe) the others, all at once.  One kernel
//     copy (process_vm_writev) ran at about half the speed of a user-space
//     memcpy on the 2-core CI machines; two in parallel came close to it.
//   - a small batch runs in the caller's thread on the first free stripe.
//
// Locks.  Stripe::mu: the stripe's UCT worker, interface and endpoints (UCT
// workers are single-threaded); held across a whole CopyOn, which progresses
// only that UCT worker (no UCP, no callback into this lane).  CopyThread::mu:
// the thread's job queue and stop flag; never held while a job runs.  Copy's
// local completion mutex: its pending count and status.  Nesting: a job takes
// Stripe::mu, then the completion mutex; no lock of this lane is held with
// UCP's worker lock or with the AM lane's locks.
//
// Thread-safety: Copy, Register/Deregister, Connect/Disconnect, Unpack and
// Release from any thread; Open once before, and the destructor after, all
// of them.
#ifndef ADXL_PLUGIN_UCX_CMA_LANE_H_
#define ADXL_PLUGIN_UCX_CMA_LANE_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <uct/api/uct.h>

class CmaLane {
 public:
  CmaLane() = default;
  ~CmaLane();
  CmaLane(const CmaLane &) = delete;
  CmaLane &operator=(const CmaLane &) = delete;

  // Opens the cma transport with `stripes` (>= 1) workers, and a copy
  // thread for each but the first; false (and *why) when this UCX has no cma.
  bool Open(unsigned stripes, std::string *why);
  bool available() const { return !stripes_.empty(); }
  // The copy threads, for placement (the caller may pin them).
  std::vector<pthread_t> copy_threads() {
    std::vector<pthread_t> v;
    for (auto &t : threads_) v.push_back(t->thread.native_handle());
    return v;
  }

  // Address peers use to reach this process (device + interface address).
  const std::string &address() const { return address_; }

  // Registration and its packed key (empty when cma needs none).
  bool Register(void *addr, size_t len, uct_mem_h *memh, std::string *packed, std::string *why);
  void Deregister(uct_mem_h memh);

  // Remote keys.
  bool Unpack(const std::string &packed, uct_rkey_bundle_t *rkey, std::string *why);
  void Release(uct_rkey_bundle_t *rkey);

  // A peer: one endpoint per stripe.  nullptr when the peer is not
  // reachable over cma (another host, another PID namespace...).
  struct Peer {
    std::vector<uct_ep_h> eps;  // [stripe]
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
  // when all bytes are in place (UCS_OK) or the first error.
  ucs_status_t Copy(bool put, Peer *peer, const Op *ops, size_t count);

  // Batches of at least this many bytes are striped.
  static constexpr size_t kStripeMinBytes = 512u << 10;

 private:
  struct Stripe {
    ucs_async_context_t *async = nullptr;
    uct_worker_h worker = nullptr;
    uct_iface_h iface = nullptr;
    std::mutex mu;  // the worker and interface are single-threaded
  };
  // A copy thread: runs jobs on its own stripe, in order.
  struct CopyThread {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> jobs;
    bool stop = false;
    std::thread thread;
  };

  bool OpenStripe(Stripe *s, std::string *why);
  // Copies on one stripe; the caller holds s->mu.
  ucs_status_t CopyOn(Stripe *s, bool put, uct_ep_h ep, const Op *ops, size_t count);
  void RunCopyThread(CopyThread *t);

  uct_component_h component_ = nullptr;
  uct_component_h *components_ = nullptr;
  uct_md_h md_ = nullptr;
  std::vector<std::unique_ptr<Stripe>> stripes_;
  std::vector<std::unique_ptr<CopyThread>> threads_;  // [i] serves stripes_[i + 1]
  size_t dev_addr_len_ = 0;
  size_t max_zcopy_ = 0;
  bool need_reg_ = false;
  size_t rkey_size_ = 0;
  std::string address_;
};

#endif  // ADXL_PLUGIN_UCX_CMA_LANE_H_
