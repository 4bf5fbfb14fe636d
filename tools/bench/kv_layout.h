// KV-cache layouts for `--workload kv`: what a model's KV cache looks like in
// a serving framework's block pool, and the descriptor lists that move keys
// of it between two such pools.
//
// The pool (one per process, the engine buffer) is laid out as serving
// frameworks lay out paged KV caches: for every layer, for every block kind
// of that layer, one region of `pool_blocks` slots of that kind's block size;
// block id b of a key is slot b in every one of the key's (layer, kind)
// regions.  A key of N tokens holds ceil(N / tokens_per_block) block ids,
// taken from a block table: ids drawn from a seeded shuffle of the pool, so
// that consecutive blocks of a key are not adjacent in memory (the gaps a
// running server's allocator leaves).  The initiator and the target draw
// their tables independently (a prefill's block ids are not its decode's).
// A "window" kind (sliding-window attention) keeps only its last block per
// key: one block per key whatever N is.
#ifndef ADXL_TOOLS_BENCH_KV_LAYOUT_H_
#define ADXL_TOOLS_BENCH_KV_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bench {

struct KvBlockKind {
  std::string name;
  uint64_t bytes = 0;       // one block of tokens_per_block tokens of one layer
  int layer_step = 1;       // present on layers first_layer, first_layer+step, ...
  int first_layer = 0;
  bool window = false;      // sliding window: only the key's last block is moved
};

struct KvModel {
  std::string name;
  int layers = 0;
  int tokens_per_block = 128;
  std::vector<KvBlockKind> kinds;
  std::string source;  // where the numbers come from, for the report
  bool HasKind(const KvBlockKind &k, int layer) const {
    return layer >= k.first_layer && (layer - k.first_layer) % k.layer_step == 0;
  }
};

// "deepseek-r1", "glm5", "deepseek-v4", or a JSON file (kv_layout.cc's
// header comment gives the format).  False with *why on an unknown name or a
// bad file.
bool LoadKvModel(const std::string &name_or_file, KvModel *out, std::string *why);
// The built-in model names, for --help and errors.
std::string BuiltinKvModels();

// One descriptor: offsets from the initiator's and the target's buffer base.
struct Segment {
  uint64_t local = 0;
  uint64_t remote = 0;
  uint64_t len = 0;
};
using SegmentCall = std::vector<Segment>;  // one transfer call
struct KeyTransfer {
  std::vector<SegmentCall> calls;  // one per key, or one per layer (KvCall)
};

// How a key is handed to the transfer API: all its blocks in one call, or
// one call per layer (layer-wise transfer, overlapped with compute).
enum class KvCall { kKey, kLayer };

struct KvPlanSettings {
  int tokens = 512;          // tokens per key
  int keys = 2;              // keys per step
  int pool_factor = 2;       // pool slots per block a step moves: the rest are gaps
  KvCall call = KvCall::kKey;
  uint64_t seed = 1;         // block-table shuffle
};

// One step's worth of keys, and the pool it needs.
struct KvPlan {
  std::vector<KeyTransfer> keys;
  uint64_t pool_bytes = 0;    // size of each side's pool (engine buffer)
  uint64_t bytes = 0;         // moved per step
  size_t descriptors = 0;     // per step
  size_t pool_blocks = 0;     // slots per (layer, kind) region
  size_t blocks_per_key = 0;  // block ids a key holds
  uint64_t average_block() const { return descriptors == 0 ? 0 : bytes / descriptors; }
  size_t calls() const;
};

// The pool size a model and settings need (bytes).  False with *why on an
// overflow or an empty model.
bool KvPoolBytes(const KvModel &m, const KvPlanSettings &s, uint64_t *bytes, std::string *why);
// The kv plan: per key, per layer, per kind, per block of the key's block
// table (initiator's table for local, target's for remote).
KvPlan BuildKvPlan(const KvModel &m, const KvPlanSettings &s);
// The reference for the kv plan: the same keys, calls and descriptors per
// call, every descriptor the plan's average block size, contiguous and at the
// same offset on both sides (the uniform benchmark's shape).
KvPlan BuildUniformPlan(const KvPlan &kv);

// "61 layers x (rope 16K + latent 128K) per 128 tokens".
std::string DescribeKvModel(const KvModel &m);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_KV_LAYOUT_H_
