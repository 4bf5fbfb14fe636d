// CmaMover: the HCCS lane's mover for private host memory, over
// cross-memory attach (cma_transport.h: process_vm_readv/writev by the posting
// thread and the cma copy threads).  Truly one-sided and synchronous: a
// batch is complete (or failed) when Post returns.  The copy stops early
// (copy_stop.h) when the endpoint is cancelled (the batch ends CANCELED)
// or post_by's deadline passes (ERR_IO).
//
// Registration: UCT's cma memory handle and packed key of a host region.  A
// region cma cannot reach stays registered for the other movers: Register
// then succeeds with mem->cma_ok false (logged), and the HCCS lane cannot
// reach the region.
//
// Binding (ucx_bind.h): every HCCS endpoint is bound to this mover (its
// peer, its flush, its teardown and description); a peer's key is bound to
// it when the direct mapping cannot reach the region (mapped_mover.h) and
// the key's cma part unpacks.  Device memory on the lane moves as UCP RMA
// (rma_mover.h) instead.
//
// Thread-safety: as Mover (core/mover.h); no state of its own beyond
// CmaTransport's locks (cma_transport.h).
#ifndef ADXL_PLUGIN_UCX_HCCS_CMA_MOVER_H_
#define ADXL_PLUGIN_UCX_HCCS_CMA_MOVER_H_

#include <cstddef>
#include <string>

#include "core/mover.h"
#include "core/owned_endpoints.h"
#include "core/ucp_core.h"
#include "core/ucx_blob.h"
#include "hccs/cma_transport.h"


class CmaMover final : public Mover {
 public:
  // owned: the table of the plugin's own UCP endpoints
  // (core/owned_endpoints.h), which outlives every endpoint: an endpoint's UCP
  // connection for device memory is one; piece_delay_us: the test build's seam
  // (CopyStop::piece_delay_us), 0 otherwise.
  CmaMover(const UcpCore &core, OwnedEndpoints &owned, unsigned piece_delay_us)
      : core_(core), owned_(owned), piece_delay_us_(piece_delay_us) {}
  // Its transport and copy threads: the context opens it (CmaTransport::Open),
  // reads its address and whether it is up.
  CmaTransport &transport() { return cma_; }
  const char *name() const override { return "cma"; }
  ADXL_MOVER_DATA_OVERRIDES;
  bool Synchronous() const override { return true; }
  void Cancel(adxl_plugin_ep *ep, bool force) override;
  bool EndpointFailed(adxl_plugin_ep *ep, int why) override;  // its device-memory UCP endpoint
  std::string DescribeEndpoint(const adxl_plugin_ep *ep) const override;
  std::string DescribeKey(const adxl_plugin_rkey *) const override { return "cma"; }
  void ReleaseKey(adxl_plugin_rkey *rkey) override;

  // Binding.  Connects `ep` to the peer at cma address `address`; false
  // when cma cannot reach it (another host, another PID namespace...).
  bool Connect(adxl_plugin_ep *ep, const std::string &address);
  // Unpacks the cma part of key `k` into `rkey`; false (and *why) when the
  // region is not reachable over cma.
  bool UnpackKey(const ucx_blob::Key &k, adxl_plugin_rkey *rkey, std::string *why);

 private:
  // Operations a batch keeps on the stack: a small batch (a 4 KiB
  // TransferSync) allocates nothing on the shortest path.
  static constexpr size_t kStackOps = 16;

  CmaTransport cma_;
  const UcpCore &core_;  // the context's, which outlives its movers: its log, its worker (device-memory endpoints)
  OwnedEndpoints &owned_;  // the plugin's own endpoints (core/owned_endpoints.h)
  const unsigned piece_delay_us_;
};

#endif  // ADXL_PLUGIN_UCX_HCCS_CMA_MOVER_H_
