// OwnedEndpoints: the table of the UCP endpoints the plugin made itself on
// the context's worker, which a peer's request may come back on.
//
// Why: UCP pairs the endpoints two workers make to each other, so the
// reply endpoint of a peer's active-message request is this side's own
// endpoint to that peer wherever one exists, whichever mover made it (the
// AM mover's connections, a network path's, the RMA mover's, the HCCS
// lane's UCP endpoint for device memory).  mem_dereg ends the requests
// pending on a region by force-closing their reply endpoints; an owned one
// must then be closed as its owner's forced teardown would close it, never
// behind the owner's back (a later post on it would use a freed endpoint).
//
// The contract each owner keeps:
//  - Own(ep, ep_id, closed, owner) right after ucp_ep_create;
//  - every read of the endpoint (a post, ucp_ep_rkey_unpack,
//    ucp_ep_print_info) inside BeginUse/EndUse, skipped when BeginUse says
//    false (the endpoint was closed or is being closed: the owner's link
//    has failed, and `closed` tells it so, or already has);
//  - Disown before closing it, and close it only when Disown says true.
// The implementation (am/am_transport.h, which receives the requests and
// closes their reply endpoints) runs `closed` outside UCP callbacks and
// its own locks; the owner's code between BeginUse and EndUse must not
// wait on the table.
//
// Thread-safety: every method may be called from any thread, outside
// ucp_worker_progress.  Defined here, below the movers, so that every
// family of the plugin reaches it without reaching the AM transport.
#ifndef ADXL_PLUGIN_UCX_CORE_OWNED_ENDPOINTS_H_
#define ADXL_PLUGIN_UCX_CORE_OWNED_ENDPOINTS_H_

#include <ucp/api/ucp.h>

#include <cstdint>

class OwnedEndpoints {
 public:
  // Runs once if the table closes the owner's endpoint, before the owner's
  // Disown of it returns: the owner marks its link failed.
  using ClosedFn = void (*)(void *owner, ucp_ep_h ep);

  // `ep`, made by its owner and posted on under `ep_id`, is the owner's.
  // Does nothing when out of memory (the endpoint is then nobody's, logged).
  virtual void Own(ucp_ep_h ep, uint64_t ep_id, ClosedFn closed, void *owner) = 0;
  // The owner is about to close `ep`: true when that is its to do (open, or
  // never owned); false when the table closed it (waiting first for a close
  // under way, and its ClosedFn).  Either way the table forgets it.
  virtual bool Disown(ucp_ep_h ep, uint64_t ep_id) = 0;
  // The owner reads `ep`: true (it stays open until EndUse) unless the
  // table closed it or is closing it (false: leave it alone).
  virtual bool BeginUse(ucp_ep_h ep, uint64_t ep_id) = 0;
  virtual void EndUse(ucp_ep_h ep, uint64_t ep_id) = 0;

 protected:
  ~OwnedEndpoints() = default;  // not owned through this interface
};

#endif  // ADXL_PLUGIN_UCX_CORE_OWNED_ENDPOINTS_H_
