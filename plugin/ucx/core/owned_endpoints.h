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
//    for the close under way).  The endpoints of one link on one worker
//    are made in one scope: closed between two creations, the first one's
//    address could come back from the second under the same ep_id;
//  - every read of the endpoint (a post, ucp_ep_rkey_unpack,
//    ucp_ep_print_info) inside a Use, skipped when it is not open (the
//    endpoint was closed or is being closed: the owner's link has failed,
//    and `closed` tells it so, or already has); nothing inside a Use or a
//    Creating scope waits on the table or on another owner (a scope may
//    hold a creation on another worker's table: no table's close waits on
//    another table);
//  - Disown before closing it, and close it only when Disown says true.
// The implementation (am/am_transport.h, which receives the requests and
// closes their reply endpoints) runs `closed` outside UCP callbacks and
// its own locks.  Its waits are bounded by the owners' (a Use, a
// creation: short, by the rule above) and by its own forced closes.
//
// Thread-safety: every method may be called from any thread, outside
// ucp_worker_progress.  Defined here, below the movers, so that every
// family of the plugin reaches it without reaching the AM transport.
// The implementation's lock is not named here: calls through this
// interface are outside clang's thread-safety analysis, and the rules
// above are what keeps them from deadlocking.
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
  // table closed it or is closing it (false: leave it alone).  Use below
  // pairs them.
  virtual bool BeginUse(ucp_ep_h ep, uint64_t ep_id) = 0;
  virtual void EndUse(ucp_ep_h ep, uint64_t ep_id) = 0;

  // A read of an owned endpoint (BeginUse .. EndUse, exception-safe: a use
  // left counted would hold a close, and every creation after it, forever).
  class Use {
   public:
    Use(OwnedEndpoints &table, ucp_ep_h ep, uint64_t ep_id)
        : table_(table), ep_(ep), ep_id_(ep_id), open_(table.BeginUse(ep, ep_id)) {}
    ~Use() {
      if (open_) table_.EndUse(ep_, ep_id_);
    }
    Use(const Use &) = delete;
    Use &operator=(const Use &) = delete;
    // The endpoint may be read until the Use ends.
    bool open() const { return open_; }

   private:
    OwnedEndpoints &table_;
    ucp_ep_h ep_;
    uint64_t ep_id_;
    bool open_;
  };

  // An owner's creation of endpoints, from ucp_ep_create to their Own (or
  // to the failure of a creation): the table closes no endpoint of a
  // peer's meanwhile.  Waits first for a close under way (bounded: see the
  // contract above), unless made with wait false: then started() says
  // whether it began, and a creation that did not must not be made now
  // (the progress thread's, which must not wait: it tries again later).
  class Creating {
   public:
    explicit Creating(OwnedEndpoints &table, bool wait = true) : table_(table), started_(table.BeginCreate(wait)) {}
    ~Creating() {
      if (started_) table_.EndCreate();
    }
    Creating(const Creating &) = delete;
    Creating &operator=(const Creating &) = delete;
    bool started() const { return started_; }

   private:
    OwnedEndpoints &table_;
    bool started_;
  };

 protected:
  // Creating's: false only without `wait`, a close being under way.
  virtual bool BeginCreate(bool wait) = 0;
  virtual void EndCreate() = 0;
  ~OwnedEndpoints() = default;  // not owned through this interface
};

#endif  // ADXL_PLUGIN_UCX_CORE_OWNED_ENDPOINTS_H_
