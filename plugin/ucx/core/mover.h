// Mover: the interface every data mover of the plugin implements for a
// registration (the ABI's mem_reg / mem_dereg), and MoverSet, the movers a
// context registers memory with, in order.  "Mover" is the plugin's word for
// a way of moving bytes (cma, direct mapping, active messages, network
// paths, UCP RMA); the ABI's HCCS and RDMA "lanes" are the vendor's and are
// served by one or more movers each.
//
// MoverSet::Register registers a region with each mover in turn; when one
// fails (or throws), the movers done so far are deregistered, in reverse
// order, in this one place, and nothing of the region is left registered.
// A mover that can do without a region (cma: the region then moves on the
// other movers) reports success and records that it cannot reach it.
//
// Thread-safety: the set is filled by the context's Open and fixed until
// Close; Register and Deregister may run on any number of threads at once,
// for different registrations (each mover's own locks, e.g. AmLane's).
#ifndef ADXL_PLUGIN_UCX_CORE_MOVER_H_
#define ADXL_PLUGIN_UCX_CORE_MOVER_H_

#include <cstddef>
#include <memory>
#include <vector>

struct adxl_plugin_mem;

class Mover {
 public:
  virtual ~Mover() = default;
  // Registers [addr, addr + len) into `mem` (whose `device`, and for host
  // memory `addr`, `len`, `share_path` and `share_offset`, the caller set).
  // ADXL_PLUGIN_OK, else the status mem_reg fails with, logged here.  May
  // throw std::bad_alloc, having registered nothing.
  virtual int Register(void *addr, size_t len, adxl_plugin_mem *mem) = 0;
  // Undoes a Register that succeeded.
  virtual void Deregister(adxl_plugin_mem *mem) = 0;
};

class MoverSet {
 public:
  void Add(std::unique_ptr<Mover> m) { movers_.push_back(std::move(m)); }
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
