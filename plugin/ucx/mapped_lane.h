// MappedLane: the HCCS lane's direct mapping — for a peer region its owner
// shared as a file (MallocMem memory with EnableUseFabricMem=1, registered
// with a share_path: its memfd under /proc/<pid>/fd/), the region's pages
// are mapped into this process at key unpack (Map), and every copy to or
// from it is a plain memcpy of the posting thread (Copy): one user-space
// copy, no system call, truly one-sided, complete when Copy returns.  A
// region that cannot be mapped (another host, no access to the file) stays
// on cma (cma_lane.h).  Host memory only: device memory never comes here.
//
// Thread-safety: a Region is written by Map and Unmap only, which the caller
// does not run concurrently with any other use of that Region; Contains and
// Copy only read it and may run on any number of threads at once (concurrent
// copies into overlapping bytes are the engine's business, as on every
// lane).  No locks, no UCX.
#ifndef ADXL_PLUGIN_UCX_MAPPED_LANE_H_
#define ADXL_PLUGIN_UCX_MAPPED_LANE_H_

#include <cstddef>
#include <cstdint>
#include <string>

class MappedLane {
 public:
  // A peer region mapped here.
  struct Region {
    char *mapped = nullptr;    // the peer's region base, as mapped here (null: not mapped)
    void *map_base = nullptr;  // what mmap returned (page aligned)
    size_t map_len = 0;
    uint64_t remote_base = 0;  // the peer's region base address
    uint64_t len = 0;          // the region's length
  };

  // Maps `len` bytes at `offset` of the file at `path`: the peer's region at
  // `remote_base`.  The page tables are set up here (MAP_POPULATE), not in
  // the first copy.  False, with *why, when it cannot.
  static bool Map(const std::string &path, uint64_t remote_base, uint64_t len, uint64_t offset, Region *r,
                  std::string *why);
  static void Unmap(Region *r);

  // Whether [remote, remote + len) lies inside the mapped region.
  static bool Contains(const Region &r, uint64_t remote, uint64_t len) {
    return r.mapped != nullptr && remote >= r.remote_base && remote - r.remote_base <= r.len &&
           len <= r.len - (remote - r.remote_base);
  }
  // put: local -> remote; get: remote -> local.  The caller checked Contains.
  static void Copy(bool put, const Region &r, void *local, uint64_t remote, size_t len);
};

#endif  // ADXL_PLUGIN_UCX_MAPPED_LANE_H_
