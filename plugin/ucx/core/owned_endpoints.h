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
//  - ucp_ep_create inside a Creating scope, and Own(ep, ep_id, closed,
//    owner) inside it too: ucp_ep_create may hand back the endpoint UCP
//    made for the peer's requests (the pairing), which the table would
//    otherwise take for nobody's and close while the owner holds it, not
//    yet owned (a close waits for the creations under way, and a creation
//    for the close under way);
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

  // An owner's creation of an endpoint, from ucp_ep_create to its Own (or
  // to the failure of the creation): the table closes no endpoint of a
  // peer's meanwhile.  Waits first for a close under way (bounded, as the
  // table's closes are).
  class Creating {
   public:
    explicit Creating(OwnedEndpoints &table) : table_(table) { table_.BeginCreate(); }
    ~Creating() { table_.EndCreate(); }
    Creating(const Creating &) = delete;
    Creating &operator=(const Creating &) = delete;

   private:
    OwnedEndpoints &table_;
  };

 protected:
  virtual void BeginCreate() = 0;
  virtual void EndCreate() = 0;
  ~OwnedEndpoints() = default;  // not owned through this interface
};

#endif  // ADXL_PLUGIN_UCX_CORE_OWNED_ENDPOINTS_H_
