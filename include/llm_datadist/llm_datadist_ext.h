// Our extension of the vendor's LLM-DataDist C++ API (not in the vendor's
// headers, in the spirit of adxl/adxl_ext.h): what the reference's Python
// API offers and the vendor's C++ class llm_datadist::LlmDataDist does not:
// cache keys (CacheKey, CacheKeyByIdAndIndex, BlocksCacheKey),
// remote_accessible at registration, paged (blocks) caches, the layer-wise
// push, check_link_status, links by engine name, moving the listener, the
// reference's rank-table links, and host <-> device block swaps.  Free
// functions taking the LlmDataDist they act on; each forwards to the same
// cache layer the class's own calls use, so a cache registered here is
// pulled by PullKvBlocks and the other way round.
// The Python package llm_datadist is built on these and on the class.
//
// Contract, in short (docs/cache_layer.md, "Our extension"):
//  - Every call returns a status and never throws; a refused call logs one
//    ERROR line ("[llm_datadist ERROR pid] <call>: what was wrong") and
//    returns LLM_PARAM_INVALID (bad argument), LLM_KV_CACHE_NOT_EXIST (no
//    such cache or key), LLM_NOT_YET_LINK (no link), or LLM_FAILED (not
//    initialized, or finalized).
//  - Initialize the LlmDataDist with its own Initialize, or with
//    InitializeEngine (options already in the engine's terms); Finalize,
//    UnregisterKvCache and the class's other calls apply to both.
//  - Everything is thread-safe as the class is.
#ifndef LLM_DATADIST_LLM_DATADIST_EXT_H_
#define LLM_DATADIST_LLM_DATADIST_EXT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adxl/adxl_types.h"
#include "llm_datadist/llm_datadist.h"
#include "llm_datadist/llm_datadist_ext_layerwise.h"
#include "llm_datadist/llm_datadist_ext_types.h"

namespace llm_datadist {
namespace ext {

// ---- Life cycle ----

// Initialize with an engine name and engine options the caller translated
// itself (the Python package's init: EngineOptionKey below): local_engine
// "ip:port" listens there, a bare ip ("127.0.0.1") is client only.  No role
// rule (a Prompt may be client only, as in the reference's Python package).
// LLM_FAILED when already initialized; the engine's status otherwise.
ASCEND_FUNC_VISIBILITY Status InitializeEngine(LlmDataDist &datadist, const std::string &local_engine,
                                               const std::map<AscendString, AscendString> &engine_options);
// The deadline of every transfer, ms > 0 (default 1000): LLM_PARAM_INVALID else.
ASCEND_FUNC_VISIBILITY Status SetSyncTimeout(LlmDataDist &datadist, int32_t timeout_ms);
// Moves the listener to local_engine (a bare ip: stop listening): a new
// engine with engine_options, every cache re-registered under its id.
// LLM_EXIST_LINK while a link exists either way or a LinkRankTable is under
// way (it needs the listener where its peers reach it), LLM_LINK_BUSY while
// an operation is under way.  `what` names the caller's call in the ERROR line.
ASCEND_FUNC_VISIBILITY Status MoveListener(LlmDataDist &datadist, const std::string &local_engine,
                                           const std::map<AscendString, AscendString> &engine_options,
                                           const char *what = "MoveListener");

// ---- Caches ----

// One address per tensor (dimension 0: the batch).  cache_keys: empty, or
// one CacheKey per batch entry (peers pull an entry by its key).
// remote_accessible: absent = true for DEVICE, false for HOST; only
// remote-accessible caches are visible to peers.  `cache` gets the id.
ASCEND_FUNC_VISIBILITY Status RegisterCache(LlmDataDist &datadist, const CacheDesc &desc,
                                            const std::vector<uintptr_t> &addrs,
                                            const std::vector<CacheKey> &cache_keys,
                                            std::optional<bool> remote_accessible, Cache &cache);
// A paged cache (dimension 0: the block), optionally under blocks_cache_key.
ASCEND_FUNC_VISIBILITY Status RegisterBlocksCache(LlmDataDist &datadist, const CacheDesc &desc,
                                                  const std::vector<uintptr_t> &addrs,
                                                  const std::optional<BlocksCacheKey> &blocks_cache_key,
                                                  std::optional<bool> remote_accessible, Cache &cache);
// Withdraws a key RegisterCache registered (the entry stays addressable by
// CacheKeyByIdAndIndex); LLM_KV_CACHE_NOT_EXIST when no cache holds it.
ASCEND_FUNC_VISIBILITY Status RemoveCacheKey(LlmDataDist &datadist, const CacheKey &key);
// Addresses registered over all caches (at most kMaxRegisteredAddrs).
ASCEND_FUNC_VISIBILITY size_t RegisteredAddrCount(LlmDataDist &datadist);

// ---- Links ----

// As LinkLlmClusters / UnlinkLlmClusters, the clusters named by engine name
// (an empty name: none; UnlinkClusters without force then needs one).
ASCEND_FUNC_VISIBILITY Status LinkClusters(LlmDataDist &datadist, const std::vector<ClusterEngine> &clusters,
                                           std::vector<Status> &rets, int32_t timeout_ms);
ASCEND_FUNC_VISIBILITY Status UnlinkClusters(LlmDataDist &datadist, const std::vector<ClusterEngine> &clusters,
                                             std::vector<Status> &rets, int32_t timeout_ms, bool force);
// LLM_SUCCESS for a healthy link to remote_cluster_id; LLM_NOT_YET_LINK when
// there is none; LLM_FAILED when it failed (unlink and link again).
ASCEND_FUNC_VISIBILITY Status CheckLinkStatus(LlmDataDist &datadist, uint64_t remote_cluster_id);

// ---- Rank-table links (the reference Python package's link / unlink /
// query_register_mem_status) ----
//
// Every participant calls LinkRankTable with the same comm_name,
// cluster_rank_info and rank_table, each on its own LlmDataDist, and links
// to every other cluster of cluster_rank_info.
//  - comm_name: 1 to 127 characters (UTF-8).
//  - cluster_rank_info: {cluster id, rank id} of 2 to 4 clusters, in the
//    order given (the Python dict's), ranks strictly increasing, cluster ids
//    distinct, this cluster among them.
//  - rank_table: the reference's JSON, server_list[].device[] with rank_id
//    (a number or a string of one) and device_ip.  A rank's engine is
//    device_ip:device_port (else device_ip:port), or device_ip when written
//    "ip:port" / "[ipv6]:port".  Without a port (the vendor's rank tables,
//    as vLLM-Ascend passes them): device_ip on port
//    12000 + 4 * (crc32(comm_name) % 2000) + the rank's place in
//    cluster_rank_info (crc32: zlib's), and a cluster whose own rank has no
//    port and that does not listen there yet starts listening there
//    (MoveListener: only while it has no link, else LLM_EXIST_LINK).  A
//    LinkRankTable under way holds the listener until it returns: a second
//    one that would move it meanwhile (another comm's derived port) is
//    refused LLM_EXIST_LINK with one ERROR line, as are SetRole and
//    MoveListener; links that need no move run side by side.
//  - Waits up to 10 s from the start of the links (after the move) until
//    each peer listens (a TCP probe), and retries LinkClusters (3 s each)
//    while a peer answers LLM_LINK_FAILED or LLM_TIMEOUT until then.
//  - comm_id gets the comm's id (from 1, per LlmDataDist; Finalize forgets
//    every comm and starts again at 1).
//  - Refused with one ERROR line ("LinkRankTable: ..."), nothing moved or
//    linked: LLM_PARAM_INVALID for any rule above broken, a rank_table that
//    is not that JSON, a device without rank_id or device_ip, a
//    device_port (else port) that is no port (1-65535), or a rank of
//    cluster_rank_info with no device; LLM_FAILED when not initialized.
//  - A failed link (a peer's status other than the two retried ones, or
//    the deadline) unlinks, forced, the links it made to its peers (a link
//    a peer made to this cluster on its own stays) and returns that status
//    (LLM_LINK_FAILED at the deadline) with one ERROR line of the cache
//    layer (its retries write WARN lines); a listener it moved stays moved.
//    A peer that never listens by the deadline is not connected to; one
//    that listens but whose connect fails (a failed handshake, not an
//    engine) adds the engine's own ERROR line for each try.
//  - No lock of the cache layer is held while it waits or retries.
ASCEND_FUNC_VISIBILITY Status LinkRankTable(LlmDataDist &datadist, const std::string &comm_name,
                                            const std::vector<std::pair<uint64_t, uint32_t>> &cluster_rank_info,
                                            const std::string &rank_table, uint64_t &comm_id);
// Unlinks, forced, every peer of comm_id (a peer that unlinked first is no
// failure) and forgets the comm.  LLM_PARAM_INVALID with one ERROR line for
// an id LinkRankTable did not return (or already unlinked).
ASCEND_FUNC_VISIBILITY Status UnlinkComm(LlmDataDist &datadist, uint64_t comm_id);
// LLM_SUCCESS for a linked comm_id: registrations complete when
// RegisterCache / RegisterBlocksCache return (the reference's
// RegisterMemStatus.OK).  LLM_PARAM_INVALID with one ERROR line for an id
// that is not linked.
ASCEND_FUNC_VISIBILITY Status QueryRegisterMemStatus(LlmDataDist &datadist, uint64_t comm_id);

// ---- Transfers by key ----
// `dst` / `src` need only cache_id (a cache registered here).  size: bytes
// per tensor, -1 for the whole batch entry.

ASCEND_FUNC_VISIBILITY Status PullCache(LlmDataDist &datadist, const CacheKey &key, const Cache &dst,
                                        uint32_t batch_index = 0, int64_t size = -1,
                                        const LayerRangeArgs &layers = {});
ASCEND_FUNC_VISIBILITY Status PullCache(LlmDataDist &datadist, const CacheKeyByIdAndIndex &key, const Cache &dst,
                                        uint32_t batch_index = 0, int64_t size = -1,
                                        const LayerRangeArgs &layers = {});
// Remote blocks src_blocks[i] -> local blocks dst_blocks[i] of the paged dst.
ASCEND_FUNC_VISIBILITY Status PullBlocks(LlmDataDist &datadist, const BlocksCacheKey &key, const Cache &dst,
                                         const std::vector<uint64_t> &src_blocks,
                                         const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers = {});
// A remote non-paged batch entry cut into dst's blocks (src_blocks empty).
ASCEND_FUNC_VISIBILITY Status PullBlocks(LlmDataDist &datadist, const CacheKey &key, const Cache &dst,
                                         const std::vector<uint64_t> &src_blocks,
                                         const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers = {});
ASCEND_FUNC_VISIBILITY Status PullBlocks(LlmDataDist &datadist, const CacheKeyByIdAndIndex &key, const Cache &dst,
                                         const std::vector<uint64_t> &src_blocks,
                                         const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers = {});
ASCEND_FUNC_VISIBILITY Status PushCache(LlmDataDist &datadist, const CacheKeyByIdAndIndex &key, const Cache &src,
                                        uint32_t src_batch_index = 0, int64_t size = -1,
                                        const LayerRangeArgs &layers = {});
ASCEND_FUNC_VISIBILITY Status PushBlocks(LlmDataDist &datadist, const BlocksCacheKey &key, const Cache &src,
                                         const std::vector<uint64_t> &src_blocks,
                                         const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers = {});

// ---- Host <-> device swap ----

// Blocks between a host cache and a device cache of this process (the
// Python package's swap_blocks; the vendor's class has a private
// SwapKvBlocks with these arguments, called by its Python): src block
// src_blocks[i] -> dst block dst_blocks[i] of every tensor, for each list of
// dst_blocks_list (swap_blocks' {src: dst} is one list).  The Cache values are
// used as given (paged, description, addresses; cache_id only names them in
// lines): they need not be registered here.  Refused with one ERROR line:
// LLM_PARAM_INVALID unless both are paged (blocks) caches with valid
// descriptions and one address per tensor, of equal block size and
// num_tensors, every index in range, one HOST and the other DEVICE;
// LLM_FEATURE_NOT_ENABLED when no device runtime in this process can copy the
// device cache; LLM_FAILED when that runtime's copy failed (blocks before it
// are copied).  Empty lists: LLM_SUCCESS, nothing copied.  The runtime, by the
// device cache's memory: CUDA (a build with the toolkit, CUDA device memory),
// the host ACL emulation (its aclrtMalloc memory: host memory, memcpy), else a
// CUDA or ACL runtime the application loaded (cudaMemcpy / aclrtMemcpy).
// Exercised by tests: the emulation, no runtime at all, and CUDA device and
// managed memory on a GPU; the loaded-runtime path is written from those
// runtimes' calls, untested.
ASCEND_FUNC_VISIBILITY Status SwapKvBlocks(LlmDataDist &datadist, const Cache &src_cache, const Cache &dst_cache,
                                           const std::vector<uint64_t> &src_blocks,
                                           const std::vector<std::vector<uint64_t>> &dst_blocks_list);

// ---- Layer-wise push (llm_datadist_ext_layerwise.h) ----
// Checks everything first, then pushes each layer of src to every target as
// soon as synchronizer says it is ready, on a thread of the cluster; `task`
// reports.  dst_block_bytes 0: the source's block size.
ASCEND_FUNC_VISIBILITY Status TransferCacheAsync(LlmDataDist &datadist, const Cache &src,
                                                 std::shared_ptr<LayerSynchronizer> synchronizer,
                                                 const std::vector<TransferTarget> &targets,
                                                 const std::vector<uint64_t> &src_blocks,
                                                 const std::vector<uint64_t> &dst_blocks, uint64_t dst_block_bytes,
                                                 CacheTask &task);

// ---- The cache layer's tables ----

// Every status: the rows (name, value, description), then the other names
// of some values ("same as ..."); the vendor's names and values.
ASCEND_FUNC_VISIBILITY std::vector<adxl::StatusInfo> StatusTable();
// "LLM_SUCCESS", ...; "LLM_UNKNOWN_ERROR" for a value not in the table.
ASCEND_FUNC_VISIBILITY const char *StatusName(Status status);
// One ERROR line of the cache layer, for a call a binding refuses before it
// reaches the layer.
ASCEND_FUNC_VISIBILITY void LogRefusal(const char *message);
// Bytes per element; 0 for a value outside DataType.
ASCEND_FUNC_VISIBILITY size_t DataTypeSize(DataType type);
// The engine option an option key becomes (llm.LocalCommRes ->
// adxl.LocalCommRes, adxl.* unchanged, ...); std::nullopt for a key that is
// the cache layer's own or has no effect.  The one table Initialize uses.
ASCEND_FUNC_VISIBILITY std::optional<EngineKey> EngineOptionKey(const std::string &key);
// The values of llm.TransferBackend: "", "adxl" (links two-way), "hixl" (one-way).
ASCEND_FUNC_VISIBILITY std::vector<std::string> TransferBackends();

}  // namespace ext
}  // namespace llm_datadist

#endif  // LLM_DATADIST_LLM_DATADIST_EXT_H_
