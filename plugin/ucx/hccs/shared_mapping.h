// SharedMapping: what the direct-mapping mover (mapped_mover.h) moves by on
// the HCCS lane — for a peer region its owner shared as a file, the region's
// pages
// are mapped into this process at key unpack (Map), and every copy to or
// from it is a plain memcpy of the posting thread (Copy): one user-space
// copy, no system call, truly one-sided, complete when Copy returns.
//
// Which regions are shared: MallocMem memory with EnableUseFabricMem=1 (the
// engine registers it with a share_path, its memfd under /proc/<pid>/fd/),
// and any host registration whose pages are a writable MAP_SHARED mapping of
// a file (/dev/shm, memfd, hugetlbfs, a file on disk): FindShareable reads
// /proc/self/maps at registration, finds the file (by its path, else among
// this process's open descriptors, else /proc/self/map_files), keeps a
// descriptor of it open for the registration's life and shares it as
// /proc/<pid>/fd/<fd>.  Private memory (malloc, MAP_PRIVATE, anonymous)
// stays on cma.  A
// region that cannot be mapped (another host, no access to the file) stays
// on cma (cma_transport.h).  Host memory only: device memory never comes here.
//
// Thread-safety: a Region is written by Map and Unmap only, which the caller
// does not run concurrently with any other use of that Region; Contains and
// Copy only read it and may run on any number of threads at once (concurrent
// copies into overlapping bytes are the engine's business, as on every
// lane).  No locks, no UCX.
#ifndef ADXL_PLUGIN_UCX_HCCS_SHARED_MAPPING_H_
#define ADXL_PLUGIN_UCX_HCCS_SHARED_MAPPING_H_

#include <cstddef>
#include <cstdint>
#include <string>

class SharedMapping {
 public:
  // A peer region mapped here.
  struct Region {
    char *mapped = nullptr;    // the peer's region base, as mapped here (null: not mapped)
    void *map_base = nullptr;  // what mmap returned (page aligned)
    size_t map_len = 0;
    uint64_t remote_base = 0;  // the peer's region base address
    uint64_t len = 0;          // the region's length
    const char *kind = "";     // what the file is: "memfd", "shm", "hugetlbfs", "file"
  };

  // A registration's shared file, found by FindShareable.
  struct Shareable {
    int fd = -1;          // owned by the registration: close at deregistration
    uint64_t offset = 0;  // where the region starts in the file
    const char *kind = "";
  };
  // Whether [addr, addr + len) is entirely one writable MAP_SHARED mapping
  // of one file (contiguous in it), and a descriptor of that file; false
  // (and *why) otherwise.  Reads /proc/self/maps.
  static bool FindShareable(const void *addr, size_t len, Shareable *out, std::string *why);
  // What the open file `fd` is ("memfd", "shm", "hugetlbfs" or "file").
  static const char *KindOf(int fd);
  // Those kinds, in the order ep_describe lists them
  // (adxl_plugin_ep::mapped_kinds is indexed the same).
  static constexpr const char *kKinds[4] = {"memfd", "shm", "hugetlbfs", "file"};

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

#endif  // ADXL_PLUGIN_UCX_HCCS_SHARED_MAPPING_H_
