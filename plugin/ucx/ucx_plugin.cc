// The UCX transport plugin: the ADXL plugin ABI (include/adxl/plugin) on UCX.
//
// Lanes: HCCS (same node) is UCT cross-memory attach (cma_lane.h), truly
// one-sided; RDMA (network) is UCP over whatever UCX selects (verbs where a
// NIC exists, TCP otherwise).  Addresses and packed keys carry both parts:
// [u32 len][UCP part][u32 len][cma part].
//
//  - one UCP context and one multi-threaded worker per plugin context;
//  - registrations are ucp_mem_map'ed user memory, keys packed with
//    ucp_rkey_pack and unpacked per endpoint;
//  - a batch is posted as ucp_put_nbx / ucp_get_nbx per operation and closed
//    with one ucp_ep_flush_nbx whose completion completes the batch;
//  - a progress thread sleeps on the worker's event fd (ucp_worker_arm), so
//    emulated RMA (TCP, registered user memory over shared memory) completes
//    while the target application calls nothing, and an idle engine sleeps.
//  - device memory (CUDA/ROCm, where this UCX has the memory type and RMA
//    protocols that handle it, see DeviceMemorySupport) is ucp_mem_map'ed with
//    its memory type and always moves as plain UCP RMA with its memh, on
//    either lane: never through cma (process_vm_readv reaches host pages
//    only), the direct mapping or the AM lane (both memcpy on the CPU).  UCX
//    picks cuda_ipc / cuda_copy / GPUDirect RDMA for it where built in.  On an
//    HCCS-lane endpoint that needs a UCP endpoint beside the cma one (same
//    node: cuda_ipc, the "device IPC" of the HCCS lane, spec §9).
//    Not exercised here: Debian's UCX has no CUDA and the machine no GPU.
// Nothing here throws across the C ABI: every entry point is noexcept and
// catches what the C++ standard library could throw.
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <ucp/api/ucp.h>

#include "adxl/plugin/adxl_plugin.h"
#include "am_lane.h"
#include "cma_lane.h"

namespace {

constexpr int kCloseTimeoutMs = 2000;  // bound on a graceful endpoint close
// UCP's transports when the user did not choose (UCX_TLS): everything but
// the same-node ones.
constexpr const char kRdmaLaneTls[] = "^sm";  // "sm": posix, sysv, cma, knem, xpmem
// Flags byte of a packed key's HCCS part (MemPack).
constexpr char kKeyCmaUsable = 0x1;
constexpr char kKeyDevice = 0x2;

}  // namespace

struct adxl_plugin_context {
  CmaLane cma;
  AmLane am;
  // RDMA lane protocol: active messages (am_lane.h) unless RDMA hardware
  // makes UCP RMA truly one-sided; ADXL_UCX_RDMA_PROTOCOL=am|rma overrides.
  bool rdma_over_am = false;
  ucp_context_h ucp = nullptr;
  ucp_worker_h worker = nullptr;
  bool device_memory = false;
  ucs_memory_type_t device_mem_type = UCS_MEMORY_TYPE_UNKNOWN;  // CUDA, else ROCM
  std::string device_why;  // why device_memory is false
  int epoll_fd = -1;
  int wake_fd = -1;
  std::atomic<bool> stop{false};
  std::thread progress_thread;
  std::atomic<uint64_t> next_ep_id{1};  // adxl_plugin_ep::id
  void (*log_fn)(void *, int, const char *) = nullptr;
  void *log_arg = nullptr;

  void Log(int level, const char *fmt, ...) const __attribute__((format(printf, 3, 4))) {
    if (log_fn == nullptr) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    log_fn(log_arg, level, buf);
  }
  void Wake() const {
    uint64_t one = 1;
    ssize_t rc = write(wake_fd, &one, sizeof(one));
    (void)rc;  // a full eventfd counter still wakes the thread
  }
};

struct adxl_plugin_mem {
  ucp_mem_h memh = nullptr;
  bool device = false;  // moves only as UCP RMA (see the header comment)
  uct_mem_h cma_memh = UCT_MEM_HANDLE_NULL;
  bool cma_ok = false;
  std::string cma_key;  // packed at registration
  void *addr = nullptr;  // host registrations: key of the AM lane's table
  size_t len = 0;
  std::string share_path;  // MallocMem memory: same-node peers may map this
  uint64_t share_offset = 0;
};

struct adxl_plugin_ep {
  adxl_plugin_context *ctx = nullptr;
  uint64_t id = 0;  // never reused: names the endpoint to the AM lane
  uint32_t lane = ADXL_PLUGIN_LANE_RDMA;
  ucp_ep_h ep = nullptr;      // RDMA lane; HCCS lane: device memory only
  bool am = false;            // RDMA lane moves data with am_lane.h
  CmaLane::Peer *cma_ep = nullptr;  // HCCS lane
  std::atomic<int> mapped_regions{0};  // HCCS lane: peer regions reached by direct mapping
  std::atomic<int> failed{ADXL_PLUGIN_OK};
};

struct adxl_plugin_rkey {
  adxl_plugin_context *ctx = nullptr;  // not the endpoint: keys may outlive it
  bool device = false;        // the peer's region is device memory: UCP RMA only
  ucp_rkey_h rkey = nullptr;  // RDMA lane, and device regions on either lane (null: unreachable)
  uct_rkey_bundle_t cma{};    // HCCS lane
  bool cma_ok = false;
  // HCCS lane, memory the peer shared: its pages mapped here, copies are memcpy.
  char *mapped = nullptr;     // the peer's region base, as mapped here
  void *map_base = nullptr;   // what mmap returned (page aligned)
  size_t map_len = 0;
  uint64_t remote_base = 0;   // the peer's region base address
};

// Shared by the engine (until release) and the pending flush (until its
// callback): whoever drops the last reference frees it.
struct adxl_plugin_batch {
  std::atomic<int> status{ADXL_PLUGIN_IN_PROGRESS};
  std::atomic<int> refs{1};
  int post_error = ADXL_PLUGIN_OK;  // set before the flush is issued
  void Complete(ucs_status_t st);
  void Unref() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

namespace {

int FromUcs(ucs_status_t st) {
  switch (st) {
    case UCS_OK:
      return ADXL_PLUGIN_OK;
    case UCS_INPROGRESS:
      return ADXL_PLUGIN_IN_PROGRESS;
    case UCS_ERR_CANCELED:
      return ADXL_PLUGIN_ERR_CANCELED;
    case UCS_ERR_INVALID_PARAM:
      return ADXL_PLUGIN_ERR_INVALID;
    case UCS_ERR_UNSUPPORTED:
      return ADXL_PLUGIN_ERR_UNSUPPORTED;
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_EXCEEDS_LIMIT:
      return ADXL_PLUGIN_ERR_NO_RESOURCE;
    default:
      return ADXL_PLUGIN_ERR_IO;
  }
}

// Waits for a UCP request from ucp_*_nbx, progressing the worker; returns the
// final status.  Used only on control paths (close, flush of teardown).
ucs_status_t WaitRequest(adxl_plugin_context *ctx, ucs_status_ptr_t req, int timeout_ms) {
  if (req == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  ucs_status_t st;
  while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
    ucp_worker_progress(ctx->worker);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long elapsed_ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (timeout_ms >= 0 && elapsed_ms > timeout_ms) {
      ucp_request_cancel(ctx->worker, req);
      timeout_ms = -1;  // keep progressing until the cancellation lands
    }
  }
  ucp_request_free(req);
  return st;
}

// How long the progress thread keeps polling after the last event before it
// sleeps again: a transfer is a burst of messages, and waking up for each of
// them costs tens of microseconds.  An idle engine still sleeps.
constexpr auto kProgressLinger = std::chrono::microseconds(200);

void ProgressLoop(adxl_plugin_context *ctx) {
  epoll_event events[4];
  while (!ctx->stop.load(std::memory_order_acquire)) {
    auto last_event = std::chrono::steady_clock::now();
    while (!ctx->stop.load(std::memory_order_relaxed)) {
      if (ucp_worker_progress(ctx->worker) != 0) {
        last_event = std::chrono::steady_clock::now();
      }
      // Outside ucp_worker_progress: work UCP callbacks queued (am_lane.h).
      if (ctx->am.HasDeferred()) {
        ctx->am.RunDeferred();
        last_event = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - last_event > kProgressLinger) {
        break;
      }
    }
    ucs_status_t st = ucp_worker_arm(ctx->worker);
    if (st == UCS_ERR_BUSY) continue;  // events arrived meanwhile
    if (st != UCS_OK) {
      ctx->Log(ADXL_PLUGIN_LOG_ERROR, "ucp_worker_arm failed: %s; progress thread polls", ucs_status_string(st));
    }
    int n = epoll_wait(ctx->epoll_fd, events, 4, st == UCS_OK ? -1 : 1);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == ctx->wake_fd) {
        uint64_t v;
        ssize_t rc = read(ctx->wake_fd, &v, sizeof(v));
        (void)rc;
      }
    }
  }
}

void FlushDone(void *request, ucs_status_t status, void *user_data) {
  auto *batch = static_cast<adxl_plugin_batch *>(user_data);
  batch->Complete(status);
  batch->Unref();
  ucp_request_free(request);
}

void EpError(void *arg, ucp_ep_h, ucs_status_t status) {
  auto *ep = static_cast<adxl_plugin_ep *>(arg);
  const int why = FromUcs(status) == ADXL_PLUGIN_OK ? ADXL_PLUGIN_ERR_IO : FromUcs(status);
  ep->failed.store(why);
  ep->ctx->Log(ADXL_PLUGIN_LOG_WARN, "UCX endpoint failed: %s", ucs_status_string(status));
  // Inside ucp_worker_progress: the AM lane's batches on this endpoint are
  // ended by the progress thread, outside it.
  if (ep->am) {
    ep->ctx->am.EndpointFailed(ep->id, why);
    ep->ctx->Wake();
  }
}

}  // namespace

void adxl_plugin_batch::Complete(ucs_status_t st) {
  int rc = post_error != ADXL_PLUGIN_OK ? post_error : FromUcs(st);
  status.store(rc, std::memory_order_release);
}

namespace {

bool HaveInfiniBand() {
  DIR *d = opendir("/sys/class/infiniband");
  if (d == nullptr) return false;
  bool any = false;
  while (dirent *e = readdir(d)) {
    if (e->d_name[0] != '.') any = true;
  }
  closedir(d);
  return any;
}

// Our defaults for UCX settings, applied only where the user set nothing: a
// UCX_* variable of the user always wins.  Transport-level settings are read
// from the environment when UCX opens each transport (ucp_config_modify does
// not reach them), so they are set for the duration of ucp_init and worker
// creation and removed again, so that child processes do not inherit them.
class ScopedUcxDefaults {
 public:
  explicit ScopedUcxDefaults(const adxl_plugin_config_t *cfg) {
    // Shared-memory transports refuse endpoints with peer error handling
    // unless told to watch the peer process; we need both (DESIGN.md).
    const char *tls = getenv("UCX_TLS");
    // Without a UCX_TLS of the user, UCP runs without shared memory (see
    // kRdmaLaneTls), so these only matter when the user's list has them.
    auto may_use = [tls](const char *t) { return tls != nullptr && (strstr(tls, "all") || strstr(tls, "sm") || strstr(tls, t)); };
    if (may_use("posix")) Set("UCX_POSIX_ERROR_HANDLING", "y");
    if (may_use("sysv")) Set("UCX_SYSV_ERROR_HANDLING", "y");
    // The RDMA lane over TCP: UCX receives into segments of this size (64 KiB
    // by default), one receive call and one progress pass per segment.  The
    // lane's rendezvous data arrives in MiB-sized runs; 2 MiB segments about
    // double its bandwidth on loopback (adxl-bench --lane rdma, README), for
    // 16 MiB of receive buffers per worker (UCX grows the pool 8 at a time).
    Set("UCX_TCP_RX_SEG_SIZE", "2m");
    // Without an RDMA device UCX has no IB settings and would warn about them.
    if (!HaveInfiniBand()) return;
    for (size_t i = 0; cfg != nullptr && i < cfg->num_params; ++i) {
      if (strcmp(cfg->params[i].key, "rdma_traffic_class") == 0) Set("UCX_IB_TRAFFIC_CLASS", cfg->params[i].value);
      if (strcmp(cfg->params[i].key, "rdma_service_level") == 0) Set("UCX_IB_SL", cfg->params[i].value);
    }
  }
  ~ScopedUcxDefaults() {
    for (size_t i = 0; i < set_count_; ++i) unsetenv(set_[i]);
  }

 private:
  void Set(const char *name, const char *value) {
    if (getenv(name) != nullptr || set_count_ == kMaxSet) return;
    setenv(name, value, 0);
    set_[set_count_++] = name;
  }
  static constexpr size_t kMaxSet = 8;
  const char *set_[kMaxSet] = {};
  size_t set_count_ = 0;
};

// The value UCP's configuration gives `name` (e.g. "UCX_PROTO_ENABLE"), from
// the environment, a config file or the default; empty when not listed.
std::string ConfigValue(const ucp_config_t *config, const char *name) {
  char *text = nullptr;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f == nullptr) return std::string();
  ucp_config_print(config, f, nullptr, UCS_CONFIG_PRINT_CONFIG);
  fclose(f);
  std::string value;
  try {
    const std::string key = std::string(name) + "=";
    for (const char *line = text; line != nullptr && *line != '\0';) {
      const char *end = strchr(line, '\n');
      if (strncmp(line, key.c_str(), key.size()) == 0) {
        value.assign(line + key.size(), end != nullptr ? end : line + strlen(line));
        break;
      }
      line = end != nullptr ? end + 1 : nullptr;
    }
  } catch (...) {
  }
  free(text);
  return value;
}

// Whether UCP RMA of this context can move device memory; *type gets the
// memory type registrations are mapped with, *why what is missing otherwise.
//  - The memory type: only a CUDA or ROCm build of UCX lists it, and only
//    where the GPU driver and a device are present.
//  - The protocols: UCP's original RMA path (UCX_PROTO_ENABLE=n, the default
//    before UCX 1.16) picks the RMA lane of a remote key for a local *host*
//    buffer and copies short and bcopy puts with the CPU (ucp_rkey_resolve_inner
//    passes UCS_MEMORY_TYPE_HOST); the newer protocol layer selects protocols
//    per memory type.  UCX's FAQ calls RMA on GPU memory "partial support"
//    even there: cuda_ipc / GPUDirect RDMA zero-copy put/get.
bool DeviceMemorySupport(ucp_context_h ucp, bool proto_v2, ucs_memory_type_t *type, std::string *why) {
  ucp_context_attr_t cattr{};
  cattr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(ucp, &cattr) != UCS_OK) {
    *why = "ucp_context_query failed";
    return false;
  }
  if (cattr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) {
    *type = UCS_MEMORY_TYPE_CUDA;
  } else if (cattr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_ROCM)) {
    *type = UCS_MEMORY_TYPE_ROCM;
  } else {
    *why = "this UCX has no CUDA or ROCm memory type (a CPU-only build, its cuda/rocm module not loaded, or no "
           "GPU; `ucx_info -d | grep -i -e cuda -e rocm` shows what it has)";
    return false;
  }
  if (!proto_v2) {
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    *why = "UCX " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release) +
           " has device memory but runs its original RMA protocols (UCX_PROTO_ENABLE=n), which copy RMA "
           "buffers as host memory; set UCX_PROTO_ENABLE=y (the default from UCX 1.16)";
    return false;
  }
  return true;
}

// Binds a thread to the "progress_cpus" list of the configuration, if any.
void PinToCpus(adxl_plugin_context *ctx, pthread_t thread, const adxl_plugin_config_t *cfg) {
  const char *list = nullptr;
  for (size_t i = 0; cfg != nullptr && i < cfg->num_params; ++i) {
    if (strcmp(cfg->params[i].key, "progress_cpus") == 0) list = cfg->params[i].value;
  }
  if (list == nullptr) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  // "a-b,c,...": ranges and single CPUs.
  for (const char *p = list; *p != '\0';) {
    char *end = nullptr;
    long lo = strtol(p, &end, 10);
    if (end == p) return;  // malformed: leave the thread where it is
    long hi = lo;
    if (*end == '-') {
      p = end + 1;
      hi = strtol(p, &end, 10);
      if (end == p) return;
    }
    for (long c = lo; c <= hi && c >= 0 && c < CPU_SETSIZE; ++c) CPU_SET(static_cast<int>(c), &set);
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') return;
  }
  int rc = pthread_setaffinity_np(thread, sizeof(set), &set);
  ctx->Log(rc == 0 ? ADXL_PLUGIN_LOG_DEBUG : ADXL_PLUGIN_LOG_WARN, "progress thread on CPUs %s: %s", list,
           rc == 0 ? "bound" : strerror(rc));
}

int Open(const adxl_plugin_config_t *cfg, adxl_plugin_context_t **out) noexcept {
  if (out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  auto *ctx = new (std::nothrow) adxl_plugin_context();
  if (ctx == nullptr) return ADXL_PLUGIN_ERR_NO_RESOURCE;
  if (cfg != nullptr) {
    ctx->log_fn = cfg->log;
    ctx->log_arg = cfg->log_arg;
  }
  ScopedUcxDefaults defaults(cfg);
  ucp_config_t *config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) {
    ctx->Log(ADXL_PLUGIN_LOG_ERROR, "ucp_config_read: %s", ucs_status_string(st));
    delete ctx;
    return FromUcs(st);
  }
  // UCP serves the RDMA lane, which is for peers on other nodes: the
  // same-node paths (shared memory, cma) belong to the HCCS lane.  Left in,
  // UCP picks shared memory for peers in another network namespace of the
  // same machine, whose wire-up then never completes.
  // "^sm" keeps UCX's cuda / rocm transports (cuda_copy, cuda_ipc, gdr_copy...):
  // device memory moves through UCP on both lanes.
  if (getenv("UCX_TLS") == nullptr) ucp_config_modify(config, "TLS", kRdmaLaneTls);
  const bool proto_v2 = ConfigValue(config, "UCX_PROTO_ENABLE") == "y";
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  st = ucp_init(&params, config, &ctx->ucp);
  ucp_config_release(config);
  if (st != UCS_OK) {
    ctx->Log(ADXL_PLUGIN_LOG_ERROR, "ucp_init: %s", ucs_status_string(st));
    delete ctx;
    return FromUcs(st);
  }
  std::string cma_why;
  try {
    unsigned copy_threads = 1;
    for (size_t i = 0; cfg != nullptr && i < cfg->num_params; ++i) {
      if (strcmp(cfg->params[i].key, "hccs_copy_threads") == 0) copy_threads = std::max(1, atoi(cfg->params[i].value));
    }
    if (ctx->cma.Open(copy_threads, &cma_why)) {
      for (pthread_t t : ctx->cma.copy_threads()) PinToCpus(ctx, t, cfg);
    } else {
      ctx->Log(ADXL_PLUGIN_LOG_INFO, "HCCS lane unavailable: %s; same-node peers use the RDMA lane", cma_why.c_str());
    }
  } catch (...) {
  }
  try {
    ctx->device_memory = DeviceMemorySupport(ctx->ucp, proto_v2, &ctx->device_mem_type, &ctx->device_why);
  } catch (...) {
    ctx->device_memory = false;
  }
  ctx->Log(ADXL_PLUGIN_LOG_INFO, "device memory: %s",
           ctx->device_memory ? (ctx->device_mem_type == UCS_MEMORY_TYPE_CUDA ? "CUDA" : "ROCm")
                              : ("unsupported: " + ctx->device_why).c_str());
  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_MULTI;
  st = ucp_worker_create(ctx->ucp, &wparams, &ctx->worker);
  int efd = -1;
  if (st == UCS_OK) st = ucp_worker_get_efd(ctx->worker, &efd);
  if (st != UCS_OK) {
    ctx->Log(ADXL_PLUGIN_LOG_ERROR, "ucp worker set-up: %s", ucs_status_string(st));
    if (ctx->worker != nullptr) ucp_worker_destroy(ctx->worker);
    ucp_cleanup(ctx->ucp);
    delete ctx;
    return FromUcs(st);
  }
  {
    const char *proto = getenv("ADXL_UCX_RDMA_PROTOCOL");
    ctx->rdma_over_am = proto != nullptr ? strcmp(proto, "rma") != 0 : !HaveInfiniBand();
    std::string why;
    bool ok = false;
    try {
      AmLane::Faults faults;
      for (size_t i = 0; cfg != nullptr && i < cfg->num_params; ++i) {
        if (strcmp(cfg->params[i].key, "test_read_data_delay_us") == 0) {
          faults.read_data_delay_us = static_cast<unsigned>(strtoul(cfg->params[i].value, nullptr, 10));
        }
      }
      ok = ctx->am.Init(ctx->worker, ctx->log_fn, ctx->log_arg, faults, &why);
      if (ok) ctx->am.UseStagingFrom(ctx->ucp);
    } catch (...) {
    }
    if (!ok) {
      ctx->Log(ADXL_PLUGIN_LOG_WARN, "active-message protocol unavailable (%s): the RDMA lane uses UCP RMA", why.c_str());
      ctx->rdma_over_am = false;
    }
  }
  ctx->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  ctx->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = efd;
  bool ok = ctx->epoll_fd >= 0 && ctx->wake_fd >= 0 && epoll_ctl(ctx->epoll_fd, EPOLL_CTL_ADD, efd, &ev) == 0;
  ev.data.fd = ctx->wake_fd;
  ok = ok && epoll_ctl(ctx->epoll_fd, EPOLL_CTL_ADD, ctx->wake_fd, &ev) == 0;
  if (ok) {
    try {
      ctx->progress_thread = std::thread(ProgressLoop, ctx);
      PinToCpus(ctx, ctx->progress_thread.native_handle(), cfg);
    } catch (...) {
      ok = false;
    }
  }
  if (!ok) {
    ctx->Log(ADXL_PLUGIN_LOG_ERROR, "progress thread set-up failed: %s", strerror(errno));
    if (ctx->epoll_fd >= 0) close(ctx->epoll_fd);
    if (ctx->wake_fd >= 0) close(ctx->wake_fd);
    ucp_worker_destroy(ctx->worker);
    ucp_cleanup(ctx->ucp);
    delete ctx;
    return ADXL_PLUGIN_ERR_NO_RESOURCE;
  }
  *out = ctx;
  return ADXL_PLUGIN_OK;
}

void Close(adxl_plugin_context_t *ctx) noexcept {
  if (ctx == nullptr) return;
  ctx->stop.store(true, std::memory_order_release);
  ctx->Wake();
  if (ctx->progress_thread.joinable()) ctx->progress_thread.join();
  // Requests this side serves for peers that went away (a fenced initiator)
  // would stay pending forever; UCP refuses to destroy a worker with any.
  ctx->am.ReleaseTargetOps(0, 0);
  if (ctx->am.HasDeferred()) ctx->am.RunDeferred();
  ctx->am.Close();
  ucp_worker_destroy(ctx->worker);
  ucp_cleanup(ctx->ucp);
  close(ctx->epoll_fd);
  close(ctx->wake_fd);
  delete ctx;
}

int Query(adxl_plugin_context_t *ctx, adxl_plugin_caps_t *caps) noexcept {
  if (ctx == nullptr || caps == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  *caps = adxl_plugin_caps_t{};
  caps->flags = ADXL_PLUGIN_CAP_MEM_HOST | (ctx->device_memory ? ADXL_PLUGIN_CAP_MEM_DEVICE : 0u);
  const char *tls = getenv("UCX_TLS");
  snprintf(caps->transports, sizeof(caps->transports), "ucp(%s)", tls != nullptr ? tls : "all");
  return ADXL_PLUGIN_OK;
}

int CopyOut(const void *src, size_t n, void *buf, size_t *len) {
  size_t cap = *len;
  *len = n;
  if (buf == nullptr || cap < n) return ADXL_PLUGIN_ERR_NO_RESOURCE;
  memcpy(buf, src, n);
  return ADXL_PLUGIN_OK;
}

// [u32 length][bytes] framing of the two parts of addresses and keys.
void AppendPart(std::string *out, const void *data, size_t len) {
  uint32_t n = static_cast<uint32_t>(len);
  out->append(reinterpret_cast<const char *>(&n), sizeof(n));
  out->append(static_cast<const char *>(data), len);
}

bool SplitParts(const void *blob, size_t len, std::string *first, std::string *second) {
  const char *p = static_cast<const char *>(blob);
  const char *end = p + len;
  for (std::string *part : {first, second}) {
    uint32_t n = 0;
    if (end - p < static_cast<ptrdiff_t>(sizeof(n))) return false;
    memcpy(&n, p, sizeof(n));
    p += sizeof(n);
    if (static_cast<size_t>(end - p) < n) return false;
    part->assign(p, n);
    p += n;
  }
  return p == end;
}

int GetAddress(adxl_plugin_context_t *ctx, void *buf, size_t *len) noexcept {
  if (ctx == nullptr || len == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  ucp_address_t *addr = nullptr;
  size_t n = 0;
  ucs_status_t st = ucp_worker_get_address(ctx->worker, &addr, &n);
  if (st != UCS_OK) return FromUcs(st);
  std::string blob;
  try {
    AppendPart(&blob, addr, n);
    AppendPart(&blob, ctx->cma.address().data(), ctx->cma.address().size());
  } catch (...) {
    ucp_worker_release_address(ctx->worker, addr);
    return ADXL_PLUGIN_ERR_NO_RESOURCE;
  }
  ucp_worker_release_address(ctx->worker, addr);
  return CopyOut(blob.data(), blob.size(), buf, len);
}

int MemReg(adxl_plugin_context_t *ctx, void *addr, size_t len, int mem_type, const char *share_path,
           uint64_t share_offset, adxl_plugin_mem_t **out) noexcept {
  if (ctx == nullptr || addr == nullptr || len == 0 || out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  if (mem_type == ADXL_PLUGIN_MEM_DEVICE && !ctx->device_memory) {
    ctx->Log(ADXL_PLUGIN_LOG_ERROR, "device memory is not supported: %s", ctx->device_why.c_str());
    return ADXL_PLUGIN_ERR_UNSUPPORTED;
  }
  if (mem_type != ADXL_PLUGIN_MEM_DEVICE && mem_type != ADXL_PLUGIN_MEM_HOST) return ADXL_PLUGIN_ERR_INVALID;
  auto *mem = new (std::nothrow) adxl_plugin_mem();
  if (mem == nullptr) return ADXL_PLUGIN_ERR_NO_RESOURCE;
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  p.address = addr;
  p.length = len;
  if (mem_type == ADXL_PLUGIN_MEM_DEVICE) {
    // The type, not UCX's detection: memory UCX's allocation hooks did not
    // see would be taken for host memory.  That it is device memory is the
    // engine's check (cudaPointerGetAttributes in CUDA builds).
    p.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    p.memory_type = ctx->device_mem_type;
    mem->device = true;
  }
  ucs_status_t st = ucp_mem_map(ctx->ucp, &p, &mem->memh);
  if (st != UCS_OK) {
    ctx->Log(ADXL_PLUGIN_LOG_ERROR, "ucp_mem_map(%p, %zu, %s memory): %s", addr, len,
             mem->device ? "device" : "host", ucs_status_string(st));
    delete mem;
    return FromUcs(st);
  }
  if (mem_type == ADXL_PLUGIN_MEM_HOST) {
    try {
      ctx->am.AddRegion(addr, len, mem->memh);
    } catch (...) {
      ucp_mem_unmap(ctx->ucp, mem->memh);
      delete mem;
      return ADXL_PLUGIN_ERR_NO_RESOURCE;
    }
    mem->addr = addr;
    mem->len = len;
    try {
      if (share_path != nullptr) mem->share_path = share_path;
    } catch (...) {
    }
    mem->share_offset = share_offset;
    std::string why;
    try {
      mem->cma_ok = ctx->cma.Register(addr, len, &mem->cma_memh, &mem->cma_key, &why);
      if (!mem->cma_ok) ctx->Log(ADXL_PLUGIN_LOG_WARN, "%s: the HCCS lane cannot reach this region", why.c_str());
    } catch (...) {
      mem->cma_ok = false;
    }
  }
  *out = mem;
  return ADXL_PLUGIN_OK;
}

int MemPack(adxl_plugin_context_t *ctx, adxl_plugin_mem_t *mem, void *buf, size_t *len) noexcept {
  if (ctx == nullptr || mem == nullptr || len == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  void *packed = nullptr;
  size_t n = 0;
  ucs_status_t st = ucp_rkey_pack(ctx->ucp, mem->memh, &packed, &n);
  if (st != UCS_OK) return FromUcs(st);
  std::string blob;
  int rc = ADXL_PLUGIN_OK;
  try {
    AppendPart(&blob, packed, n);
    // HCCS part: [u8 flags][part: cma key][u64 base][u64 len][u64 offset][part: share path]
    std::string cma_part(1, static_cast<char>((mem->cma_ok ? kKeyCmaUsable : 0) | (mem->device ? kKeyDevice : 0)));
    AppendPart(&cma_part, mem->cma_key.data(), mem->cma_key.size());
    const uint64_t words[3] = {reinterpret_cast<uintptr_t>(mem->addr), mem->len, mem->share_offset};
    cma_part.append(reinterpret_cast<const char *>(words), sizeof(words));
    AppendPart(&cma_part, mem->share_path.data(), mem->share_path.size());
    AppendPart(&blob, cma_part.data(), cma_part.size());
  } catch (...) {
    rc = ADXL_PLUGIN_ERR_NO_RESOURCE;
  }
  ucp_rkey_buffer_release(packed);
  return rc == ADXL_PLUGIN_OK ? CopyOut(blob.data(), blob.size(), buf, len) : rc;
}

void MemDereg(adxl_plugin_context_t *ctx, adxl_plugin_mem_t *mem) noexcept {
  if (ctx == nullptr || mem == nullptr) return;
  if (mem->addr != nullptr) ctx->am.RemoveRegion(mem->addr);
  if (mem->cma_ok) ctx->cma.Deregister(mem->cma_memh);
  ucp_mem_unmap(ctx->ucp, mem->memh);
  delete mem;
}

// The UCP endpoint of `ep` (ep->ep) to the peer's UCP worker address.
ucs_status_t CreateUcpEp(adxl_plugin_context *ctx, const std::string &ucp_addr, adxl_plugin_ep_t *ep) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = reinterpret_cast<const ucp_address_t *>(ucp_addr.data());
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = EpError;
  p.err_handler.arg = ep;
  ucs_status_t st = ucp_ep_create(ctx->worker, &p, &ep->ep);
  if (st != UCS_OK) {
    ctx->Log(ADXL_PLUGIN_LOG_ERROR, "ucp_ep_create: %s", ucs_status_string(st));
    ep->ep = nullptr;
    return st;
  }
  ctx->Wake();  // wire-up messages need progress
  return UCS_OK;
}

int EpCreate(adxl_plugin_context_t *ctx, const void *address, size_t len, uint32_t lanes,
             adxl_plugin_ep_t **out) noexcept {
  if (ctx == nullptr || address == nullptr || len == 0 || out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  std::string ucp_addr, cma_addr;
  try {
    if (!SplitParts(address, len, &ucp_addr, &cma_addr)) {
      ctx->Log(ADXL_PLUGIN_LOG_ERROR, "malformed peer address (%zu bytes)", len);
      return ADXL_PLUGIN_ERR_INVALID;
    }
  } catch (...) {
    return ADXL_PLUGIN_ERR_NO_RESOURCE;
  }
  auto *ep = new (std::nothrow) adxl_plugin_ep();
  if (ep != nullptr) ep->id = ctx->next_ep_id.fetch_add(1);
  if (ep == nullptr) return ADXL_PLUGIN_ERR_NO_RESOURCE;
  ep->ctx = ctx;
  if (lanes & ADXL_PLUGIN_LANE_HCCS) {
    ep->cma_ep = ctx->cma.Connect(cma_addr);
    if (ep->cma_ep != nullptr) {
      ep->lane = ADXL_PLUGIN_LANE_HCCS;
      // Device memory on this lane goes through UCP (cuda_ipc on one node).
      if (ctx->device_memory && !ucp_addr.empty() && CreateUcpEp(ctx, ucp_addr, ep) != UCS_OK) {
        ctx->Log(ADXL_PLUGIN_LOG_WARN, "HCCS lane: no UCP endpoint for device memory; only host memory moves");
      }
      *out = ep;
      return ADXL_PLUGIN_OK;
    }
    ctx->Log(ADXL_PLUGIN_LOG_INFO, "HCCS lane (cma) cannot reach the peer%s",
             (lanes & ADXL_PLUGIN_LANE_RDMA) ? "; using the RDMA lane" : "");
  }
  if (!(lanes & ADXL_PLUGIN_LANE_RDMA) || ucp_addr.empty()) {
    delete ep;
    return ADXL_PLUGIN_ERR_UNSUPPORTED;
  }
  ep->lane = ADXL_PLUGIN_LANE_RDMA;
  ep->am = ctx->rdma_over_am;  // before the endpoint exists: EpError reads it
  ucs_status_t st = CreateUcpEp(ctx, ucp_addr, ep);
  if (st != UCS_OK) {
    delete ep;
    return FromUcs(st);
  }
  *out = ep;
  return ADXL_PLUGIN_OK;
}

uint32_t EpLane(adxl_plugin_ep_t *ep) noexcept { return ep == nullptr ? 0 : ep->lane; }

void EpDestroy(adxl_plugin_ep_t *ep, int force) noexcept {
  if (ep == nullptr) return;
  adxl_plugin_context *ctx = ep->ctx;
  if (ep->cma_ep != nullptr) ctx->cma.Disconnect(ep->cma_ep);  // nothing in flight: cma is synchronous
  if (ep->ep != nullptr) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_t st = WaitRequest(ctx, ucp_ep_close_nbx(ep->ep, &p), force ? -1 : kCloseTimeoutMs);
    if (st != UCS_OK && !force) {
      // A graceful close that did not finish (peer gone): drop what is left.
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;
      WaitRequest(ctx, ucp_ep_close_nbx(ep->ep, &p), -1);
    }
    // Batches still waiting for answers over this endpoint end now, and no
    // late READ data of theirs is written.
    if (ep->am) ctx->am.Abandon(ep->id, ADXL_PLUGIN_ERR_CANCELED);
  }
  delete ep;
}

int EpDescribe(adxl_plugin_ep_t *ep, char *buf, size_t len) noexcept {
  if (ep == nullptr || buf == nullptr || len == 0) return ADXL_PLUGIN_ERR_INVALID;
  if (ep->lane == ADXL_PLUGIN_LANE_HCCS) {
    snprintf(buf, len, ep->mapped_regions.load() > 0 ? "cma/memory,mapped/memfd" : "cma/memory");
    return ADXL_PLUGIN_OK;
  }
  char *text = nullptr;
  size_t text_len = 0;
  FILE *f = open_memstream(&text, &text_len);
  if (f == nullptr) return ADXL_PLUGIN_ERR_NO_RESOURCE;
  ucp_ep_print_info(ep->ep, f);
  fclose(f);
  // Lines look like "#   lane[0]:  1:posix/memory.0 md[1]  ... rma ...": keep
  // the distinct transport/device names in order.
  std::string out;
  try {
    const char *p = text;
    while ((p = strstr(p, "lane[")) != nullptr) {
      const char *colon = strchr(p, ':');
      if (colon == nullptr) break;
      const char *s = colon + 1;
      while (*s == ' ') ++s;
      while (*s >= '0' && *s <= '9') ++s;
      if (*s == ':') ++s;
      const char *e = s;
      while (*e != '\0' && *e != ' ' && *e != '\n') ++e;
      std::string name(s, e);
      size_t dot = name.rfind('.');
      if (dot != std::string::npos) name.resize(dot);
      if (!name.empty() && ("," + out + ",").find("," + name + ",") == std::string::npos) {
        if (!out.empty()) out += ",";
        out += name;
      }
      p = e;
    }
  } catch (...) {
    free(text);
    return ADXL_PLUGIN_ERR_NO_RESOURCE;
  }
  free(text);
  snprintf(buf, len, "%s", out.empty() ? "unknown" : out.c_str());
  return ADXL_PLUGIN_OK;
}

// Reads the HCCS part of a packed key (see MemPack): the cma key, and when
// the peer shared the region's pages, maps them here.
bool UnpackHccs(adxl_plugin_context *ctx, const std::string &part, adxl_plugin_rkey_t *rkey, std::string *why) {
  if (part.empty()) return false;
  const bool cma_usable = (part[0] & kKeyCmaUsable) != 0;
  const std::string rest = part.substr(1);
  std::string cma_key, tail;
  // [part: cma key][24 bytes of words][part: path]: split the first part off.
  if (rest.size() < 4) return false;
  uint32_t n = 0;
  memcpy(&n, rest.data(), 4);
  if (rest.size() < 4 + static_cast<size_t>(n) + 24 + 4) return false;
  cma_key = rest.substr(4, n);
  uint64_t words[3];
  memcpy(words, rest.data() + 4 + n, sizeof(words));
  std::string path;
  uint32_t plen = 0;
  memcpy(&plen, rest.data() + 4 + n + 24, 4);
  if (rest.size() != 4 + static_cast<size_t>(n) + 24 + 4 + plen) return false;
  path = rest.substr(4 + n + 24 + 4, plen);
  rkey->remote_base = words[0];
  if (!path.empty()) {
    const size_t len = words[1];
    const uint64_t offset = words[2];
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t aligned = offset & ~(page - 1);
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      const size_t map_len = len + (offset - aligned);
      // MAP_POPULATE: page-table set-up happens here, at key unpack, not in
      // the first transfer.
      void *p = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                     static_cast<off_t>(aligned));
      close(fd);
      if (p != MAP_FAILED) {
        rkey->map_base = p;
        rkey->map_len = map_len;
        rkey->mapped = static_cast<char *>(p) + (offset - aligned);
      }
    }
    if (rkey->mapped == nullptr) {
      ctx->Log(ADXL_PLUGIN_LOG_INFO, "cannot map the peer's shared region %s (%s); using cma", path.c_str(),
               strerror(errno));
    }
  }
  if (cma_usable) rkey->cma_ok = ctx->cma.Unpack(cma_key, &rkey->cma, why);
  return rkey->cma_ok || rkey->mapped != nullptr;
}

int RkeyUnpack(adxl_plugin_ep_t *ep, const void *packed, size_t len, adxl_plugin_rkey_t **out) noexcept {
  if (ep == nullptr || packed == nullptr || len == 0 || out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  std::string ucp_key, cma_part;
  try {
    if (!SplitParts(packed, len, &ucp_key, &cma_part) || cma_part.empty()) {
      ep->ctx->Log(ADXL_PLUGIN_LOG_ERROR, "malformed remote key (%zu bytes)", len);
      return ADXL_PLUGIN_ERR_INVALID;
    }
  } catch (...) {
    return ADXL_PLUGIN_ERR_NO_RESOURCE;
  }
  auto *rkey = new (std::nothrow) adxl_plugin_rkey();
  if (rkey == nullptr) return ADXL_PLUGIN_ERR_NO_RESOURCE;
  rkey->ctx = ep->ctx;
  rkey->device = (cma_part[0] & kKeyDevice) != 0;
  if (rkey->device && (!ep->ctx->device_memory || ep->ep == nullptr)) {
    // The peer's device memory stays out of reach from here, but its host
    // regions do not: keep the link, and fail transfers to this one (Post).
    ep->ctx->Log(ADXL_PLUGIN_LOG_INFO, "a peer region is device memory, which this side cannot reach (%s)",
                 ep->ctx->device_memory ? "no UCP endpoint to the peer" : ep->ctx->device_why.c_str());
  } else if (rkey->device) {
    ucs_status_t st = ucp_ep_rkey_unpack(ep->ep, ucp_key.data(), &rkey->rkey);
    if (st != UCS_OK) {
      ep->ctx->Log(ADXL_PLUGIN_LOG_ERROR, "ucp_ep_rkey_unpack (device region): %s", ucs_status_string(st));
      delete rkey;
      return FromUcs(st);
    }
  } else if (ep->lane == ADXL_PLUGIN_LANE_HCCS) {
    std::string why;
    bool ok = false;
    try {
      ok = UnpackHccs(ep->ctx, cma_part, rkey, &why);
      if (ok && rkey->mapped != nullptr) ep->mapped_regions.fetch_add(1);
    } catch (...) {
    }
    if (!ok) {
      ep->ctx->Log(ADXL_PLUGIN_LOG_ERROR, "HCCS lane key: %s", why.empty() ? "region not reachable over cma" : why.c_str());
      delete rkey;
      return ADXL_PLUGIN_ERR_INVALID;
    }
    // With device memory the endpoint has UCP too, and a batch that moves
    // device memory moves its host regions through UCP as well (Post).
    if (ep->ep != nullptr && ucp_ep_rkey_unpack(ep->ep, ucp_key.data(), &rkey->rkey) != UCS_OK) rkey->rkey = nullptr;
  } else {
    ucs_status_t st = ucp_ep_rkey_unpack(ep->ep, ucp_key.data(), &rkey->rkey);
    if (st != UCS_OK) {
      ep->ctx->Log(ADXL_PLUGIN_LOG_ERROR, "ucp_ep_rkey_unpack: %s", ucs_status_string(st));
      delete rkey;
      return FromUcs(st);
    }
  }
  *out = rkey;
  return ADXL_PLUGIN_OK;
}

void RkeyDestroy(adxl_plugin_rkey_t *rkey) noexcept {
  if (rkey == nullptr) return;
  if (rkey->rkey != nullptr) ucp_rkey_destroy(rkey->rkey);
  if (rkey->cma_ok) rkey->ctx->cma.Release(&rkey->cma);
  if (rkey->map_base != nullptr) munmap(rkey->map_base, rkey->map_len);
  delete rkey;
}

// HCCS lane: every copy is a system call of this thread; the batch is
// complete (or failed) when this returns.
int PostCma(adxl_plugin_ep_t *ep, int op, const adxl_plugin_iov_t *iov, size_t count, adxl_plugin_batch_t *batch) {
  std::vector<CmaLane::Op> ops;
  try {
    ops.reserve(count);
  } catch (...) {
    batch->status.store(ADXL_PLUGIN_ERR_NO_RESOURCE);
    return ADXL_PLUGIN_OK;
  }
  for (size_t i = 0; i < count; ++i) {
    const adxl_plugin_iov_t &v = iov[i];
    void *local = reinterpret_cast<void *>(static_cast<uintptr_t>(v.local_addr));
    if (v.remote->mapped != nullptr) {
      // The peer's pages are mapped here: one user-space copy.
      char *remote = v.remote->mapped + (v.remote_addr - v.remote->remote_base);
      if (op == ADXL_PLUGIN_PUT) {
        memcpy(remote, local, v.length);
      } else {
        memcpy(local, remote, v.length);
      }
      continue;
    }
    if (!v.remote->cma_ok) {
      batch->status.store(ADXL_PLUGIN_ERR_INVALID);
      return ADXL_PLUGIN_OK;
    }
    ops.push_back({local, v.local != nullptr ? v.local->cma_memh : UCT_MEM_HANDLE_NULL, v.length, v.remote_addr,
                   v.remote->cma.rkey});
  }
  ucs_status_t st = ep->ctx->cma.Copy(op == ADXL_PLUGIN_PUT, ep->cma_ep, ops.data(), ops.size());
  if (st != UCS_OK) {
    ep->ctx->Log(ADXL_PLUGIN_LOG_ERROR, "cma %s batch of %zu operations failed: %s (peer gone?)",
                 op == ADXL_PLUGIN_PUT ? "put" : "get", count, ucs_status_string(st));
    ep->failed.store(ADXL_PLUGIN_ERR_IO);
    batch->status.store(ADXL_PLUGIN_ERR_IO);
    return ADXL_PLUGIN_OK;
  }
  batch->status.store(ADXL_PLUGIN_OK, std::memory_order_release);
  return ADXL_PLUGIN_OK;
}

// RDMA lane over active messages: the batch completes when the peer has
// answered every operation (am_lane.h).
int PostAm(adxl_plugin_ep_t *ep, int op, const adxl_plugin_iov_t *iov, size_t count, adxl_plugin_batch_t *batch) {
  std::vector<AmLane::Op> ops;
  try {
    ops.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      const adxl_plugin_iov_t &v = iov[i];
      ops.push_back({reinterpret_cast<void *>(static_cast<uintptr_t>(v.local_addr)),
                     v.local != nullptr ? v.local->memh : nullptr, v.remote_addr, static_cast<size_t>(v.length)});
    }
  } catch (...) {
    batch->status.store(ADXL_PLUGIN_ERR_NO_RESOURCE);
    return ADXL_PLUGIN_OK;
  }
  batch->refs.fetch_add(1);  // held by the AM lane until done
  auto done = [](void *arg, int status) {
    auto *b = static_cast<adxl_plugin_batch *>(arg);
    b->status.store(status, std::memory_order_release);
    b->Unref();
  };
  if (!ep->ctx->am.Post(ep->id, ep->ep, op == ADXL_PLUGIN_PUT, ops.data(), ops.size(), done, batch)) {
    batch->refs.fetch_sub(1);
    batch->status.store(ADXL_PLUGIN_ERR_NO_RESOURCE);
  }
  ep->ctx->Wake();
  return ADXL_PLUGIN_OK;
}

int Post(adxl_plugin_ep_t *ep, int op, const adxl_plugin_iov_t *iov, size_t count,
         adxl_plugin_batch_t **out) noexcept {
  if (ep == nullptr || (iov == nullptr && count != 0) || out == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  if (op != ADXL_PLUGIN_GET && op != ADXL_PLUGIN_PUT) return ADXL_PLUGIN_ERR_INVALID;
  int failed = ep->failed.load(std::memory_order_acquire);
  if (failed != ADXL_PLUGIN_OK) return failed;
  // A batch that touches device memory anywhere moves as plain UCP RMA
  // (see the header comment), all of it: host operations in it too.
  bool device = false;
  for (size_t i = 0; i < count && !device; ++i) {
    device = (iov[i].local != nullptr && iov[i].local->device) || (iov[i].remote != nullptr && iov[i].remote->device);
  }
  auto *batch = new (std::nothrow) adxl_plugin_batch();
  if (batch == nullptr) return ADXL_PLUGIN_ERR_NO_RESOURCE;
  *out = batch;
  if (device) {
    for (size_t i = 0; i < count; ++i) {
      if (ep->ep == nullptr || iov[i].remote == nullptr || iov[i].remote->rkey == nullptr) {
        ep->ctx->Log(ADXL_PLUGIN_LOG_ERROR, "device memory cannot move over this endpoint: %s",
                     !ep->ctx->device_memory ? ep->ctx->device_why.c_str()
                                             : "no UCP endpoint or remote key for the region");
        batch->status.store(ADXL_PLUGIN_ERR_UNSUPPORTED, std::memory_order_release);
        return ADXL_PLUGIN_OK;
      }
    }
  } else if (ep->lane == ADXL_PLUGIN_LANE_HCCS) {
    return PostCma(ep, op, iov, count, batch);
  } else if (ep->am && count > 0) {
    return PostAm(ep, op, iov, count, batch);  // count 0: UCP flush (wire-up)
  }
  ucp_request_param_t p{};
  for (size_t i = 0; i < count; ++i) {
    const adxl_plugin_iov_t &v = iov[i];
    p.op_attr_mask = 0;
    if (v.local != nullptr) {
      p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH;
      p.memh = v.local->memh;
      if (device) {  // the type, not UCX's detection (see MemReg)
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        p.memory_type = v.local->device ? ep->ctx->device_mem_type : UCS_MEMORY_TYPE_HOST;
      }
    }
    void *local = reinterpret_cast<void *>(static_cast<uintptr_t>(v.local_addr));
    ucs_status_ptr_t r = op == ADXL_PLUGIN_PUT
                             ? ucp_put_nbx(ep->ep, local, v.length, v.remote_addr, v.remote->rkey, &p)
                             : ucp_get_nbx(ep->ep, local, v.length, v.remote_addr, v.remote->rkey, &p);
    if (UCS_PTR_IS_ERR(r)) {
      // What was queued still drains through the flush below; the batch
      // then completes with this error.
      batch->post_error = FromUcs(UCS_PTR_STATUS(r));
      ep->ctx->Log(ADXL_PLUGIN_LOG_ERROR, "post of operation %zu failed: %s", i,
                   ucs_status_string(UCS_PTR_STATUS(r)));
      break;
    }
    if (r != nullptr) ucp_request_free(r);  // completion is observed through the flush
  }
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = FlushDone;
  p.user_data = batch;
  batch->refs.fetch_add(1, std::memory_order_relaxed);
  ucs_status_ptr_t r = ucp_ep_flush_nbx(ep->ep, &p);
  if (r == nullptr || UCS_PTR_IS_ERR(r)) {
    batch->Complete(r == nullptr ? UCS_OK : UCS_PTR_STATUS(r));
    batch->Unref();
  } else {
    ep->ctx->Wake();  // the progress thread drives the flush when nobody polls
  }
  return ADXL_PLUGIN_OK;
}

int Test(adxl_plugin_batch_t *batch) noexcept {
  if (batch == nullptr) return ADXL_PLUGIN_ERR_INVALID;
  return batch->status.load(std::memory_order_acquire);
}

void Release(adxl_plugin_batch_t *batch) noexcept {
  if (batch != nullptr) batch->Unref();
}

int Progress(adxl_plugin_context_t *ctx) noexcept {
  if (ctx == nullptr) return 0;
  return static_cast<int>(ucp_worker_progress(ctx->worker));
}

const adxl_plugin_ops_t kOps = {
    ADXL_PLUGIN_ABI_VERSION, sizeof(adxl_plugin_ops_t), "ucx",
    Open, Close, Query, GetAddress, MemReg, MemPack, MemDereg,
    EpCreate, EpLane, EpDestroy, EpDescribe, RkeyUnpack, RkeyDestroy,
    Post, Test, Release, Progress,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const adxl_plugin_ops_t *adxl_plugin_get_ops(
    uint32_t engine_abi_version) {
  if (engine_abi_version != ADXL_PLUGIN_ABI_VERSION) {
    fprintf(stderr, "adxl ucx plugin: engine ABI version %u, plugin ABI version %u: refusing to load\n",
            engine_abi_version, ADXL_PLUGIN_ABI_VERSION);
    return nullptr;
  }
  return &kOps;
}
