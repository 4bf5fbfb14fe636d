// The UCX plugin's context: UCP set-up and settings, the progress thread,
// logging, UCP endpoint helpers (ucx_context.h).
#include "ucx_context.h"

#include <dirent.h>
#include <net/if.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <new>

#include "am/am_mover.h"
#include "core/ucx_config.h"
#include "core/fault_injection.h"
#include "hccs/cma_mover.h"
#include "hccs/mapped_mover.h"
#include "paths/paths_mover.h"
#include "rma/rma_mover.h"

extern char **environ;

namespace {

// UCP's transports when the user did not choose (UCX_TLS): everything but
// the same-node ones.
constexpr const char kRdmaLaneTls[] = "^sm";  // "sm": posix, sysv, cma, knem, xpmem
// UCX's TCP receive segment for the RDMA lane (ApplyUcxSettings).
constexpr const char kRdmaRxSegSize[] = "2m";
// UCX's TCP send copy-out buffer under its newer protocols (ApplyUcxSettings).
constexpr const char kRdmaTxSegSize[] = "1m";
// How long the progress thread keeps polling after the last event before it
// sleeps again (header comment).
constexpr auto kProgressLinger = std::chrono::microseconds(200);

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

// Whether this host has a GPU UCX could move device memory of: the device
// nodes of NVIDIA's (nvidiactl) or AMD's (kfd) driver.
bool HaveGpu() { return access("/dev/nvidiactl", F_OK) == 0 || access("/dev/kfd", F_OK) == 0; }

// Whether the RDMA lane should run over active messages (StartAmTransport):
// unless the rdma_protocol parameter (ADXL_UCX_RDMA_PROTOCOL) says otherwise, where there is no RDMA
// hardware.
bool WantAmTransport(const UcxParams &params) {
  using Proto = UcxParams::RdmaProtocol;
  return params.rdma_protocol == Proto::kAuto ? !HaveInfiniBand() : params.rdma_protocol == Proto::kAm;
}

// Whether the user set a UCX_* variable for setting `field` of any transport
// ("UCX_TCP_RX_SEG_SIZE", "UCX_RC_VERBS_SL"...: UCX_ ... _<field>, or
// UCX_<field>).  Reads the environment, never writes it.
bool UserSetUcx(const char *field) {
  const size_t flen = strlen(field);
  for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
    if (strncmp(*e, "UCX_", 4) != 0) continue;
    const char *eq = strchr(*e, '=');
    if (eq == nullptr) continue;
    const size_t nlen = static_cast<size_t>(eq - *e);
    if (nlen < 4 + flen || strncmp(eq - flen, field, flen) != 0) continue;
    if (nlen == 4 + flen || eq[-static_cast<ptrdiff_t>(flen) - 1] == '_') return true;
  }
  return false;
}

// Whether a UCX_TLS list may select transport `tl` (any of the names).
bool TlsMayUse(const char *tls, std::initializer_list<const char *> names) {
  if (tls == nullptr) return true;
  bool named = false;
  for (const char *n : names) named = named || strstr(tls, n) != nullptr;
  if (tls[0] == '^') return !named;  // an exclusion list
  return named || strstr(tls, "all") != nullptr;
}

// Our defaults for UCX settings, on the configuration ucp_init gets: UCP
// hands keys it does not know itself to every transport it opens
// (uct_config_modify; UCX >= 1.11), and a transport takes a key named as in
// its own table without its prefix ("RX_SEG_SIZE" for UCX_TCP_RX_SEG_SIZE,
// "IB_SL" for UCX_IB_SL / UCX_RC_VERBS_SL...).  A key no opened transport
// takes makes ucp_worker_create warn "invalid configuration", hence the
// checks of UCX_TLS and of the hardware.  Applied only where the user set
// nothing for that setting: a UCX_* variable of the user always wins.
void ApplyUcxSettings(adxl_plugin_context *ctx, ucp_config_t *config, const UcxParams &params) {
  // A UCP key, or a transport's (`tl_prefix`: ucx_config.h).
  auto set = [ctx, config](const char *key, const char *value, const char *tl_prefix = nullptr) {
    ucs_status_t st = tl_prefix == nullptr ? ucp_config_modify(config, key, value)
                                           : ModifyTransportSetting(config, tl_prefix, key, value);
    ctx->log(st == UCS_OK ? ADXL_PLUGIN_LOG_DEBUG : ADXL_PLUGIN_LOG_WARN, "UCX setting %s=%s: %s", key, value,
             ucs_status_string(st));
  };
  const char *tls = getenv("UCX_TLS");
  // UCP serves the RDMA lane, which is for peers on other nodes: the
  // same-node paths (shared memory, cma) belong to the HCCS lane.  Left in,
  // UCP picks shared memory for peers in another network namespace of the
  // same machine, whose wire-up then never completes.
  // "^sm" keeps UCX's cuda / rocm transports (cuda_copy, cuda_ipc, gdr_copy...):
  // device memory moves through UCP on both lanes.
  if (tls == nullptr) set("TLS", kRdmaLaneTls);
  // UCX's newer protocols (UCX_PROTO_ENABLE, on by default from UCX 1.16)
  // carry the RDMA lane's active messages over TCP at a quarter to a third
  // of the older ones' rate on UCX 1.22 (docs/ucx.md: 0.8 GB/s where the
  // older move 2.2-4.6), but only they move device memory through UCP RMA
  // (DeviceMemorySupport), and UCX 1.22's older ones have no RMA over TCP
  // at all ("Unsupported operation").  Hence the older ones only where the
  // lane runs over active messages and no GPU could give device memory;
  // UCX's default elsewhere.  (An AM transport that then fails to start leaves
  // UCP RMA, which over TCP fails its posts there: StartAmTransport logs it.)
  const bool older_protocols = getenv("UCX_PROTO_ENABLE") == nullptr && WantAmTransport(params) && !HaveGpu();
  if (older_protocols) set("PROTO_ENABLE", "n");
  // Under the newer protocols (a GPU host) UCP sends the lane's rendezvous
  // data over TCP as copies of up to one send segment, 8 KiB by default:
  // one send call per 8 KiB, about 1 GB/s on loopback whatever the block
  // size, here and on a 16-core H200 host alike.  1 MiB segments bring it
  // to 3-5 GB/s (docs/ucx.md "Protocols"), for 8 MiB of send buffers per
  // worker when UCX first grows the pool (8 at a time), one more segment for
  // each further endpoint sending at once.  The older protocols send
  // such data zero-copy and are left as they are.
  if (!older_protocols && TlsMayUse(tls, {"tcp"}) && !UserSetUcx("TX_SEG_SIZE")) {
    set("TX_SEG_SIZE", kRdmaTxSegSize, "TCP_");
  }
  // Shared-memory transports refuse endpoints with peer error handling
  // unless told to watch the peer process; we need both (peer failure must
  // be detected on every lane, docs/architecture.md).  Only a
  // UCX_TLS of the user brings them in (see kRdmaLaneTls).  One key for
  // posix and sysv (their common MM_ table).
  if (tls != nullptr && TlsMayUse(tls, {"sm", "mm", "posix", "sysv"}) && !UserSetUcx("ERROR_HANDLING")) {
    set("MM_ERROR_HANDLING", "y");
  }
  // The RDMA lane over TCP: UCX receives into segments of this size (64 KiB
  // by default), one receive call and one progress pass per segment.  The
  // lane's rendezvous data arrives in MiB-sized runs; 2 MiB segments about
  // double its bandwidth on loopback (adxl-bench --lane rdma, docs/performance.md), for
  // 16 MiB of receive buffers per worker (UCX grows the pool 8 at a time).
  if (TlsMayUse(tls, {"tcp"}) && !UserSetUcx("RX_SEG_SIZE")) set("RX_SEG_SIZE", kRdmaRxSegSize, "TCP_");
  // Without an RDMA device UCX has no IB transports to take these.
  if (HaveInfiniBand() && TlsMayUse(tls, {"ib", "rc", "ud", "dc", "mlx5", "verbs"})) {
    if (!params.rdma_traffic_class.empty() && !UserSetUcx("TRAFFIC_CLASS")) {
      set("IB_TRAFFIC_CLASS", params.rdma_traffic_class.c_str());
    }
    if (!params.rdma_service_level.empty() && !UserSetUcx("SL")) set("IB_SL", params.rdma_service_level.c_str());
  }
}

// UCX before 1.14 asserts (aborting the process) when an endpoint fails
// while a wire-up reply to its peer is still queued: a peer killed during its
// transport wire-up takes this process down (upstream fixed it in 1.14,
// openucx/ucx#8175).  Said once per process, at the first context.
void WarnOfOldUcx(const PluginLog &log) {
  static std::once_flag once;
  std::call_once(once, [&log] {
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    if (major > 1 || (major == 1 && minor >= 14)) return;
    log(ADXL_PLUGIN_LOG_WARN,
        "UCX %u.%u.%u: a peer that dies while its transport wire-up is in flight aborts this process (UCX's "
        "wire-up assertion, fixed in UCX 1.14); build against UCX >= 1.14 (scripts/setup.sh fetches 1.22)",
        major, minor, release);
  });
}

// The value UCP's configuration gives `name` (e.g. "UCX_PROTO_ENABLE"), from
// the environment, a config file or the default; empty when not listed.
std::string ConfigValue(const ucp_config_t *config, const char *name) {
  char *text = nullptr;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f == nullptr) return std::string();
  ucp_config_print(config, f, nullptr, UCS_CONFIG_PRINT_CONFIG);
  fclose(f);
  std::unique_ptr<char, decltype(&free)> hold(text, free);
  const std::string key = std::string(name) + "=";
  for (const char *line = text; line != nullptr && *line != '\0';) {
    const char *end = strchr(line, '\n');
    if (strncmp(line, key.c_str(), key.size()) == 0) {
      return std::string(line + key.size(), end != nullptr ? end : line + strlen(line));
    }
    line = end != nullptr ? end + 1 : nullptr;
  }
  return std::string();
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

// Binds a thread to the "progress_cpus" list, if any.
void PinToCpus(adxl_plugin_context *ctx, pthread_t thread, const std::string &list) {
  if (list.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  // "a-b,c,...": ranges and single CPUs.
  for (const char *p = list.c_str(); *p != '\0';) {
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
  ctx->log(rc == 0 ? ADXL_PLUGIN_LOG_DEBUG : ADXL_PLUGIN_LOG_WARN, "progress thread on CPUs %s: %s", list.c_str(),
           rc == 0 ? "bound" : strerror(rc));
}

// Runs the work that is due outside ucp_worker_progress: what UCP callbacks
// queued on the main AM transport (am_transport.h), then each progress
// source's (the network paths': their AM transports' deferred work, their
// failover); whether there was some.
bool RunAllDue(adxl_plugin_context *ctx) {
  bool any = false;
  if (ctx->am_mover->transport().HasDeferred()) {
    ctx->am_mover->transport().RunDeferred();
    any = true;
  }
  for (ProgressSource *s : ctx->progress_sources) any = s->RunDue() || any;
  return any;
}

// Arms every worker for epoll; UCS_ERR_BUSY when one has events pending.
ucs_status_t ArmAll(adxl_plugin_context *ctx) {
  ucs_status_t st = ucp_worker_arm(ctx->worker);
  for (size_t i = 0; i < ctx->progress_sources.size() && st == UCS_OK; ++i) st = ctx->progress_sources[i]->Arm();
  return st;
}

// The epoll timeout: the soonest of the progress sources' timers (-1: none).
int SourcesTimeoutMs(const adxl_plugin_context *ctx) {
  int timeout_ms = -1;
  for (const ProgressSource *s : ctx->progress_sources) {
    const int t = s->TimeoutMs();
    if (t >= 0 && (timeout_ms < 0 || t < timeout_ms)) timeout_ms = t;
  }
  return timeout_ms;
}

void ProgressLoop(adxl_plugin_context *ctx) {
  epoll_event events[4];
  while (!ctx->stop.load(std::memory_order_acquire)) {
    auto last_event = std::chrono::steady_clock::now();
    ctx->progress_polling.store(true, std::memory_order_relaxed);
    while (!ctx->stop.load(std::memory_order_relaxed)) {
      const unsigned events = ProgressAllWorkers(ctx);
      ctx->progress_pass_events.store(events, std::memory_order_relaxed);
      if (events != 0) {
        last_event = std::chrono::steady_clock::now();
        FaultDelay(ctx->progress_pause_us);  // a seam of the test build (fault_injection.h)
      }
      // Outside ucp_worker_progress: work UCP callbacks queued
      // (am_transport.h); failed network paths out, returned ones back
      // (path_failover.h).  Sleep only after a pass that found nothing
      // (ucx_context.h): the linger is wall time, which a preempted thread
      // may have spent.
      if (RunAllDue(ctx)) {
        last_event = std::chrono::steady_clock::now();
      } else if (events == 0 && std::chrono::steady_clock::now() - last_event > kProgressLinger) {
        break;
      }
    }
    // From here until it polls again, callers of the ABI's progress drive
    // the workers themselves (ucx_context.h).
    ctx->progress_polling.store(false, std::memory_order_relaxed);
    ucs_status_t st = ArmAll(ctx);
    if (st == UCS_ERR_BUSY) continue;  // events arrived meanwhile
    if (st != UCS_OK) {
      ctx->log(ADXL_PLUGIN_LOG_ERROR, "ucp_worker_arm failed: %s; progress thread polls", ucs_status_string(st));
    }
    const int timeout_ms = st != UCS_OK ? 1 : SourcesTimeoutMs(ctx);
    int n = epoll_wait(ctx->epoll_fd, events, 4, timeout_ms);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == ctx->wake_fd) {
        uint64_t v;
        ssize_t rc = read(ctx->wake_fd, &v, sizeof(v));
        (void)rc;
      } else {
        for (ProgressSource *s : ctx->progress_sources) s->Readable(events[i].data.fd);
      }
    }
  }
}

// Active messages (am_mover.h): unless rdma_protocol (ADXL_UCX_RDMA_PROTOCOL) says otherwise, where there is
// no RDMA hardware.  False (UCP RMA) when the lane cannot start.
bool StartAmTransport(adxl_plugin_context *ctx, const UcxParams &params) {
  const bool want = WantAmTransport(params);
  std::string why;
  try {
    if (ctx->am_mover->transport().Init(ctx->worker, ctx->log, params.faults, &why)) {
      ctx->am_mover->transport().UseStagingFrom(ctx->ucp);
      return want;
    }
  } catch (...) {
  }
  ctx->log(ADXL_PLUGIN_LOG_WARN, "active-message protocol unavailable (%s): the RDMA lane uses UCP RMA", why.c_str());
  return false;
}

// The progress thread and its wake-up fds; false (logged) on failure.
bool StartProgressThread(adxl_plugin_context *ctx, const UcxParams &params) {
  int efd = -1;
  ucs_status_t st = ucp_worker_get_efd(ctx->worker, &efd);
  if (st != UCS_OK) {
    ctx->log(ADXL_PLUGIN_LOG_ERROR, "ucp_worker_get_efd: %s", ucs_status_string(st));
    return false;
  }
  ctx->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  ctx->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = efd;
  bool ok = ctx->epoll_fd >= 0 && ctx->wake_fd >= 0 && epoll_ctl(ctx->epoll_fd, EPOLL_CTL_ADD, efd, &ev) == 0;
  ev.data.fd = ctx->wake_fd;
  ok = ok && epoll_ctl(ctx->epoll_fd, EPOLL_CTL_ADD, ctx->wake_fd, &ev) == 0;
  for (const ProgressSource *s : ctx->progress_sources) {
    for (int fd : s->EpollFds()) {
      ev.data.fd = fd;
      ok = ok && epoll_ctl(ctx->epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0;
    }
  }
  if (ok) {
    try {
      ctx->progress_thread = std::thread(ProgressLoop, ctx);
      PinToCpus(ctx, ctx->progress_thread.native_handle(), params.progress_cpus);
    } catch (...) {
      ok = false;
    }
  }
  if (!ok) ctx->log(ADXL_PLUGIN_LOG_ERROR, "progress thread set-up failed: %s", strerror(errno));
  return ok;
}

// The context's MoverSet (ucx_context.h), in the order a registration
// takes: the shared-file search first (it sets what mem_pack packs), UCP's
// memory handle before the AM mover and the paths that use it, cma last (it
// may fail and keep the region).
// The AM transport keeps the table of the plugin's own UCP endpoints
// (am_transport.h), which the RMA and cma movers' endpoints are in too.
void AddMovers(adxl_plugin_context *ctx) {
  auto am = std::make_unique<AmMover>(*ctx);
  OwnedEndpoints &owned = am->transport();
  ctx->mapped_mover = ctx->movers.Add(std::make_unique<MappedMover>(ctx->log, ctx->hccs_piece_delay_us));
  ctx->rma_mover = ctx->movers.Add(std::make_unique<RmaMover>(*ctx, owned, ctx->device_mem_type,
                                                              ctx->device_memory ? std::string() : ctx->device_why));
  ctx->am_mover = ctx->movers.Add(std::move(am));
  ctx->paths_mover = ctx->movers.Add(std::make_unique<PathsMover>(*ctx, *ctx->am_mover));
  ctx->cma_mover = ctx->movers.Add(std::make_unique<CmaMover>(*ctx, owned, ctx->hccs_piece_delay_us));
}

}  // namespace

int adxl_plugin_context::Open(const adxl_plugin_config_t *cfg, adxl_plugin_context **out) {
  std::unique_ptr<adxl_plugin_context> ctx(new adxl_plugin_context());
  if (cfg != nullptr) {
    ctx->log = PluginLog{cfg->log, cfg->log_arg};
  }
  UcxParams params = UcxParams::Parse(cfg);
  std::string why;
  if (!params.Check(&why)) {
    ctx->log(ADXL_PLUGIN_LOG_ERROR, "open: parameter %s", why.c_str());
    return ADXL_PLUGIN_ERR_INVALID;
  }
  ctx->ep_destroy_delay_us = params.faults.ep_destroy_delay_us;
  ctx->progress_pause_us = params.faults.progress_pause_us;
  ctx->hccs_piece_delay_us = params.faults.hccs_piece_delay_us;
  ctx->rdma_connections = params.rdma_connections;
  WarnOfOldUcx(ctx->log);
  ucp_config_t *config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) {
    ctx->log(ADXL_PLUGIN_LOG_ERROR, "ucp_config_read: %s", ucs_status_string(st));
    return FromUcs(st);
  }
  ucp_params_t uparams{};
  uparams.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  uparams.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  uparams.mt_workers_shared = 0;
  bool proto_v2 = false;
  try {
    ApplyUcxSettings(ctx.get(), config, params);
    proto_v2 = ConfigValue(config, "UCX_PROTO_ENABLE") == "y";
  } catch (...) {
    ucp_config_release(config);
    throw;
  }
  st = ucp_init(&uparams, config, &ctx->ucp);
  ucp_config_release(config);
  if (st != UCS_OK) {
    ctx->log(ADXL_PLUGIN_LOG_ERROR, "ucp_init: %s", ucs_status_string(st));
    return FromUcs(st);
  }
  // From here on a failure must undo ucp_init: what could throw is caught.
  try {
    ctx->device_memory = DeviceMemorySupport(ctx->ucp, proto_v2, &ctx->device_mem_type, &ctx->device_why);
  } catch (...) {
    ctx->device_memory = false;
  }
  ctx->log(ADXL_PLUGIN_LOG_INFO, "device memory: %s",
           ctx->device_memory ? (ctx->device_mem_type == UCS_MEMORY_TYPE_CUDA ? "CUDA" : "ROCm")
                              : ("unsupported: " + ctx->device_why).c_str());
  // The movers exist before anything of theirs starts (device_mem_type set).
  bool movers_ok = false;
  try {
    AddMovers(ctx.get());
    movers_ok = true;
  } catch (...) {
  }
  if (!movers_ok) {
    ctx->log(ADXL_PLUGIN_LOG_ERROR, "out of memory setting up the plugin's movers");
    ucp_cleanup(ctx->ucp);
    return ADXL_PLUGIN_ERR_NO_RESOURCE;
  }
  try {
    CmaTransport &cma = ctx->cma_mover->transport();
    std::string cma_why;
    if (cma.Open(params.hccs_copy_threads, CmaTransport::Tuning{params.cma_split_bytes, params.cma_spin_us}, &cma_why)) {
      for (pthread_t t : cma.copy_threads()) PinToCpus(ctx.get(), t, params.progress_cpus);
    } else {
      ctx->log(ADXL_PLUGIN_LOG_INFO, "HCCS lane unavailable: %s; same-node peers use the RDMA lane", cma_why.c_str());
    }
  } catch (...) {
  }
  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_MULTI;
  st = ucp_worker_create(ctx->ucp, &wparams, &ctx->worker);
  if (st != UCS_OK) {
    ctx->log(ADXL_PLUGIN_LOG_ERROR, "ucp worker set-up: %s", ucs_status_string(st));
    ucp_cleanup(ctx->ucp);
    return FromUcs(st);
  }
  bool ok = false;
  try {
    ctx->rdma_over_am = StartAmTransport(ctx.get(), params);
    // The RDMA lane's network paths (rdma_paths, ADXL_UCX_RDMA_PATHS;
    // paths_mover.h), progressed as a source of the progress thread.
    const std::string seg = UserSetUcx("RX_SEG_SIZE") ? std::string() : std::string(kRdmaRxSegSize);
    const bool paths_ok = ctx->paths_mover->Open(params, ctx->rdma_over_am, seg);
    if (paths_ok && ctx->paths_mover->HasPaths()) ctx->progress_sources.push_back(ctx->paths_mover);
    // ok only once all of it ran: an exception anywhere leaves it false.
    ok = paths_ok && StartProgressThread(ctx.get(), params);
  } catch (...) {
  }
  if (!ok) {
    if (ctx->epoll_fd >= 0) close(ctx->epoll_fd);
    if (ctx->wake_fd >= 0) close(ctx->wake_fd);
    ctx->paths_mover->Close();
    ctx->am_mover->transport().Close();
    ucp_worker_destroy(ctx->worker);
    ucp_cleanup(ctx->ucp);
    return ADXL_PLUGIN_ERR_NO_RESOURCE;
  }
  try {
    const char *tls = getenv("UCX_TLS");
    std::string &t = ctx->transports;
    if (ctx->cma_mover->transport().available()) t = "cma,mapped,";
    t += ctx->rdma_over_am ? "am" : "rma";
    t += std::string(",ucp(") + (tls != nullptr ? tls : kRdmaLaneTls) + ")";
    if (ctx->device_memory) t += ctx->device_mem_type == UCS_MEMORY_TYPE_CUDA ? ",cuda" : ",rocm";
    t += ctx->paths_mover->DescribeTransports();
  } catch (...) {
  }
  *out = ctx.release();
  return ADXL_PLUGIN_OK;
}

void adxl_plugin_context::Close(adxl_plugin_context *ctx) {
  ctx->stop.store(true, std::memory_order_release);
  ctx->Wake();
  if (ctx->progress_thread.joinable()) ctx->progress_thread.join();
  ctx->paths_mover->Stop();  // a last failover pass ends the striped batches queued for a re-post
  // Requests this side serves for peers that went away (a fenced initiator)
  // would stay pending forever; UCP refuses to destroy a worker with any.
  ctx->am_mover->transport().ReleaseTargetOps(0, 0);
  if (ctx->am_mover->transport().HasDeferred()) ctx->am_mover->transport().RunDeferred();
  ctx->am_mover->transport().Close();
  ctx->paths_mover->Close();  // each path: its target requests, staging, worker, context; the failover
  ucp_worker_destroy(ctx->worker);
  ucp_cleanup(ctx->ucp);
  close(ctx->epoll_fd);
  close(ctx->wake_fd);
  delete ctx;
}

unsigned ProgressAllWorkers(adxl_plugin_context *ctx) {
  unsigned n = ucp_worker_progress(ctx->worker);
  for (ProgressSource *s : ctx->progress_sources) n += s->Progress();
  return n;
}
