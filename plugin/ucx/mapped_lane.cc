// The HCCS lane's direct mapping of shared peer regions (mapped_lane.h).
#include "mapped_lane.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

bool MappedLane::Map(const std::string &path, uint64_t remote_base, uint64_t len, uint64_t offset, Region *r,
                     std::string *why) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t aligned = offset & ~(page - 1);
  // Lengths from a peer's key: refuse what mmap could not take.
  if (len == 0 || len > std::numeric_limits<size_t>::max() - page ||
      aligned > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
    *why = "invalid region length or offset";
    return false;
  }
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    *why = strerror(errno);
    return false;
  }
  const size_t map_len = static_cast<size_t>(len + (offset - aligned));
  void *p = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, static_cast<off_t>(aligned));
  const int err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    *why = strerror(err);
    return false;
  }
  r->map_base = p;
  r->map_len = map_len;
  r->mapped = static_cast<char *>(p) + (offset - aligned);
  r->remote_base = remote_base;
  r->len = len;
  return true;
}

void MappedLane::Unmap(Region *r) {
  if (r->map_base != nullptr) munmap(r->map_base, r->map_len);
  *r = Region{};
}

void MappedLane::Copy(bool put, const Region &r, void *local, uint64_t remote, size_t len) {
  char *at = r.mapped + (remote - r.remote_base);
  if (put) {
    memcpy(at, local, len);
  } else {
    memcpy(local, at, len);
  }
}
