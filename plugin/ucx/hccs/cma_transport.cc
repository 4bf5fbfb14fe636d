#include "hccs/cma_transport.h"

#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr const char kTl[] = "cma";
constexpr const char kDev[] = "memory";

}  // namespace

CmaTransport::~CmaTransport() {
  for (auto &t : threads_) {
    {
      adxl::MutexLock l(&t->mu);
      t->stop = true;
    }
    t->cv.NotifyOne();
    t->thread.join();
  }
  if (iface_ != nullptr) uct_iface_close(iface_);
  if (worker_ != nullptr) uct_worker_destroy(worker_);
  if (async_ != nullptr) ucs_async_context_destroy(async_);
  if (md_ != nullptr) uct_md_close(md_);
  if (components_ != nullptr) uct_release_component_list(components_);
}

bool CmaTransport::Open(unsigned threads, const Tuning &tuning, std::string *why) {
  // Honour a UCX_TLS restriction the way UCP reads it: "^a,b" excludes,
  // otherwise only the listed transports (or the "sm"/"all" aliases) are used.
  if (const char *tls = getenv("UCX_TLS")) {
    const std::string list = std::string(",") + (tls[0] == '^' ? tls + 1 : tls) + ",";
    const bool listed = list.find(",cma,") != std::string::npos;
    const bool allowed = tls[0] == '^' ? !listed
                                       : listed || list.find(",sm,") != std::string::npos ||
                                             list.find(",all,") != std::string::npos;
    if (!allowed) {
      *why = std::string("UCX_TLS=") + tls + " excludes cma";
      return false;
    }
  }
  unsigned n = 0;
  if (uct_query_components(&components_, &n) != UCS_OK) {
    *why = "uct_query_components failed";
    return false;
  }
  // Find the component with an MD of that name (the cma component's MD is "cma").
  for (unsigned i = 0; i < n && md_ == nullptr; ++i) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components_[i], &attr) != UCS_OK) continue;
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (uct_component_query(components_[i], &attr) != UCS_OK) continue;
    for (const auto &md : mds) {
      if (strcmp(md.md_name, kTl) != 0) continue;
      uct_md_config_t *config = nullptr;
      if (uct_md_config_read(components_[i], nullptr, nullptr, &config) != UCS_OK) continue;
      ucs_status_t st = uct_md_open(components_[i], md.md_name, config, &md_);
      uct_config_release(config);
      if (st == UCS_OK) component_ = components_[i];
      break;
    }
  }
  if (md_ == nullptr) {
    *why = "this UCX has no cma transport";
    return false;
  }
  uct_md_attr_t md_attr{};
  if (uct_md_query(md_, &md_attr) != UCS_OK) {
    *why = "uct_md_query(cma) failed";
    return false;
  }
  need_reg_ = (md_attr.cap.flags & UCT_MD_FLAG_REG) != 0;
  rkey_size_ = md_attr.rkey_packed_size;
  if (!OpenInterface(why)) return false;
  split_min_bytes_ = tuning.split_min_bytes;
  spin_us_ = tuning.spin_us;
  for (unsigned i = 1; i < threads; ++i) {
    threads_.push_back(std::make_unique<CopyThread>());
    CopyThread *t = threads_.back().get();
    t->thread = std::thread([this, t] { RunCopyThread(t); });
  }
  return true;
}

// A worker and a cma interface: the transport's address, and the reachability
// test of a peer's address.  Nothing is ever posted on them.
bool CmaTransport::OpenInterface(std::string *why) {
  if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async_) != UCS_OK ||
      uct_worker_create(async_, UCS_THREAD_MODE_SINGLE, &worker_) != UCS_OK) {
    *why = "UCT worker for cma could not be created";
    return false;
  }
  uct_iface_config_t *iface_config = nullptr;
  if (uct_md_iface_config_read(md_, kTl, nullptr, nullptr, &iface_config) != UCS_OK) {
    *why = "uct_md_iface_config_read(cma) failed";
    return false;
  }
  uct_iface_params_t params{};
  params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                      UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                      UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
  // Without an error handler UCT treats a vanished peer process (ESRCH) as
  // fatal and aborts; with it the failed copy completes with an error and
  // the engine fails the link.
  params.err_handler = [](void *, uct_ep_h, ucs_status_t) { return UCS_OK; };
  params.err_handler_arg = nullptr;
  params.err_handler_flags = 0;
  params.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
  params.mode.device.tl_name = kTl;
  params.mode.device.dev_name = kDev;
  ucs_status_t st = uct_iface_open(md_, worker_, &params, iface_config, &iface_);
  uct_config_release(iface_config);
  if (st != UCS_OK) {
    iface_ = nullptr;
    *why = std::string("uct_iface_open(cma): ") + ucs_status_string(st);
    return false;
  }
  uct_iface_attr_t attr{};
  if (uct_iface_query(iface_, &attr) != UCS_OK ||
      !(attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY) || !(attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY) ||
      !(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
    *why = "cma interface lacks zero-copy put/get";
    uct_iface_close(iface_);
    iface_ = nullptr;
    return false;
  }
  dev_addr_len_ = attr.device_addr_len;
  iface_addr_len_ = attr.iface_addr_len;
  std::string dev(attr.device_addr_len, '\0');
  std::string ifa(attr.iface_addr_len, '\0');
  if (uct_iface_get_device_address(iface_, reinterpret_cast<uct_device_addr_t *>(dev.data())) != UCS_OK ||
      uct_iface_get_address(iface_, reinterpret_cast<uct_iface_addr_t *>(ifa.data())) != UCS_OK) {
    *why = "cma address query failed";
    uct_iface_close(iface_);
    iface_ = nullptr;
    return false;
  }
  const uint32_t pid = static_cast<uint32_t>(getpid());
  std::string pid_bytes(4, '\0');
  for (int i = 0; i < 4; ++i) pid_bytes[i] = static_cast<char>((pid >> (8 * i)) & 0xff);
  address_ = dev + ifa + pid_bytes;
  return true;
}

bool CmaTransport::Register(void *addr, size_t len, uct_mem_h *memh, std::string *packed, std::string *why) {
  *memh = UCT_MEM_HANDLE_NULL;
  packed->clear();
  if (!available()) return true;
  if (need_reg_) {
    ucs_status_t st = uct_md_mem_reg(md_, addr, len, UCT_MD_MEM_ACCESS_ALL, memh);
    if (st != UCS_OK) {
      *why = std::string("cma registration: ") + ucs_status_string(st);
      return false;
    }
  }
  packed->assign(rkey_size_, '\0');
  if (rkey_size_ > 0 && uct_md_mkey_pack(md_, *memh, packed->data()) != UCS_OK) {
    *why = "cma key packing failed";
    Deregister(*memh);
    return false;
  }
  return true;
}

void CmaTransport::Deregister(uct_mem_h memh) {
  if (available() && need_reg_ && memh != UCT_MEM_HANDLE_NULL) uct_md_mem_dereg(md_, memh);
}

bool CmaTransport::Unpack(const std::string &packed, uct_rkey_bundle_t *rkey, std::string *why) {
  *rkey = uct_rkey_bundle_t{};
  if (packed.size() != rkey_size_) {
    *why = "cma key of " + std::to_string(packed.size()) + " bytes, expected " + std::to_string(rkey_size_);
    return false;
  }
  // cma reaches the peer by its pid and virtual addresses; the key carries
  // nothing.  UCX 1.13's cma still registers and packs an empty key; later
  // UCX registers nothing (rkey_packed_size 0) and refuses to unpack one.
  if (rkey_size_ == 0) {
    rkey->rkey = UCT_INVALID_RKEY;
    return true;
  }
  if (uct_rkey_unpack(component_, packed.data(), rkey) != UCS_OK) {
    *why = "cma key unpack failed";
    return false;
  }
  return true;
}

void CmaTransport::Release(uct_rkey_bundle_t *rkey) {
  if (available() && rkey->handle != nullptr) uct_rkey_release(component_, rkey);
}

CmaTransport::Peer *CmaTransport::Connect(const std::string &peer_address) {
  if (!available() || peer_address.size() != address_.size() || peer_address.size() < dev_addr_len_ + 4) return nullptr;
  auto *dev = reinterpret_cast<const uct_device_addr_t *>(peer_address.data());
  auto *ifa = reinterpret_cast<const uct_iface_addr_t *>(peer_address.data() + dev_addr_len_);
  if (!uct_iface_is_reachable(iface_, dev, ifa)) return nullptr;
  uint32_t pid = 0;
  const size_t at = peer_address.size() - 4;
  for (int i = 0; i < 4; ++i) pid |= static_cast<uint32_t>(static_cast<uint8_t>(peer_address[at + i])) << (8 * i);
  if (pid == 0) return nullptr;
  auto *peer = new Peer;
  peer->pid = static_cast<pid_t>(pid);
  return peer;
}

void CmaTransport::Disconnect(Peer *peer) { delete peer; }

namespace {

// One system call's worth of iovecs at most, on each side.
constexpr size_t kIov = IOV_MAX;

// Drops the first n bytes of an iovec list.
void Advance(struct iovec **v, size_t *count, size_t n) {
  while (n > 0 && *count > 0) {
    if ((*v)->iov_len <= n) {
      n -= (*v)->iov_len;
      ++*v;
      --*count;
    } else {
      (*v)->iov_base = static_cast<char *>((*v)->iov_base) + n;
      (*v)->iov_len -= n;
      n = 0;
    }
  }
}

// Moves `total` bytes (the sum of both lists) with as many system calls as
// partial transfers need; 0 or errno.  The lists are consumed.
int Move(bool put, pid_t pid, struct iovec *l, size_t nl, struct iovec *r, size_t nr, size_t total) {
  while (total > 0) {
    const ssize_t n = put ? process_vm_writev(pid, l, nl, r, nr, 0) : process_vm_readv(pid, l, nl, r, nr, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    // A partial transfer stops at a fault; the rest is retried, and a
    // fault at its very start fails the next call (or moves nothing).
    if (n == 0) return EFAULT;
    total -= static_cast<size_t>(n);
    Advance(&l, &nl, static_cast<size_t>(n));
    Advance(&r, &nr, static_cast<size_t>(n));
  }
  return 0;
}

// Spins while busy() holds, for at most `us` microseconds.
template <typename Busy>
void SpinWhile(unsigned us, Busy busy) {
  if (us == 0 || !busy()) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (busy() && std::chrono::steady_clock::now() < until) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

ucs_status_t FromErrno(int e) {
  switch (e) {
    case 0:
      return UCS_OK;
    case ESRCH:
      return UCS_ERR_UNREACHABLE;  // the peer process is gone
    case EFAULT:
      return UCS_ERR_INVALID_ADDR;
    case EPERM:
      return UCS_ERR_REJECTED;
    case ENOMEM:
      return UCS_ERR_NO_MEMORY;
    case ECANCELED:
      return UCS_ERR_CANCELED;  // CopyStop: the endpoint was cancelled
    case ETIMEDOUT:
      return UCS_ERR_TIMED_OUT;  // CopyStop: the deadline passed
    default:
      return UCS_ERR_IO_ERROR;
  }
}

}  // namespace

int CmaTransport::CopyPart(bool put, pid_t pid, const Op *ops, size_t count, size_t first, size_t offset,
                           size_t bytes, const CopyStop &stop) {
  // Each system call is one piece of copy_stop.h: checked before it goes.
  auto move = [&](struct iovec *l, size_t nl, struct iovec *r, size_t nr, size_t total) {
    if (int e = stop.Check()) return e;
    return Move(put, pid, l, nl, r, nr, total);
  };
  struct iovec l[kIov];
  struct iovec r[kIov];
  size_t nl = 0, nr = 0, call = 0;
  size_t i = first, off = offset;
  while (bytes > 0 && i < count) {
    const Op &op = ops[i];
    const size_t n = std::min({op.len - off, bytes, kMaxCallBytes - call});
    if (n == 0) {  // an empty operation, or the end of one
      ++i;
      off = 0;
      continue;
    }
    char *lp = static_cast<char *>(op.local) + off;
    char *rp = reinterpret_cast<char *>(static_cast<uintptr_t>(op.remote + off));
    const bool merge_l = nl > 0 && static_cast<char *>(l[nl - 1].iov_base) + l[nl - 1].iov_len == lp;
    const bool merge_r = nr > 0 && static_cast<char *>(r[nr - 1].iov_base) + r[nr - 1].iov_len == rp;
    if ((!merge_l && nl == kIov) || (!merge_r && nr == kIov)) {
      if (int e = move(l, nl, r, nr, call)) return e;
      nl = nr = call = 0;
      continue;
    }
    if (merge_l) {
      l[nl - 1].iov_len += n;
    } else {
      l[nl++] = {lp, n};
    }
    if (merge_r) {
      r[nr - 1].iov_len += n;
    } else {
      r[nr++] = {rp, n};
    }
    call += n;
    bytes -= n;
    off += n;
    if (off == op.len) {
      ++i;
      off = 0;
    }
    if (call == kMaxCallBytes) {
      if (int e = move(l, nl, r, nr, call)) return e;
      nl = nr = call = 0;
    }
  }
  return call > 0 ? move(l, nl, r, nr, call) : 0;
}

void CmaTransport::RunChunks(Split *s) {
  for (size_t i = s->next.fetch_add(1); i < s->chunks.size(); i = s->next.fetch_add(1)) {
    if (s->err.load(std::memory_order_relaxed) != 0) return;  // failed: stop early
    const Chunk &c = s->chunks[i];
    if (int e = CopyPart(s->put, s->pid, s->ops, s->count, c.first, c.offset, c.bytes, *s->stop)) {
      int none = 0;
      s->err.compare_exchange_strong(none, e);
    }
  }
}

ucs_status_t CmaTransport::Copy(bool put, Peer *peer, const Op *ops, size_t count, const CopyStop &stop,
                                int *err_no) {
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += ops[i].len;
  if (threads_.empty() || total < split_min_bytes_) {
    // The shortest path: the caller's thread, one system call per IOV_MAX
    // iovecs, no lock, no allocation.
    const int e = CopyPart(put, peer->pid, ops, count, 0, 0, total, stop);
    if (err_no != nullptr) *err_no = e;
    return FromErrno(e);
  }
  // Chunks of about total / (kChunksPerThread * threads) bytes, at least
  // kMinChunkBytes, an operation split where a boundary falls inside it.
  const size_t threads = threads_.size() + 1;
  const size_t n_chunks = std::max<size_t>(
      1, std::min(kChunksPerThread * threads, total / std::max<size_t>(kMinChunkBytes, 1)));
  const size_t share = (total + n_chunks - 1) / n_chunks;
  Split s;
  s.put = put;
  s.pid = peer->pid;
  s.ops = ops;
  s.count = count;
  s.stop = &stop;
  s.chunks.reserve(n_chunks);
  size_t i = 0, off = 0, at = 0;
  while (at < total) {
    const Chunk c{i, off, std::min(share, total - at)};
    size_t want = c.bytes;
    while (want > 0 && i < count) {
      const size_t n = std::min(ops[i].len - off, want);
      want -= n;
      off += n;
      if (off == ops[i].len) {
        ++i;
        off = 0;
      }
    }
    at += c.bytes;
    s.chunks.push_back(c);
  }
  // As many helpers as there are chunks beyond the caller's first.
  const size_t helpers = std::min(threads_.size(), s.chunks.size() - 1);
  for (size_t h = 0; h < helpers; ++h) {
    CopyThread *t = threads_[h].get();
    {
      adxl::MutexLock l(&t->mu);
      t->jobs.push_back(&s);
      t->queued.store(t->jobs.size(), std::memory_order_release);
    }
    t->cv.NotifyOne();
  }
  RunChunks(&s);
  // Jobs no thread has taken yet are taken back; the others run to their end
  // (they find no chunk left, or finish the one they copy).
  for (size_t h = 0; h < helpers; ++h) {
    CopyThread *t = threads_[h].get();
    adxl::MutexLock l(&t->mu);
    auto it = std::find(t->jobs.begin(), t->jobs.end(), &s);
    if (it != t->jobs.end()) {
      t->jobs.erase(it);
      t->queued.store(t->jobs.size(), std::memory_order_release);
    }
  }
  SpinWhile(spin_us_, [&] { return s.left.load(std::memory_order_acquire) != 0; });
  {
    adxl::MutexLock l(&s.mu);
    s.cv.Wait(&s.mu, [&]() ADXL_REQUIRES(s.mu) { return s.running == 0; });
  }
  const int e = s.err.load();
  if (err_no != nullptr) *err_no = e;
  return FromErrno(e);
}

void CmaTransport::RunCopyThread(CopyThread *t) {
  while (true) {
    Split *s = nullptr;
    SpinWhile(spin_us_, [t] { return t->queued.load(std::memory_order_acquire) == 0; });
    {
      adxl::MutexLock l(&t->mu);
      t->cv.Wait(&t->mu, [t]() ADXL_REQUIRES(t->mu) { return t->stop || !t->jobs.empty(); });
      if (t->jobs.empty()) return;  // stop, and nothing left to run
      s = t->jobs.front();
      t->jobs.pop_front();
      t->queued.store(t->jobs.size(), std::memory_order_release);
      // Counted in before the queue is let go: the caller, taking back
      // jobs, either finds this one queued or waits for it.
      adxl::MutexLock sl(&s->mu);
      ++s->running;
      s->left.fetch_add(1, std::memory_order_relaxed);
    }
    RunChunks(s);
    adxl::MutexLock l(&s->mu);
    s->left.fetch_sub(1, std::memory_order_release);
    if (--s->running == 0) s->cv.NotifyOne();
  }
}
