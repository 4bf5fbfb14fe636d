// AmMover: the RDMA lane's mover over TCP by active messages (am_transport.h),
// on the context's own worker.
//
// Registration: a host region enters the AM transport's table of regions peers
// may write to and read from (checked on every request), with its UCP
// memory handle (rma_mover.h registers it first).  Device memory never
// moves here.
//
// Binding (ucx_bind.h): an RDMA-lane endpoint is bound to this mover when
// the lane runs over active messages and the link has no network paths
// (paths_mover.h), and so are the host keys unpacked for it.  A batch is
// posted on the endpoint's UCP connections (ADXL_UCX_RDMA_CONNECTIONS) in
// turn and completes when the peer has answered every operation.
//
// Thread-safety: as Mover (core/mover.h); AmTransport's locks (am_transport.h).
#ifndef ADXL_PLUGIN_UCX_AM_AM_MOVER_H_
#define ADXL_PLUGIN_UCX_AM_AM_MOVER_H_

#include <string>

#include "am/am_transport.h"
#include "core/mover.h"
#include "core/ucp_core.h"

class AmMover final : public Mover {
 public:
  explicit AmMover(const UcpCore &core) : core_(core) {}
  // Its protocol engine on the context's worker: the context starts it
  // (AmTransport::Init), drives its deferred work from the progress thread and
  // closes it; a link over network paths probes its main endpoint with it.
  AmTransport &transport() { return am_; }
  const char *name() const override { return "am"; }
  // Post with count 0: the wire-up probe (am_transport.h).
  ADXL_MOVER_DATA_OVERRIDES;
  // Cancel fences the endpoint's batches, closes its UCP endpoints (those
  // the AM transport has not closed already: "Owned endpoints" in
  // am_transport.h; ucx_bind.cc registers them), then abandons what still
  // waits for answers (no late READ data lands).
  // EndpointFailed: the endpoint's batches end from the progress thread,
  // outside ucp_worker_progress.  DescribeEndpoint: "am:tcp/lo", "am*3:..."
  // with several connections.
  ADXL_MOVER_ENDPOINT_OVERRIDES;
  // EndpointFailed's part that network paths share (paths_mover.h): the
  // endpoint's batches on this transport end from the progress thread.
  void EndBatches(adxl_plugin_ep *ep, int why);

 private:
  // mutable: DescribeEndpoint holds the endpoint's UCP endpoint open while
  // it reads it (AmTransport::BeginUse).
  mutable AmTransport am_;
  const UcpCore &core_;  // the context's, which outlives its movers: its worker, log and wake-up
};

#endif  // ADXL_PLUGIN_UCX_AM_AM_MOVER_H_
