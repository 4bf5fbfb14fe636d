// The HCCS lane's direct mapping of shared peer regions (shared_mapping.h).
#include "hccs/shared_mapping.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace {
uint64_t MapGranule(int fd);
}  // namespace

bool SharedMapping::Map(const std::string &path, uint64_t remote_base, uint64_t len, uint64_t offset, Region *r,
                     std::string *why) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    *why = strerror(errno);
    return false;
  }
  // hugetlbfs maps whole huge pages only.
  const uint64_t page = MapGranule(fd);
  const uint64_t aligned = offset & ~(page - 1);
  // Lengths from a peer's key: refuse what mmap could not take.
  if (len == 0 || len > std::numeric_limits<size_t>::max() - 2 * page ||
      aligned > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
    close(fd);
    *why = "invalid region length or offset";
    return false;
  }
  const char *kind = KindOf(fd);
  const size_t map_len = static_cast<size_t>((len + (offset - aligned) + page - 1) & ~(page - 1));
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
  r->kind = kind;
  return true;
}

void SharedMapping::Unmap(Region *r) {
  if (r->map_base != nullptr) munmap(r->map_base, r->map_len);
  *r = Region{};
}

void SharedMapping::Copy(bool put, const Region &r, void *local, uint64_t remote, size_t len) {
  char *at = r.mapped + (remote - r.remote_base);
  if (put) {
    memcpy(at, local, len);
  } else {
    memcpy(local, at, len);
  }
}

namespace {

constexpr unsigned long kHugetlbfsMagic = 0x958458f6UL;  // linux/magic.h HUGETLBFS_MAGIC

// The file's mapping granularity: its huge page size on hugetlbfs.
uint64_t MapGranule(int fd) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  struct statfs fs {};
  if (fstatfs(fd, &fs) == 0 && static_cast<unsigned long>(fs.f_type) == kHugetlbfsMagic && fs.f_bsize > 0 &&
      static_cast<uint64_t>(fs.f_bsize) > page) {
    return static_cast<uint64_t>(fs.f_bsize);
  }
  return page;
}

// One line of /proc/self/maps.
struct MapsLine {
  uint64_t start = 0, end = 0, offset = 0, inode = 0;
  unsigned dev_major = 0, dev_minor = 0;
  char perms[5] = {};
  std::string path;
};

bool ParseMapsLine(const char *line, MapsLine *m) {
  int n = 0;
  unsigned long long start, end, offset, inode;
  if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, m->perms, &offset, &m->dev_major, &m->dev_minor,
             &inode, &n) < 7) {
    return false;
  }
  m->start = start;
  m->end = end;
  m->offset = offset;
  m->inode = inode;
  m->path = line + n;
  while (!m->path.empty() && (m->path.back() == '\n' || m->path.back() == ' ')) m->path.pop_back();
  return true;
}

bool SameFile(int fd, const MapsLine &m) {
  struct stat st {};
  return fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_ino) == m.inode && major(st.st_dev) == m.dev_major &&
         minor(st.st_dev) == m.dev_minor;
}

// A descriptor of the mapped file: its path, an open descriptor of this
// process, or /proc/self/map_files (which needs CAP_SYS_ADMIN or
// CAP_CHECKPOINT_RESTORE).  -1 when none.
int OpenMappedFile(const MapsLine &m) {
  const std::string deleted = " (deleted)";
  const bool gone = m.path.size() > deleted.size() &&
                    m.path.compare(m.path.size() - deleted.size(), deleted.size(), deleted) == 0;
  if (!gone && !m.path.empty() && m.path[0] == '/') {
    int fd = open(m.path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0 && SameFile(fd, m)) return fd;
    if (fd >= 0) close(fd);
  }
  if (DIR *d = opendir("/proc/self/fd")) {
    int found = -1;
    const int own = dirfd(d);
    while (struct dirent *e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const int fd = atoi(e->d_name);
      if (fd == own || !SameFile(fd, m)) continue;
      // A descriptor of our own, opened read-write: the user's may be
      // read-only, and is theirs to close.
      const std::string path = std::string("/proc/self/fd/") + e->d_name;
      found = open(path.c_str(), O_RDWR | O_CLOEXEC);
      if (found >= 0 && SameFile(found, m)) break;
      if (found >= 0) close(found);
      found = -1;
    }
    closedir(d);
    if (found >= 0) return found;
  }
  char path[96];
  snprintf(path, sizeof(path), "/proc/self/map_files/%llx-%llx", static_cast<unsigned long long>(m.start),
           static_cast<unsigned long long>(m.end));
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd >= 0 && SameFile(fd, m)) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

}  // namespace

const char *SharedMapping::KindOf(int fd) {
  struct statfs fs {};
  if (fstatfs(fd, &fs) == 0 && static_cast<unsigned long>(fs.f_type) == kHugetlbfsMagic) return "hugetlbfs";
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  char target[256];
  const ssize_t n = readlink(link, target, sizeof(target) - 1);
  if (n > 0) {
    target[n] = '\0';
    if (strncmp(target, "/memfd:", 7) == 0) return "memfd";
    if (strncmp(target, "/dev/shm/", 9) == 0) return "shm";
  }
  return "file";
}

bool SharedMapping::FindShareable(const void *addr, size_t len, Shareable *out, std::string *why) {
  const uint64_t begin = reinterpret_cast<uintptr_t>(addr);
  const uint64_t end = begin + len;
  FILE *f = fopen("/proc/self/maps", "re");
  if (f == nullptr) {
    *why = std::string("/proc/self/maps: ") + strerror(errno);
    return false;
  }
  char *line = nullptr;
  size_t cap = 0;
  MapsLine first;
  bool have_first = false;
  uint64_t covered = begin;  // [begin, covered) is a shared mapping of the file
  uint64_t next_offset = 0;  // the file offset `covered` must have
  *why = "";
  while (covered < end && getline(&line, &cap, f) > 0) {
    MapsLine m;
    if (!ParseMapsLine(line, &m) || m.end <= covered) continue;
    if (m.start > covered) {
      *why = "not one mapping";
      break;
    }
    if (m.perms[0] != 'r' || m.perms[1] != 'w' || m.perms[3] != 's' || m.inode == 0) {
      *why = m.perms[3] != 's' ? "private memory" : "not a writable shared file mapping";
      break;
    }
    const uint64_t offset_here = m.offset + (covered - m.start);
    if (!have_first) {
      first = m;
      first.offset = offset_here;  // the region's start in the file
      have_first = true;
    } else if (m.inode != first.inode || m.dev_major != first.dev_major || m.dev_minor != first.dev_minor ||
               offset_here != next_offset) {
      *why = "not one contiguous file mapping";
      break;
    }
    next_offset = offset_here + (std::min(m.end, end) - covered);
    covered = std::min(m.end, end);
  }
  free(line);
  fclose(f);
  if (covered < end) {
    if (why->empty()) *why = "not mapped";
    return false;
  }
  const int fd = OpenMappedFile(first);
  if (fd < 0) {
    *why = "the mapped file cannot be opened read-write";
    return false;
  }
  out->fd = fd;
  out->offset = first.offset;
  out->kind = KindOf(fd);
  return true;
}
