// Registry: this engine's memory registrations (docs/contract.md §4).
//
// Rules kept here: the identical range and type registered again is the same
// region (reference counted); a range overlapping another of the same type is
// refused; per-process limits on count and bytes per type.  Regions are
// shared_ptrs so that a transfer in flight keeps its memory registered after
// DeregisterMem.  Not thread-safe: the engine locks.
#ifndef ADXL_SRC_MEMORY_REGISTRY_H_
#define ADXL_SRC_MEMORY_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adxl/adxl_types.h"
#include "config/options.h"
#include "memory/range_table.h"

namespace adxl {

class TransportMem;

struct LocalRegion {
  uint64_t id = 0;  // also the MemHandle value; never reused
  uintptr_t addr = 0;
  size_t len = 0;
  MemType type = MEM_HOST;
  uint32_t refs = 1;  // registrations of this identical range
  // MemDesc::local_only: usable as the local side of this engine's transfers,
  // never advertised to peers (so no peer can reach it).
  bool local_only = false;
  std::unique_ptr<TransportMem> mem;  // null in unit tests
  // What peers are told of this region, encoded for the wire once, when it
  // is registered (core/registrar.h); immutable afterwards.
  std::string advert;
  ~LocalRegion();  // out of line: TransportMem is complete only in registry.cc
};

class Registry {
 public:
  // The engine fills these from EngineOptions (adxl.MaxRegistrations,
  // adxl.MaxDeviceMemory, adxl.MaxHostMemory); the defaults are theirs.
  struct Limits {
    uint32_t max_registrations = kDefaultMaxRegistrations;
    uint64_t max_device_bytes = kDefaultMaxDeviceBytes;
    uint64_t max_host_bytes = kDefaultMaxHostBytes;
  };
  using Table = RangeTable<std::shared_ptr<LocalRegion>>;

  explicit Registry(const Limits &limits) : limits_(limits) {}

  // Checks a new registration.  SUCCESS with *existing set: the identical
  // range is registered (caller bumps refs).  SUCCESS with *existing null: it
  // may be added.  PARAM_INVALID / RESOURCE_EXHAUSTED with *why otherwise.
  Status Check(uintptr_t addr, size_t len, MemType type, std::shared_ptr<LocalRegion> *existing,
               std::string *why) const;
  // Adds a region that Check accepted; assigns its id.
  void Insert(const std::shared_ptr<LocalRegion> &region);
  std::shared_ptr<LocalRegion> Find(uint64_t id) const;
  // Removes a region (whatever its refs); returns it.
  std::shared_ptr<LocalRegion> Erase(uint64_t id);

  // Pieces of [addr, addr+len) over adjacent regions of one type; false when
  // any byte is not registered.
  bool Resolve(uintptr_t addr, size_t len, std::vector<Table::Piece> *out) const;

  std::vector<std::shared_ptr<LocalRegion>> All() const;
  size_t count() const { return by_id_.size(); }
  uint64_t bytes(MemType t) const { return bytes_[t == MEM_DEVICE ? 0 : 1]; }

 private:
  Limits limits_;
  Table tables_[2];  // [MEM_DEVICE], [MEM_HOST]
  std::map<uint64_t, std::shared_ptr<LocalRegion>> by_id_;
  uint64_t bytes_[2] = {0, 0};
  uint64_t next_id_ = 1;
};

}  // namespace adxl

#endif  // ADXL_SRC_MEMORY_REGISTRY_H_
