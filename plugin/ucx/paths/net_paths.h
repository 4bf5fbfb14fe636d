// The RDMA lane over several network paths (net_path.h), as PathsMover
// (paths_mover.h) uses it: a link's connections paired path by path,
// batches striped over them (stripe.h), teardown.
//
// Pairing (ConnectPaths): local path i takes the first unused peer path
// whose IPv4 address lies in path i's subnet; a local path with no such peer
// path is left out (logged).  A paired path without carrier, or whose
// connection cannot be made now, starts down and joins when it can
// (path_failover.h).  A link with no pair moves over the context's main
// worker as without paths.
//
// A striped batch (PostOnPaths) is one AmTransport batch ("part") per connection
// up, each WRITE part with a slice deadline of its own (a short budget from
// its size and its path's measured rate, never past the batch's deadline)
// that the target enforces; the plugin batch ends when the last part has,
// with the first error among them.  A part that ends with a transport error
// while the batch's deadline has not passed - its connection failed, or its
// slice deadline passed - is re-posted by the failover worker on a
// connection still up (path_failover.h); a re-posted WRITE's batch does not
// complete (adxl_plugin_batch::ready_at_ns) before no byte of the failed
// attempt can land at the target any more, so a caller that reuses the
// region once the batch ended never sees it overwritten by a late copy.
// READ parts need no wait: Abandon drops late READ data here.  With every
// connection down, a batch fails with ERR_IO.
//
// The main endpoint of a link with paths carries only the wire-up probe and
// the remote keys; its failure does not fail the link.
//
// Locks: none here; PathLink and PathConn coordinate by atomics
// (path_link.h); each path's AmTransport and UCP worker as ucx_context.h states.
// Thread-safety: as the ABI entries that call them (through PathsMover,
// which owns the paths and the failover).
#ifndef ADXL_PLUGIN_UCX_PATHS_NET_PATHS_H_
#define ADXL_PLUGIN_UCX_PATHS_NET_PATHS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ucp/api/ucp.h>

#include "adxl/plugin/adxl_plugin.h"
#include "core/ucp_core.h"
#include "core/ucx_blob.h"
#include "ucx_handles.h"

class AmTransport;
class NetPath;
class PathFailover;

// Pairs this side's `paths` with the peer's and connects each pair (see
// above); sets ep->paths and returns true when some pair exists.  The link
// is entered in `failover` (null without paths); `core`: the context's
// (log, wake-up).
bool ConnectPaths(adxl_plugin_ep *ep, const ucx_blob::Address &peer, const std::vector<std::unique_ptr<NetPath>> &paths,
                  PathFailover *failover, const UcpCore &core);

// Teardown of a link's path connections (EpDestroy): the failover worker
// stops touching the link; then every open connection is fenced (no
// callback sends more), closed and abandoned (no byte of an ended batch
// lands here).
void ClosePaths(adxl_plugin_ep *ep, bool force);

// Posts a batch of host operations over the link's paths; `batch` (one
// reference held until the last path's part ends) completes as the header
// says.  count 0: the wire-up probe (am_transport.h) of every connection of the
// link up, the paths' and the main endpoint's (on `main`, the AM transport
// of the context's own worker); it succeeds when one path connection
// answered (those that did not are failed over).
void PostOnPaths(adxl_plugin_ep *ep, bool put, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
                 adxl_plugin_batch *batch, AmTransport &main);

// "tcp/eth1+tcp/eth2": each path connection's transports ("down/eth2" for one down).
std::string DescribePaths(const adxl_plugin_ep *ep);

#endif  // ADXL_PLUGIN_UCX_PATHS_NET_PATHS_H_
