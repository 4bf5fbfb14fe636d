// The RDMA lane over several network paths (net_path.h), as the plugin's
// ABI entries (ucx_plugin.cc) use it: memory registered on every path, a
// link's connections paired path by path, batches striped over them
// (stripe.h), teardown.
//
// Pairing (ConnectPaths): local path i takes the first unused peer path
// whose IPv4 address lies in path i's subnet; a local path with no such peer
// path, or whose connection cannot be made, is left out (logged).  A link
// with no pair moves over the context's main worker as without paths.
//
// A striped batch (PostOnPaths) is one AmLane batch per path under the
// link's id, each with the batch's deadline; the plugin batch ends when the
// last of them has, with the first error among them.  A failure of any
// connection of the link fails the link (EpError tells every lane), as with
// ADXL_UCX_RDMA_CONNECTIONS: moving the operations of a failed path over
// the others is not done.
//
// Locks: none here; each path's AmLane and UCP worker as ucx_context.h
// states.  Thread-safety: as the ABI entries that call them.
#ifndef ADXL_PLUGIN_UCX_NET_PATHS_H_
#define ADXL_PLUGIN_UCX_NET_PATHS_H_

#include <cstdint>
#include <string>

#include <ucp/api/ucp.h>

#include "adxl/plugin/adxl_plugin.h"
#include "ucx_blob.h"
#include "ucx_context.h"
#include "ucx_handles.h"

// The paths' worker addresses and subnets, into the address blob.  False
// (logged) when UCP gives no address.
bool AddPathAddresses(adxl_plugin_context *ctx, ucx_blob::Address *a);

// Registers host memory `mem` (addr, len set) with every path's context and
// AM lane; false with *why (nothing left registered on any path).
bool RegisterOnPaths(adxl_plugin_context *ctx, adxl_plugin_mem *mem, std::string *why);
// Undoes RegisterOnPaths: peers can no longer reach the region over a path.
void DeregisterOnPaths(adxl_plugin_context *ctx, adxl_plugin_mem *mem);

// Pairs this side's paths with the peer's and connects each pair (see above).
void ConnectPaths(adxl_plugin_ep *ep, const ucx_blob::Address &peer, ucp_err_handler_cb_t on_error);

// Teardown of a link's path connections, in EpDestroy's order: Fence (no
// callback sends more), Close, Abandon (no byte of an ended batch lands).
void FencePaths(adxl_plugin_ep *ep, int why);
void ClosePaths(adxl_plugin_ep *ep, bool force);
void AbandonPaths(adxl_plugin_ep *ep, int why);
// A connection of the link failed (EpError, under that worker's lock).
void PathsFailed(adxl_plugin_ep *ep, int why);

// Posts a batch of host operations over the link's paths; `batch` (one
// reference held until the last path's part ends) completes as the header
// says.  count 0: the wire-up probe (am_lane.h) of every connection of the
// link, the paths' and the main endpoint's.
void PostOnPaths(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
                 adxl_plugin_batch *batch);

// "tcp/eth1+tcp/eth2": each path connection's transports.
std::string DescribePaths(adxl_plugin_ep *ep);

#endif  // ADXL_PLUGIN_UCX_NET_PATHS_H_
