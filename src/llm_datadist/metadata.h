// The cache layer's metadata (see src/llm_datadist/cache_manager.h,
// "Metadata exchange"): the cache table a cluster publishes through its
// engine, and its (de)serialization.  Parsing is bounded: a table received
// from a peer is untrusted input.
#ifndef LLM_DATADIST_SRC_METADATA_H_
#define LLM_DATADIST_SRC_METADATA_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache_types.h"

namespace llm_datadist::internal {

// The cache table travels as the engine's published metadata (adxl_ext.h
// PublishMetadata / GetPeerMetadata) under this name: linked peers receive
// it with the handshake and on every change.  The blob is the publisher's
// cluster id (u64) followed by SerializeRecords.
constexpr char kMetadataName[] = "llm_datadist.cache_table";

// One remote-accessible cache as published.
struct CacheRecord {
  int64_t cache_id = -1;
  bool paged = false;
  CacheDesc desc;
  std::vector<uintptr_t> addrs;
  std::vector<CacheKey> keys;  // key i -> batch index i
  std::optional<BlocksCacheKey> blocks_key;
};

std::vector<uint8_t> SerializeRecords(const std::vector<CacheRecord> &records);
// False when the bytes are not a well-formed table.  cluster_id fills the keys.
bool ParseRecords(const uint8_t *data, size_t len, uint64_t cluster_id, std::vector<CacheRecord> *out);

// The published blob of cluster `cluster_id`'s table.
std::string EncodeTable(uint64_t cluster_id, const std::vector<CacheRecord> &records);
// False when `blob` is not a well-formed table; *cluster_id: whose it is.
bool DecodeTable(const std::string &blob, uint64_t *cluster_id, std::vector<CacheRecord> *out);

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_SRC_METADATA_H_
