// AmLane: the RDMA lane over TCP — transfers as UCP active messages into
// addresses the receiving side validates, instead of UCP RMA.
//
// Why: UCP 1.13 emulates RMA over TCP with small active messages (~1 GB/s
// on loopback) and uses TCP's zero-copy path only for active-message and tag
// rendezvous.  Here a WRITE is one AM per operation carrying the target
// address (always rendezvous, so that data moves only while the initiator's
// request is alive: a force-closed endpoint moves nothing more), acknowledged
// by the target once the bytes are in place; a READ is a request AM answered
// by the target with the data, received by the initiator into the address it
// asked for.  Both sides accept an address only inside memory registered with
// this plugin (the registration table here), so a peer can reach nothing
// else.  Abandon() fences a cancelled endpoint: late READ data is dropped and
// receives in flight have ended before it returns.
//
// Thread-safety: all methods may be called from any thread; the AM handlers
// run inside ucp_worker_progress on whichever thread progresses.
#ifndef ADXL_PLUGIN_UCX_AM_LANE_H_
#define ADXL_PLUGIN_UCX_AM_LANE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <ucp/api/ucp.h>

class AmLane {
 public:
  // Called exactly once per batch with its final status (ADXL_PLUGIN_*).
  using DoneFn = void (*)(void *arg, int status);
  using LogFn = void (*)(void *arg, int level, const char *msg);

  struct Op {
    void *local;
    ucp_mem_h local_memh;  // may be null
    uint64_t remote;
    size_t len;
  };

  // Installs the AM handlers on the worker.
  bool Init(ucp_worker_h worker, LogFn log, void *log_arg, std::string *why);

  // Memory this process registered: the only memory peers may reach.
  void AddRegion(void *addr, size_t len, ucp_mem_h memh);
  void RemoveRegion(void *addr);

  // Starts a batch on ep; done(arg, status) runs when every op has finished
  // (possibly before Post returns).  Returns false when nothing was started
  // (done is then not called).
  bool Post(ucp_ep_h ep, bool write, const Op *ops, size_t count, DoneFn done, void *arg);

  // Fails every batch still running on ep (status `why`) and waits for its
  // receives in flight, which the force-closed endpoint fails (bounded by
  // kAbandonWait); after this, no byte of those batches is written here.
  // Call after force-closing ep.
  void Abandon(ucp_ep_h ep, int why);

 private:
  struct Batch {
    ucp_ep_h ep;
    size_t remaining;
    int status;
    DoneFn done;
    void *arg;
    std::vector<void *> receives;  // READ data receives in flight
    // Headers of the batch's sends: UCP reads them until each send is out,
    // which is before the batch can finish.
    std::vector<uint64_t> headers;
  };
  struct Region {
    size_t len;
    ucp_mem_h memh;
  };

  static ucs_status_t OnWrite(void *arg, const void *header, size_t header_len, void *data, size_t len,
                              const ucp_am_recv_param_t *param);
  static ucs_status_t OnAck(void *arg, const void *header, size_t header_len, void *data, size_t len,
                            const ucp_am_recv_param_t *param);
  static ucs_status_t OnReadRequest(void *arg, const void *header, size_t header_len, void *data, size_t len,
                                    const ucp_am_recv_param_t *param);
  static ucs_status_t OnReadData(void *arg, const void *header, size_t header_len, void *data, size_t len,
                                 const ucp_am_recv_param_t *param);

  // Is [addr, addr+len) inside one registered region?  Sets *memh.
  bool Registered(uint64_t addr, size_t len, ucp_mem_h *memh);
  void SendAck(ucp_ep_h reply_ep, uint64_t token, int status);
  // One op of batch `token` finished with `status` (ADXL_PLUGIN_*).
  void OpDone(uint64_t token, int status, void *finished_receive = nullptr);
  void Log(int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

  ucp_worker_h worker_ = nullptr;
  LogFn log_ = nullptr;
  void *log_arg_ = nullptr;

  std::mutex regions_mu_;
  std::map<uintptr_t, Region> regions_;

  std::mutex batches_mu_;
  std::unordered_map<uint64_t, Batch> batches_;
  uint64_t next_token_ = 1;
};

#endif  // ADXL_PLUGIN_UCX_AM_LANE_H_
