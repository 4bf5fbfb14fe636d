// Placement: a rendezvous receive that copies each fragment of a message
// straight to its place in an iov list, asking a gate before every
// fragment, through a UCP generic datatype.
//
// Why: over TCP, UCP 1.13 moves rendezvous data as active-message
// fragments that land in its receive segments and are then copied into the
// receive buffer.  A contiguous receive buffer gives no hold on that copy,
// so a receive that must be able to refuse its data (a WRITE's deadline,
// am_transport.h "Deadlines") or that lists several places went through a
// staging buffer and a second copy.  With the generic datatype UCP hands
// each fragment to Unpack(), which asks the gate and copies it into place
// or drops it: one copy fewer per byte on the receiving thread, which is
// the busiest one of a transfer (adxl-bench --lane rdma, docs/performance.md).
//
// A gate that says no once is not asked again: the rest of the message is
// dropped too (refused() tells).  Bytes placed before that stay placed.
//
// Files: am_placement.cc Placement (no UCP call: a library of its own, for
// the unit tests), am_placement_type.cc the UCP datatype.
//
// Thread-safety: a Placement belongs to one receive; UCP calls Unpack from
// whichever thread progresses the worker, one call at a time per request.
// PlacementType is immutable after Create.
#ifndef ADXL_PLUGIN_UCX_AM_AM_PLACEMENT_H_
#define ADXL_PLUGIN_UCX_AM_AM_PLACEMENT_H_

#include <cstddef>
#include <string>
#include <vector>

#include <ucp/api/ucp.h>

class Placement {
 public:
  // Whether the next fragment may still be placed; `arg` as given below.
  using Gate = bool (*)(void *arg);

  Placement() = default;
  Placement(const Placement &) = delete;
  Placement &operator=(const Placement &) = delete;

  // Receives into `iov` (kept, must stay unchanged while the receive runs);
  // `gate` (optional) is asked before each fragment.
  void Start(std::vector<ucp_dt_iov_t> iov, Gate gate, void *gate_arg);
  // Places [offset, offset + len) of the message from `src` unless refused.
  void Unpack(size_t offset, const void *src, size_t len);
  // Whether some fragment was dropped because the gate said no.
  bool refused() const { return refused_; }
  size_t total() const { return total_; }

 private:
  std::vector<ucp_dt_iov_t> iov_;
  size_t total_ = 0;
  Gate gate_ = nullptr;
  void *gate_arg_ = nullptr;
  bool refused_ = false;
  // Cursor: iov_[at_] starts at message offset at_offset_ (fragments come
  // in order, so the search for the next one starts here).
  size_t at_ = 0;
  size_t at_offset_ = 0;
};

// The UCP datatype whose receive buffer is a Placement* (count 1).  One per
// lane; destroyed with it or by Destroy (UCP frees it).
class PlacementType {
 public:
  PlacementType() = default;
  PlacementType(const PlacementType &) = delete;
  PlacementType &operator=(const PlacementType &) = delete;
  ~PlacementType() { Destroy(); }

  bool Create(std::string *why);
  void Destroy();  // idempotent
  // Valid after a successful Create.
  ucp_datatype_t type() const { return type_; }
  // Points a receive's buffer at `placement`.
  void SetBuffer(Placement *placement, ucp_request_param_t *p, void **buffer, size_t *count) const;

 private:
  ucp_datatype_t type_ = 0;
  bool created_ = false;
};

#endif  // ADXL_PLUGIN_UCX_AM_AM_PLACEMENT_H_
