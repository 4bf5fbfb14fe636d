// Extensions of this ADXL implementation (not in the vendor's API): what a
// link runs on, the path to each of the peer's regions, and what it moved;
// metadata an engine publishes to its peers; per-link statistics and their
// Prometheus text rendering.
#ifndef ADXL_ADXL_EXT_H_
#define ADXL_ADXL_EXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"

namespace adxl {
namespace ext {

struct LinkInfo {
  std::string lane;        // "hccs" (same node) or "rdma" (network)
  // The plugin's transports for this link, e.g. "cma/memory" (same node) or
  // "am:tcp/lo" (network lane: "am:" active messages or "rma:" UCP put/get,
  // "am*3:" for three connections, "am:tcp/eth0+tcp/eth1" over two paths).
  std::string transports;
  bool same_node = false;  // the peer reported the same node identity
  bool failed = false;     // a transfer timed out or the peer died; Disconnect + Connect to reuse
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t ops = 0;  // plugin operations posted (descriptors after splitting)
};

// SUCCESS and *info for an existing link of `engine` to `remote_engine`;
// NOT_CONNECTED when there is none; FAILED when the engine is not initialized.
ASCEND_FUNC_VISIBILITY Status GetLinkInfo(AdxlEngine &engine, const AscendString &remote_engine, LinkInfo &info);

// One region the peer of a link registered, and the path this engine's
// transfers to it take.  path: "mapped/<memfd|shm|hugetlbfs|file>" (same
// node, memory the peer shares as a file: mapped here, copied with memcpy),
// "cma" (same node, private memory: batched cross-memory system calls),
// "ucp" (UCX one-sided operations or active messages: the network lane, and
// device memory), "unreachable" (device memory this side cannot move).
struct LinkRegion {
  uint64_t addr = 0;
  uint64_t len = 0;
  MemType mem_type = MEM_HOST;
  std::string path;
};

// SUCCESS and the peer's regions, in address order, for an existing link of
// `engine` to `remote_engine` (the regions this engine knows of now; a
// registration the peer made since is learnt on the first transfer naming
// it).  NOT_CONNECTED when there is none; FAILED when the engine is not
// initialized.
ASCEND_FUNC_VISIBILITY Status GetLinkRegions(AdxlEngine &engine, const AscendString &remote_engine,
                                             std::vector<LinkRegion> &regions);

// Published metadata: a small named, versioned blob (a cache table, a model
// description) that an engine publishes and that every engine linked to it
// (having called Connect to it) receives with the handshake and again on
// every change, over the control channel, without asking.
//
// PublishMetadata creates or replaces the blob `name` (1..256 bytes) of
// `engine`: up to 1 MiB per blob, 64 names and 2 MiB in all
// (RESOURCE_EXHAUSTED past them, PARAM_INVALID for a name or blob over its
// limit).  Each call makes a new version; linked peers get it without the
// call waiting for them.
ASCEND_FUNC_VISIBILITY Status PublishMetadata(AdxlEngine &engine, const AscendString &name, const std::string &blob);
// AwaitMetadataDelivered returns once every engine linked to `engine` holds
// the version of `name` published last (or a later one), so that a peer
// reading it afterwards sees what was published before the call: call it
// after a PublishMetadata that takes something away.  It waits at most the
// engine's deregistration wait (1 s) for each peer; a peer that does not
// confirm by then has its link closed, as one that does not confirm a
// DeregisterMem.  PARAM_INVALID for a name never published, FAILED before
// Initialize, and FAILED when Finalize ends the wait.
ASCEND_FUNC_VISIBILITY Status AwaitMetadataDelivered(AdxlEngine &engine, const AscendString &name);
// The latest version of `name` that `remote_engine` published, as this
// engine received it: *version 0 and an empty blob when it never published
// that name.  With refresh_timeout_ms > 0 the owner is asked for its
// current entries first (TIMEOUT when it does not answer in time), so a
// change the owner made before this call is seen even if its push has not
// arrived yet.  NOT_CONNECTED without a link, FAILED for a failed link.
ASCEND_FUNC_VISIBILITY Status GetPeerMetadata(AdxlEngine &engine, const AscendString &remote_engine,
                                              const AscendString &name, std::string &blob, uint64_t &version,
                                              int32_t refresh_timeout_ms = 0);

// ---- Per-link statistics.
// Counted on the side that called Connect, per peer and direction, lock-free
// on the data path.  A transfer is counted once, when it ends: TransferSync
// on return, TransferAsync when its final status is reported (its latency
// then runs from submission to that report).  Only a transfer that ended
// SUCCESS adds to transfers, descriptors (the caller's TransferOpDescs),
// bytes and latency; one that ended TIMEOUT adds to timeouts, any other
// failure after the link was found (a range the peer never registered, the
// transport failing, the link disconnected under an async request) to
// errors.  Calls refused before a link was found (invalid arguments, no
// link, a link that failed earlier) are not counted: there is no link.  Counts continue across
// Disconnect and Connect to the same peer and never go backwards.

// Latency of whole transfers in fixed log2 buckets: buckets[i] counts
// transfers that took more than 2^(i-1) and at most 2^i microseconds
// (buckets[0]: at most 1 us); the last bucket counts everything above
// 2^(size-2) us.  Percentiles are interpolated inside their bucket and never
// exceed max_ns.
struct LatencyStats {
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  uint64_t p50_ns = 0;
  uint64_t p99_ns = 0;
  uint64_t max_ns = 0;
  std::vector<uint64_t> buckets;
};

struct DirectionStats {
  uint64_t transfers = 0;
  uint64_t descriptors = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;
  uint64_t timeouts = 0;
  LatencyStats latency;
};

// One phase of Connect, timed when it completed: count of completions,
// the last, total and longest duration.
struct ConnectPhaseStats {
  uint64_t count = 0;
  uint64_t last_ns = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
};

struct LinkStats {
  std::string remote;   // the peer ("" for the engine totals)
  bool linked = false;  // a connected link to it exists now
  uint64_t connects = 0;          // Connects (and AutoConnects) that succeeded
  uint64_t connect_failures = 0;  // and that failed after the name was valid
  ConnectPhaseStats tcp_connect;  // the control connection's TCP connect
  ConnectPhaseStats handshake;    // hello, authentication and the peer's region table
  ConnectPhaseStats wireup;       // transport endpoint, the peer's keys, the first flush
  DirectionStats read;
  DirectionStats write;
};

// SUCCESS and *stats for a peer this engine has linked to (now or before);
// NOT_CONNECTED when it never did; FAILED when the engine is not initialized.
ASCEND_FUNC_VISIBILITY Status GetLinkStats(AdxlEngine &engine, const AscendString &remote_engine, LinkStats &stats);
// Every peer's statistics (by name), and in *totals (when given) the sum
// over all of them plus peers whose counters the engine dropped (it keeps
// 1024 peers without a link); totals never go backwards.  FAILED when the
// engine is not initialized.
ASCEND_FUNC_VISIBILITY Status GetAllLinkStats(AdxlEngine &engine, std::vector<LinkStats> &stats,
                                              LinkStats *totals = nullptr);
// The same counters as Prometheus text exposition (format 0.0.4), metric
// names prefixed `adxl_`, labels `peer` and `op` ("read" / "write"), latency
// as the histogram adxl_transfer_latency_seconds, engine totals as
// adxl_engine_*; replaces *text.  FAILED when the engine is not initialized.
ASCEND_FUNC_VISIBILITY Status RenderPrometheus(AdxlEngine &engine, std::string &text);

}  // namespace ext
}  // namespace adxl

#endif  // ADXL_ADXL_EXT_H_
