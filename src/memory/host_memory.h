// Host memory of MallocMem(MEM_HOST) and its process-wide registry (docs/contract.md §8).
//
// One job: NUMA-placed, shareable host allocations.  Contract:
//  - HostAlloc gives memory on the NUMA node SystemTopology chose (the node of
//    the RDMA lane's NIC, or ADXL_NUMA_NODE; see numa_topology.h), backed by
//    2 MiB huge pages when the size is a multiple of 2 MiB and the node has
//    free huge pages, else by normal pages (with transparent huge pages asked
//    for, which the kernel grants only if shmem THP is enabled).  Every page
//    is allocated before HostAlloc returns.  Failing to bind (no topology, a
//    topology that is not this machine) is a warning, not an error.
//  - Each block is a memfd mapped MAP_SHARED, so a process on the same machine
//    can map the same pages from the block's ShareableHandle.
//  - HostExport works only for the exact start of a live block and returns the
//    same handle every time; HostFree releases the block, after which both
//    calls refuse the pointer (PARAM_INVALID) until HostAlloc returns it again.
//  - All functions are thread-safe.  Statuses other than SUCCESS come with
//    *why saying what was wrong; callers log it.
//
// The handle (ShareableHandle::data) holds: magic "ADXH", version, owner pid,
// the memfd's descriptor number in the owner, size, page size, node, a random
// 64-bit id (also in the memfd's name, so an importer can tell a reused
// descriptor number from the block) and the kernel boot id (so a handle from
// another machine is refused instead of mapping some local process's file).
// A peer maps it by opening /proc/<pid>/fd/<fd>, which needs the owner alive,
// the block not freed, and the right to read the owner's /proc entries (same
// user; ptrace read access).
#ifndef ADXL_SRC_MEMORY_HOST_MEMORY_H_
#define ADXL_SRC_MEMORY_HOST_MEMORY_H_

#include <cstddef>
#include <string>

#include "adxl/adxl_types.h"

namespace adxl {

// What the registry knows of one block.
struct HostBlockInfo {
  void *base = nullptr;
  size_t size = 0;       // as asked for
  size_t page_size = 0;  // 2 MiB for hugetlb blocks, else the base page size
  int node = -1;         // OS index of the node it was bound to; -1 when unbound
  int fd = -1;           // the memfd: same-node peers map /proc/<pid>/fd/<fd>
  ShareableHandle handle{};
};

// size > 0 and ptr != nullptr are the caller's checks.  RESOURCE_EXHAUSTED
// when the memory is not there (more than the machine or node has, ENOMEM),
// FAILED for other system errors.
Status HostAlloc(size_t size, void **ptr, std::string *why);
Status HostExport(const void *addr, ShareableHandle *handle, std::string *why);
Status HostFree(void *ptr, std::string *why);

// The block that contains `addr`; false when none does.  For the lanes: a
// registered range inside a MallocMem block can be reached by direct mapping.
bool FindHostBlock(const void *addr, HostBlockInfo *info);

// Maps a block exported by a process on this machine (possibly this one) at a
// new address; *size gets the block's size.  Null with *why (optional) set
// when the handle is malformed, from another machine, or the block or its
// owner is gone.  Undo with ReleaseImported(ptr, *size).
void *ImportShareableHandle(const ShareableHandle &handle, size_t *size, std::string *why = nullptr);
void ReleaseImported(void *ptr, size_t size);

}  // namespace adxl

#endif  // ADXL_SRC_MEMORY_HOST_MEMORY_H_
