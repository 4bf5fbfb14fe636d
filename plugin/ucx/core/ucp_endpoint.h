// UCP endpoint helpers of the UCX plugin: create, close (bounded), describe.  Each takes the worker the endpoint belongs
// to: the context's main worker, or a network path's (net_path.h).
//
// Thread-safety: any thread that is not inside ucp_worker_progress of that
// worker (they progress it); no locks of their own.
#ifndef ADXL_PLUGIN_UCX_CORE_UCP_ENDPOINT_H_
#define ADXL_PLUGIN_UCX_CORE_UCP_ENDPOINT_H_

#include <string>

#include <ucp/api/ucp.h>

struct UcpCore;

// A UCP endpoint of `worker` to the peer worker `address` with peer error
// handling; on_error(arg, status) runs under that worker's lock when UCP
// reports its failure.  Null (logged through core) on failure, *st says why.
ucp_ep_h CreateUcpEp(const UcpCore *core, ucp_worker_h worker, const std::string &address,
                     ucp_err_handler_cb_t on_error, void *arg, ucs_status_t *st);
// Closes `ep` of `worker`, gracefully (what is in flight completes) or
// forcibly (it is cancelled), waiting for the close within a bound (2 s /
// 1 s); one still pending then is left to UCP (logged).  `ep` is closed
// exactly once: UCP owns it from the call on.
void CloseUcpEp(const UcpCore *core, ucp_worker_h worker, ucp_ep_h ep, bool force);
// The transports UCP chose for `ep`, "tcp/lo,tcp/eth0" style ("unknown": none).
std::string DescribeUcpEp(ucp_ep_h ep);

#endif  // ADXL_PLUGIN_UCX_CORE_UCP_ENDPOINT_H_
