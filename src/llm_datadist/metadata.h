// The cache layer's metadata window (see include/llm_datadist/cache_manager.h,
// "Metadata exchange"): its layout, its well-known address, the RAII mapping
// a holder publishes into, and the (de)serialization of the cache table.
// Parsing is bounded: a payload read from a peer is untrusted input.
#ifndef LLM_DATADIST_SRC_METADATA_H_
#define LLM_DATADIST_SRC_METADATA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llm_datadist/cache_types.h"

namespace llm_datadist {

constexpr size_t kWindowSize = 256 * 1024;
constexpr size_t kHeaderSize = 128;
constexpr uint32_t kMetadataVersion = 1;
constexpr int kSlotProbes = 16;

struct WindowHeader {
  char magic[8];  // "LLMDDMD1"
  uint32_t version;
  uint32_t header_size;
  uint64_t seq;  // odd while the holder writes
  uint64_t cluster_id;
  uint64_t payload_len;
  char engine_name[88];  // NUL-terminated
};
static_assert(sizeof(WindowHeader) == kHeaderSize, "window header is 128 bytes");

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

// Address of the window of `engine_name`, probe p (0 .. kSlotProbes-1).
uintptr_t WindowAddress(const std::string &engine_name, int probe);
// True when the header is a valid window of `engine_name`.
bool HeaderMatches(const WindowHeader &h, const std::string &engine_name);

// The holder's window: mapped at the first free probe address, unmapped on
// destruction.  Publish() writes a new payload seqlock-style.
class MetadataWindow {
 public:
  // nullptr (and *why) when no probe address is free or the name is too long.
  static std::unique_ptr<MetadataWindow> Create(const std::string &engine_name, uint64_t cluster_id,
                                                std::string *why);
  ~MetadataWindow();
  MetadataWindow(const MetadataWindow &) = delete;
  MetadataWindow &operator=(const MetadataWindow &) = delete;

  uintptr_t addr() const { return reinterpret_cast<uintptr_t>(base_); }
  size_t size() const { return kWindowSize; }
  // False when the payload does not fit.
  bool Publish(const std::vector<uint8_t> &payload);

 private:
  explicit MetadataWindow(void *base) : base_(base) {}
  void *base_;
};

}  // namespace llm_datadist

#endif  // LLM_DATADIST_SRC_METADATA_H_
