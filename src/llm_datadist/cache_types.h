// LLM-DataDist cache layer: value types (cache descriptions, keys, caches,
// statuses).  See cache_manager.h for the manager that registers and moves
// caches, and docs/contract.md §10 for the rules.
//
// Contract of the types here: plain values, copyable, no resources.  A Cache
// is a description of registered memory (id, description, addresses); the
// memory itself belongs to the caller.
#ifndef LLM_DATADIST_CACHE_TYPES_H_
#define LLM_DATADIST_CACHE_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "adxl/adxl_types.h"
#include "llm_datadist/llm_datadist_ext_types.h"

namespace llm_datadist::internal {

// Statuses: the one table, X(name, value, description), and the other names
// of some of its values, X(alias, name).  The constants below, kStatusTable,
// kStatusAliases, StatusName and the Python package's LLMStatusCode all come
// from them.
//
// Names and values are the vendor's: every ge::LLM_* code of its
// llm_error_codes.h (0x5010B0xx, of which its llm_datadist.h re-declares
// a subset in namespace llm_datadist), ge::SUCCESS / ge::FAILED, and the two
// ACL runtime codes its Python package reports (LLM_DEVICE_MEM_ERROR,
// LLM_SUSPECT_REMOTE_ERROR).  tests/llm_datadist/status_table_test.cc pins
// this table to include/llm_datadist/llm_datadist.h and llm_error_codes.h.
// LLM_UNSUPPORTED and LLM_RESOURCE_EXHAUSTED, this project's earlier names,
// stay as aliases.  Engine statuses (adxl::*) never pass through unchanged:
// FromEngine() maps them.
using Status = uint32_t;
#define LLM_DATADIST_STATUS_TABLE(X)                                                                          \
  X(LLM_SUCCESS, 0x0U, "success")                                                                             \
  X(LLM_FAILED, 0xFFFFFFFFU, "not initialized, or the engine failed")                                         \
  X(LLM_WAIT_PROC_TIMEOUT, 0x5010B001U, "waiting for a process timed out")                                   \
  X(LLM_KV_CACHE_NOT_EXIST, 0x5010B002U, "no such cache or key (local or remote)")                            \
  X(LLM_REPEAT_REQUEST, 0x5010B003U, "request repeated")                                                      \
  X(LLM_REQUEST_ALREADY_COMPLETED, 0x5010B004U, "request already completed")                                  \
  X(LLM_PARAM_INVALID, 0x5010B005U, "invalid argument")                                                       \
  X(LLM_ENGINE_FINALIZED, 0x5010B006U, "engine finalized")                                                    \
  X(LLM_NOT_YET_LINK, 0x5010B007U, "cluster not linked")                                                      \
  X(LLM_ALREADY_LINK, 0x5010B008U, "cluster already linked")                                                  \
  X(LLM_LINK_FAILED, 0x5010B009U, "linking failed")                                                           \
  X(LLM_UNLINK_FAILED, 0x5010B00AU, "unlinking failed")                                                       \
  X(LLM_NOTIFY_PROMPT_UNLINK_FAILED, 0x5010B00BU, "telling the prompt about an unlink failed")                \
  X(LLM_CLUSTER_NUM_EXCEED_LIMIT, 0x5010B00CU, "too many clusters")                                           \
  X(LLM_PROCESSING_LINK, 0x5010B00DU, "a link or unlink of this cluster is under way")                        \
  X(LLM_DEVICE_OUT_OF_MEMORY, 0x5010B00EU, "device memory exhausted")                                         \
  X(LLM_PREFIX_ALREADY_EXIST, 0x5010B00FU, "prefix already exists")                                           \
  X(LLM_PREFIX_NOT_EXIST, 0x5010B010U, "no such prefix")                                                      \
  X(LLM_SEQ_LEN_OVER_LIMIT, 0x5010B011U, "sequence length over the limit")                                    \
  X(LLM_NO_FREE_BLOCK, 0x5010B012U, "no free block")                                                          \
  X(LLM_BLOCKS_OUT_OF_MEMORY, 0x5010B013U, "blocks out of memory")                                            \
  X(LLM_CACHE_INCOMPATIBLE, 0x5010B014U, "caches incompatible")                                               \
  X(LLM_CACHE_KEY_ALREADY_EXIST, 0x5010B015U, "key registered twice")                                         \
  X(LLM_COPY_CACHE_FAILED, 0x5010B016U, "local cache copy failed")                                            \
  X(LLM_CACHE_ID_ALREADY_EXIST, 0x5010B017U, "cache id already exists")                                       \
  X(LLM_EXIST_LINK, 0x5010B018U, "a link exists (register remote-accessible caches or switch role first)")   \
  X(LLM_FEATURE_NOT_ENABLED, 0x5010B019U, "not supported here (e.g. device memory without a device runtime)") \
  X(LLM_TIMEOUT, 0x5010B01AU, "timed out")                                                                    \
  X(LLM_LINK_BUSY, 0x5010B01BU, "link busy")                                                                  \
  X(LLM_OUT_OF_MEMORY, 0x5010B01CU, "a limit is reached (240 addresses, metadata full, out of memory)")      \
  X(LLM_DEVICE_MEM_ERROR, 507053U, "device memory error (ACL runtime code)")                                  \
  X(LLM_SUSPECT_REMOTE_ERROR, 507057U, "suspected remote error (ACL runtime code)")
#define LLM_DATADIST_STATUS_ALIASES(X)              \
  X(LLM_UNSUPPORTED, LLM_FEATURE_NOT_ENABLED)       \
  X(LLM_RESOURCE_EXHAUSTED, LLM_OUT_OF_MEMORY)

// The values of the option llm.TransferBackend (Initialize's, init()'s):
// the vendor's backend names, "" and "adxl" its default (links two-way),
// "hixl" its HIXL backend (links one-way).  The Python package checks
// against this list too (_native.TRANSFER_BACKENDS).
inline constexpr const char *kTransferBackends[] = {"", "adxl", "hixl"};
inline constexpr char kOneWayBackend[] = "hixl";
bool IsTransferBackend(const std::string &value);

#define LLM_DATADIST_STATUS_CONSTANT_(name, value, description) constexpr Status name = value;
#define LLM_DATADIST_STATUS_ALIAS_(alias, name) constexpr Status alias = name;
LLM_DATADIST_STATUS_TABLE(LLM_DATADIST_STATUS_CONSTANT_)
LLM_DATADIST_STATUS_ALIASES(LLM_DATADIST_STATUS_ALIAS_)
#undef LLM_DATADIST_STATUS_CONSTANT_
#undef LLM_DATADIST_STATUS_ALIAS_

using adxl::StatusInfo;
#define LLM_DATADIST_STATUS_INFO_(name, value, description) StatusInfo{#name, value, description},
#define LLM_DATADIST_STATUS_ALIAS_INFO_(alias, name) StatusInfo{#alias, name, "same as " #name},
inline constexpr StatusInfo kStatusTable[] = {LLM_DATADIST_STATUS_TABLE(LLM_DATADIST_STATUS_INFO_)};
inline constexpr StatusInfo kStatusAliases[] = {LLM_DATADIST_STATUS_ALIASES(LLM_DATADIST_STATUS_ALIAS_INFO_)};
#undef LLM_DATADIST_STATUS_INFO_
#undef LLM_DATADIST_STATUS_ALIAS_INFO_

// The LLM status that means what an engine status (adxl::Status) means:
// PARAM_INVALID -> LLM_PARAM_INVALID, TIMEOUT -> LLM_TIMEOUT, NOT_CONNECTED
// -> LLM_NOT_YET_LINK, ALREADY_CONNECTED -> LLM_ALREADY_LINK, UNSUPPORTED ->
// LLM_FEATURE_NOT_ENABLED, RESOURCE_EXHAUSTED -> LLM_OUT_OF_MEMORY, anything
// else that is not SUCCESS -> LLM_FAILED.  The engine's and the vendor's
// LLM codes are different numbers, so every engine result goes through here.
Status FromEngine(adxl::Status engine_status);

// The name of a status in kStatusTable ("LLM_SUCCESS", "LLM_OUT_OF_MEMORY",
// ...); "LLM_UNKNOWN_ERROR" for a value not in it.
const char *StatusName(Status status);

// Writes `message` as one ERROR line of this layer ("[llm_datadist ERROR
// pid] message"): the Python package's own argument checks refuse a call
// before it reaches this layer, and each refusal still gets its one line.
void LogRefusal(const char *message);

// The value types are public, our extension's
// (include/llm_datadist/llm_datadist_ext_types.h): the cache layer uses them
// as they are, so the extension's calls pass them through unconverted.
using ext::BlocksCacheKey;
using ext::Cache;
using ext::CacheDesc;
using ext::CacheKey;
using ext::CacheKeyByIdAndIndex;
using ext::DataType;
using ext::DataTypeInfo;
using ext::kDataTypeTable;
using ext::kMaxRegisteredAddrs;
using ext::LayerRange;
using ext::LayerRangeArgs;
using ext::Placement;
// A remote cluster: its id and the engine name it listens on ("ip:port").
using ClusterInfo = ext::ClusterEngine;

// Bytes per element; 0 for a value outside DataType.
size_t DataTypeSize(DataType type);

// Bytes of one tensor (product of shape times element size); 0 when the
// description is invalid (empty shape, a dimension <= 0, overflow, bad type).
uint64_t TensorBytes(const CacheDesc &desc);

// LLM_SUCCESS when every index of `blocks` is below `count`; else
// LLM_PARAM_INVALID and one ERROR line, "<what>: <side> block B out of range
// (N blocks)" (side: "source" or "destination").
Status CheckBlockRange(const char *what, const char *side, const std::vector<uint64_t> &blocks, uint64_t count);

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_CACHE_TYPES_H_
