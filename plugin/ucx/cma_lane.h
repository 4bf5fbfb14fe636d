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
// progresses until every byte is in place, in the caller's thread.  A UCT
// worker is single-threaded, so Copy() calls are serialised by a mutex.
#ifndef ADXL_PLUGIN_UCX_CMA_LANE_H_
#define ADXL_PLUGIN_UCX_CMA_LANE_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include <uct/api/uct.h>

class CmaLane {
 public:
  CmaLane() = default;
  ~CmaLane();
  CmaLane(const CmaLane &) = delete;
  CmaLane &operator=(const CmaLane &) = delete;

  // Opens the cma transport; false (and *why) when this UCX has none.
  bool Open(std::string *why);
  bool available() const { return iface_ != nullptr; }

  // Address peers use to reach this process (device + interface address).
  const std::string &address() const { return address_; }

  // Registration and its packed key (empty when cma needs none).
  bool Register(void *addr, size_t len, uct_mem_h *memh, std::string *packed, std::string *why);
  void Deregister(uct_mem_h memh);

  // Remote keys.
  bool Unpack(const std::string &packed, uct_rkey_bundle_t *rkey, std::string *why);
  void Release(uct_rkey_bundle_t *rkey);

  // Endpoints: nullptr when the peer is not reachable over cma (another
  // host, another PID namespace...).
  uct_ep_h Connect(const std::string &peer_address);
  void Disconnect(uct_ep_h ep);

  struct Op {
    void *local;
    uct_mem_h memh;
    size_t len;
    uint64_t remote;
    uct_rkey_t rkey;
  };
  // Copies every op (put: local -> remote; get: remote -> local) and returns
  // when all bytes are in place (UCS_OK) or the first error.
  ucs_status_t Copy(bool put, uct_ep_h ep, const Op *ops, size_t count);

 private:

  uct_component_h component_ = nullptr;
  uct_component_h *components_ = nullptr;
  uct_md_h md_ = nullptr;
  ucs_async_context_t *async_ = nullptr;
  uct_worker_h worker_ = nullptr;
  uct_iface_h iface_ = nullptr;
  size_t dev_addr_len_ = 0;
  size_t max_zcopy_ = 0;
  bool need_reg_ = false;
  size_t rkey_size_ = 0;
  std::string address_;
  std::mutex mu_;  // the UCT worker and interface are single-threaded
};

#endif  // ADXL_PLUGIN_UCX_CMA_LANE_H_
