/*
 * The ADXL transport plugin ABI (C, versioned).
 *
 * A plugin is a shared object exporting ADXL_PLUGIN_ENTRY.  The engine calls
 * it with the ABI version it was built for; the plugin returns its operations
 * table, or NULL when it cannot serve that version (the engine reports the
 * refusal: the plugin has no logger yet).  The engine also refuses a table
 * whose abi_version differs from its own.
 *
 * Contract every plugin keeps (checked by tests/plugin_conformance; stated
 * in full, operation by operation, in docs/plugin_guide.md):
 *  - No C++ exception and no signal crosses this boundary; errors are
 *    adxl_plugin_status_t values.
 *  - All functions are thread-safe; any thread may call any of them.
 *  - The plugin makes remote operations complete without the *target*
 *    application calling anything (its own progress thread or true one-sided
 *    hardware), and an idle context burns no measurable CPU.
 *  - post() returns a batch for everything it was given, or an error and no
 *    batch when nothing was queued; a failure part-way is reported by test()
 *    once what was queued has drained.  It reads the iov array only during
 *    the call: the caller may reuse it as soon as post() returns.  A batch completes (test() == OK)
 *    only when every byte of it is in place at the destination.
 *  - ep_destroy(ep, force=1) cancels everything in flight on the endpoint:
 *    when it returns, no byte of any batch on that endpoint moves any more
 *    as far as this side can ensure, and those batches test() as CANCELED
 *    or ERR_IO.  ep_cancel (optional) starts that cancel while a post on
 *    the endpoint is still copying.
 *  - When the transport learns that a peer is gone, every batch in flight
 *    on its endpoints ends with an error within 100 ms, by the plugin's own
 *    failure detection.  Requests served as a target for a peer that went
 *    away are released, so mem_dereg and close always return.
 *  - No call into the transport is made while holding a lock its callbacks
 *    take (transports run callbacks inside the call that posted a request).
 *  - Objects are released by the call that matches their constructor; a
 *    batch may be released before it completes.
 */
#ifndef ADXL_PLUGIN_ADXL_PLUGIN_H_
#define ADXL_PLUGIN_ADXL_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ADXL_PLUGIN_ABI_VERSION 2u
#define ADXL_PLUGIN_ENTRY "adxl_plugin_get_ops"

typedef enum {
  ADXL_PLUGIN_OK = 0,
  ADXL_PLUGIN_IN_PROGRESS = 1,
  ADXL_PLUGIN_ERR_INVALID = -1,     /* bad argument, unknown key */
  ADXL_PLUGIN_ERR_UNSUPPORTED = -2, /* memory type / feature not available */
  ADXL_PLUGIN_ERR_NO_RESOURCE = -3, /* out of memory, descriptors, ... */
  ADXL_PLUGIN_ERR_IO = -4,          /* transport or peer failure */
  ADXL_PLUGIN_ERR_CANCELED = -5     /* cancelled by ep_destroy(force) */
} adxl_plugin_status_t;

typedef enum { ADXL_PLUGIN_MEM_DEVICE = 0, ADXL_PLUGIN_MEM_HOST = 1 } adxl_plugin_mem_type_t;
typedef enum { ADXL_PLUGIN_GET = 0, ADXL_PLUGIN_PUT = 1 } adxl_plugin_op_t;

/* Lanes (docs/contract.md §9, docs/plugin_guide.md §4.4).  HCCS: the intra-node path, truly one-sided (the
 * initiator alone moves the bytes).  RDMA: the network path (RDMA verbs where
 * a NIC exists, TCP otherwise). */
#define ADXL_PLUGIN_LANE_HCCS (1u << 0)
#define ADXL_PLUGIN_LANE_RDMA (1u << 1)
typedef enum {
  ADXL_PLUGIN_LOG_ERROR = 0,
  ADXL_PLUGIN_LOG_WARN = 1,
  ADXL_PLUGIN_LOG_INFO = 2,
  ADXL_PLUGIN_LOG_DEBUG = 3
} adxl_plugin_log_level_t;

typedef struct adxl_plugin_context adxl_plugin_context_t;
typedef struct adxl_plugin_mem adxl_plugin_mem_t;
typedef struct adxl_plugin_ep adxl_plugin_ep_t;
typedef struct adxl_plugin_rkey adxl_plugin_rkey_t;
typedef struct adxl_plugin_batch adxl_plugin_batch_t;

typedef struct {
  const char *key;
  const char *value;
} adxl_plugin_param_t;

/* Settings handed to open().  Known keys: "rdma_traffic_class",
 * "rdma_service_level" (decimal strings), "progress_cpus" (a CPU list such
 * as "0-3,8": where the plugin's own threads should run),
 * "hccs_copy_threads" (decimal: how many threads one large same-node copy
 * may use).  Unknown keys are ignored. */
typedef struct {
  const adxl_plugin_param_t *params;
  size_t num_params;
  /* The engine's logger: the plugin's only way to log (no output of its
   * own).  level: adxl_plugin_log_level_t; msg: one line, no newline; arg:
   * log_arg.  The engine filters by its ADXL_LOG_LEVEL.  May be NULL: the
   * plugin then logs nothing. */
  void (*log)(void *arg, int level, const char *msg);
  void *log_arg;
} adxl_plugin_config_t;

#define ADXL_PLUGIN_CAP_MEM_HOST (1u << 0)
#define ADXL_PLUGIN_CAP_MEM_DEVICE (1u << 1)

typedef struct {
  uint32_t flags;        /* ADXL_PLUGIN_CAP_* */
  char transports[256];  /* comma-separated transport names the context can use */
} adxl_plugin_caps_t;

/* One operation of a batch: length bytes between local_addr (inside the
 * registered region `local`) and remote_addr (inside the region of `remote`). */
typedef struct {
  adxl_plugin_mem_t *local;
  uint64_t local_addr;
  adxl_plugin_rkey_t *remote;
  uint64_t remote_addr;
  uint64_t length;
} adxl_plugin_iov_t;

typedef struct adxl_plugin_ops {
  uint32_t abi_version; /* ADXL_PLUGIN_ABI_VERSION of the plugin's build */
  uint32_t struct_size; /* sizeof(adxl_plugin_ops_t) of the plugin's build */
  const char *name;

  int (*open)(const adxl_plugin_config_t *config, adxl_plugin_context_t **ctx);
  void (*close)(adxl_plugin_context_t *ctx);
  int (*query)(adxl_plugin_context_t *ctx, adxl_plugin_caps_t *caps);

  /* The address peers pass to ep_create.  *len: in capacity, out size;
   * ERR_NO_RESOURCE with *len set to the size needed when too small. */
  int (*get_address)(adxl_plugin_context_t *ctx, void *buf, size_t *len);

  /* Registers [addr, addr+len).  share_path, when not NULL, names a file
   * that a process on the same node may open and map to reach the same
   * pages, addr being at share_offset in it (memory from MallocMem); a
   * plugin may then let same-node peers copy through a direct mapping. */
  int (*mem_reg)(adxl_plugin_context_t *ctx, void *addr, size_t len, int mem_type, const char *share_path,
                 uint64_t share_offset, adxl_plugin_mem_t **mem);
  /* Packed remote key of a registration; *len as for get_address. */
  int (*mem_pack)(adxl_plugin_context_t *ctx, adxl_plugin_mem_t *mem, void *buf, size_t *len);
  void (*mem_dereg)(adxl_plugin_context_t *ctx, adxl_plugin_mem_t *mem);

  /* Connects to a peer's address over the first lane of `lanes` (a mask of
   * ADXL_PLUGIN_LANE_*) that reaches it, HCCS preferred; ERR_UNSUPPORTED when
   * none does. */
  int (*ep_create)(adxl_plugin_context_t *ctx, const void *address, size_t len, uint32_t lanes,
                   adxl_plugin_ep_t **ep);
  /* The lane the endpoint uses (one ADXL_PLUGIN_LANE_* bit). */
  uint32_t (*ep_lane)(adxl_plugin_ep_t *ep);
  void (*ep_destroy)(adxl_plugin_ep_t *ep, int force);
  /* Human-readable description of the transports the endpoint uses. */
  int (*ep_describe)(adxl_plugin_ep_t *ep, char *buf, size_t len);

  int (*rkey_unpack)(adxl_plugin_ep_t *ep, const void *packed, size_t len, adxl_plugin_rkey_t **rkey);
  void (*rkey_destroy)(adxl_plugin_rkey_t *rkey);
  /* The path transfers to the key's region take, a short name without
   * spaces (e.g. "cma", "mapped/memfd", "ucp"): a NUL-terminated string in
   * buf, cut to len bytes (ABI version 2). */
  int (*rkey_describe)(adxl_plugin_rkey_t *rkey, char *buf, size_t len);

  /* Queue a batch of gets or puts on ep, completed as one unit; count 0 is a
   * flush of what the endpoint has in flight (also completes wire-up). */
  int (*post)(adxl_plugin_ep_t *ep, int op, const adxl_plugin_iov_t *iov, size_t count, adxl_plugin_batch_t **batch);
  /* OK when complete, IN_PROGRESS, or the error that ended it. */
  int (*test)(adxl_plugin_batch_t *batch);
  void (*release)(adxl_plugin_batch_t *batch);

  /* Drive communication from the caller's thread (optional for latency);
   * returns non-zero when something happened. */
  int (*progress)(adxl_plugin_context_t *ctx);

  /* Optional (may be NULL; the engine reads it only when struct_size covers
   * it, so a table built before it existed still loads): post() with the
   * caller's deadline, deadline_ns a CLOCK_MONOTONIC time in nanoseconds
   * (0: none, exactly post()).  A plugin that provides it makes sure that
   * no byte of the batch lands at the destination after the deadline, even
   * bytes a transport delivers after ep_destroy(force) (a kernel socket
   * buffer flushed when a path returns); what it cannot place in time it
   * drops, and the batch then ends with an error.  The engine posts with
   * its call's deadline whenever it has one. */
  int (*post_by)(adxl_plugin_ep_t *ep, int op, const adxl_plugin_iov_t *iov, size_t count, uint64_t deadline_ns,
                 adxl_plugin_batch_t **batch);

  /* Optional (may be NULL; read only when struct_size covers it): the
   * target side of a fence.  Returns ADXL_PLUGIN_OK once what peers had
   * started towards this context before the call has ended here (every
   * request a peer made this side serve — data being received into this
   * side's memory, data being sent from it — has landed, been dropped or
   * failed) and a pass over the context's transports then finds nothing
   * more to do; ADXL_PLUGIN_IN_PROGRESS when deadline_ns (CLOCK_MONOTONIC,
   * nanoseconds) came first.  A truly one-sided transport has nothing to
   * wait for.  The engine calls it when a peer that timed out fences its
   * link (after force-closing its endpoint), before it acknowledges. */
  int (*drain)(adxl_plugin_context_t *ctx, uint64_t deadline_ns);

  /* Optional (may be NULL; read only when struct_size covers it): the start
   * of ep_destroy(force), and the one call that may run while other calls
   * on ep are still in progress (a post, from another thread).  A post that
   * moves its bytes inside the call (a same-node copy) stops at its next
   * chunk, at most a few MiB on, and returns, its batch ending CANCELED;
   * posts on ep from then on fail with CANCELED.  Returns at once, without
   * waiting for them.  The engine calls it when it cancels an endpoint,
   * waits for the calls in flight on ep to return, then calls
   * ep_destroy(ep, 1): without it, that wait lasts as long as the copy. */
  void (*ep_cancel)(adxl_plugin_ep_t *ep);
} adxl_plugin_ops_t;

/* Size of a table without post_by: the smallest struct_size the engine
 * accepts. */
#define ADXL_PLUGIN_OPS_MIN_SIZE offsetof(adxl_plugin_ops_t, post_by)

typedef const adxl_plugin_ops_t *(*adxl_plugin_get_ops_fn)(uint32_t engine_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* ADXL_PLUGIN_ADXL_PLUGIN_H_ */
