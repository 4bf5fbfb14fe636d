// Mover: the interface every data mover of the plugin implements, and
// MoverSet, the movers a context owns.  "Mover" is the plugin's word for a
// way of moving bytes (cma, direct mapping, active messages, network paths,
// UCP RMA); the ABI's HCCS and RDMA "lanes" are the vendor's and are served
// by one or more movers each.
//
// Registration (the ABI's mem_reg / mem_dereg): MoverSet::Register
// registers a region with each mover in turn; when one fails (or throws),
// the movers done so far are deregistered, in reverse order, in this one
// place, and nothing of the region is left registered.  A mover that can do
// without a region (cma: the region then moves on the other movers) reports
// success and records that it cannot reach it.
//
// The data path: a mover is bound to each endpoint when it is created (the
// one that moves its flushes and that its teardown goes through) and to each
// remote key when it is unpacked for that endpoint (the one that reaches
// that region from there); a post finds the mover its keys are bound to and
// calls its Post (ucx_bind.h says how the binding is chosen).  Post,
// Cancel, the descriptions and ReleaseKey take the ABI's handles
// (ucx_handles.h), which core/ never includes: they are only declared here.
//
// Thread-safety: the set is filled by the context's Open and fixed until
// Close.  Register and Deregister may run on any number of threads at once,
// for different registrations; Post on any number of threads at once, for
// the same or different endpoints (ep_cancel may set the endpoint's
// `cancelled` meanwhile); Cancel once per endpoint, after its last Post
// returned; EndpointFailed under the UCP worker lock of the endpoint's
// worker (each mover's own locks, e.g. AmMover's, say the rest).
#ifndef ADXL_PLUGIN_UCX_CORE_MOVER_H_
#define ADXL_PLUGIN_UCX_CORE_MOVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adxl/plugin/adxl_plugin.h"

class Mover {
 public:
  virtual ~Mover() = default;
  // A short name for logs and descriptions: "cma", "mapped", "am",
  // "paths", "rma".
  virtual const char *name() const = 0;

  // Registers [addr, addr + len) into `mem` (whose `device`, and for host
  // memory `addr`, `len`, `share_path` and `share_offset`, the caller set).
  // ADXL_PLUGIN_OK, else the status mem_reg fails with, logged here.  May
  // throw std::bad_alloc, having registered nothing.
  virtual int Register(void *addr, size_t len, adxl_plugin_mem *mem) = 0;
  // Undoes a Register that succeeded.
  virtual void Deregister(adxl_plugin_mem *mem) = 0;

  // Queues (or moves) `count` operations of `iov` between this process and
  // ep's peer, every one of them bound to this mover (count 0: the
  // endpoint's flush, its wire-up); puts when `put`, else gets.
  // deadline_ns: CLOCK_MONOTONIC ns after which no byte may land (0: none;
  // the movers that complete inside Post stop copying there, and when the
  // endpoint's `cancelled` is set, hccs/copy_stop.h).  Ends `batch` (its status)
  // before returning or later, holding a reference of its own until then.
  // May throw std::bad_alloc, having queued nothing.
  virtual void Post(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
                    adxl_plugin_batch *batch) = 0;
  // Whether Post always ends its batch before it returns (cma, the direct
  // mapping): a batch whose keys are bound to several such movers is posted
  // to each in turn (ucx_bind.h); no other mix occurs.
  virtual bool Synchronous() const { return false; }
  // ep_destroy's part of the endpoint bound to this mover: ends everything
  // in flight on it (force: the fence of docs/plugin_guide.md §4.5) and
  // closes what the endpoint holds, UCP endpoints included.
  virtual void Cancel(adxl_plugin_ep *ep, bool force) = 0;
  // UCP reported the failure of a UCP endpoint of `ep` (under its worker's
  // lock): the mover marks `ep` failed (posts on it then fail with `why`)
  // and ends, or has the progress thread end, its batches on it.  False
  // when the endpoint keeps moving without that UCP endpoint (network
  // paths: ep failed is left alone).
  virtual bool EndpointFailed(adxl_plugin_ep *ep, int why) = 0;
  // ep_describe of an endpoint bound to this mover; rkey_describe of a key
  // bound to it (docs/plugin_guide.md §4.4).
  virtual std::string DescribeEndpoint(const adxl_plugin_ep *ep) const = 0;
  virtual std::string DescribeKey(const adxl_plugin_rkey *rkey) const = 0;
  // rkey_destroy's part of a key bound to this mover: what its binding
  // unpacked for it (a mapping, a UCT key).
  virtual void ReleaseKey(adxl_plugin_rkey *) {}
};

// The override declarations every mover writes alike, one list for all of
// them (the movers differ in the definitions and in the comments, which a
// mover's header keeps above the macro).  DATA: Register, Deregister and
// Post, which every mover defines out of line.  ENDPOINT: Cancel,
// EndpointFailed, DescribeEndpoint and DescribeKey, for the movers that
// define none of them inline (the others declare those themselves).
#define ADXL_MOVER_DATA_OVERRIDES                                                                             \
  int Register(void *addr, size_t len, adxl_plugin_mem *mem) override;                                        \
  void Deregister(adxl_plugin_mem *mem) override;                                                             \
  void Post(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns, \
            adxl_plugin_batch *batch) override
#define ADXL_MOVER_ENDPOINT_OVERRIDES                                      \
  void Cancel(adxl_plugin_ep *ep, bool force) override;                    \
  bool EndpointFailed(adxl_plugin_ep *ep, int why) override;               \
  std::string DescribeEndpoint(const adxl_plugin_ep *ep) const override; \
  std::string DescribeKey(const adxl_plugin_rkey *rkey) const override

class MoverSet {
 public:
  // Adds a mover (the set owns it) and returns it, for the context's typed
  // references to it.
  template <typename M>
  M *Add(std::unique_ptr<M> m) {
    M *raw = m.get();
    movers_.push_back(std::move(m));
    return raw;
  }
  // Every mover's Register, in the order added; on a failure (a status or an
  // exception, which then propagates) those done are deregistered.
  int Register(void *addr, size_t len, adxl_plugin_mem *mem) const;
  // Every mover's Deregister, in reverse order.
  void Deregister(adxl_plugin_mem *mem) const { Undo(movers_.size(), mem); }

 private:
  // Deregisters the first `done` movers, last first.
  void Undo(size_t done, adxl_plugin_mem *mem) const;

  std::vector<std::unique_ptr<Mover>> movers_;  // fixed while the context is open
};

#endif  // ADXL_PLUGIN_UCX_CORE_MOVER_H_
