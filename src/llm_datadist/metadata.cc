#include "metadata.h"

#include <cstring>

namespace llm_datadist::internal {
namespace {

constexpr uint32_t kMaxDims = 32;
constexpr uint32_t kMaxItems = 1U << 20;

template <typename T>
void Put(std::vector<uint8_t> &out, T v) {
  const auto *p = reinterpret_cast<const uint8_t *>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

class Reader {
 public:
  Reader(const uint8_t *p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  bool Get(T *v) {
    if (n_ - off_ < sizeof(T)) return false;
    memcpy(v, p_ + off_, sizeof(T));
    off_ += sizeof(T);
    return true;
  }
  bool done() const { return off_ == n_; }

 private:
  const uint8_t *p_;
  size_t n_;
  size_t off_ = 0;
};

}  // namespace

std::vector<uint8_t> SerializeRecords(const std::vector<CacheRecord> &records) {
  std::vector<uint8_t> out;
  Put<uint32_t>(out, static_cast<uint32_t>(records.size()));
  for (const CacheRecord &r : records) {
    Put<int64_t>(out, r.cache_id);
    Put<uint8_t>(out, r.paged ? 1 : 0);
    Put<int32_t>(out, static_cast<int32_t>(r.desc.data_type));
    Put<int32_t>(out, static_cast<int32_t>(r.desc.placement));
    Put<uint32_t>(out, r.desc.num_tensors);
    Put<uint32_t>(out, static_cast<uint32_t>(r.desc.shape.size()));
    for (int64_t d : r.desc.shape) Put<int64_t>(out, d);
    Put<uint32_t>(out, static_cast<uint32_t>(r.addrs.size()));
    for (uintptr_t a : r.addrs) Put<uint64_t>(out, a);
    Put<uint32_t>(out, static_cast<uint32_t>(r.keys.size()));
    for (const CacheKey &k : r.keys) {
      Put<uint64_t>(out, k.req_id);
      Put<uint64_t>(out, k.model_id);
      Put<uint64_t>(out, k.prefix_id);
    }
    Put<uint8_t>(out, r.blocks_key ? 1 : 0);
    Put<uint64_t>(out, r.blocks_key ? r.blocks_key->model_id : 0);
  }
  return out;
}

bool ParseRecords(const uint8_t *data, size_t len, uint64_t cluster_id, std::vector<CacheRecord> *out) {
  Reader rd(data, len);
  uint32_t n = 0;
  if (!rd.Get(&n) || n > kMaxItems) return false;
  std::vector<CacheRecord> records;
  for (uint32_t i = 0; i < n; ++i) {
    CacheRecord r;
    uint8_t paged = 0, has_bk = 0;
    int32_t dt = 0, pl = 0;
    uint32_t ndims = 0, naddrs = 0, nkeys = 0;
    uint64_t bk_model = 0;
    if (!rd.Get(&r.cache_id) || !rd.Get(&paged) || !rd.Get(&dt) || !rd.Get(&pl) || !rd.Get(&r.desc.num_tensors) ||
        !rd.Get(&ndims) || ndims > kMaxDims) {
      return false;
    }
    r.paged = paged != 0;
    r.desc.data_type = static_cast<DataType>(dt);
    r.desc.placement = static_cast<Placement>(pl);
    r.desc.shape.resize(ndims);
    for (auto &d : r.desc.shape) {
      if (!rd.Get(&d)) return false;
    }
    if (!rd.Get(&naddrs) || naddrs != r.desc.num_tensors || naddrs > kMaxRegisteredAddrs) return false;
    r.addrs.resize(naddrs);
    for (auto &a : r.addrs) {
      uint64_t v = 0;
      if (!rd.Get(&v)) return false;
      a = static_cast<uintptr_t>(v);
    }
    if (!rd.Get(&nkeys) || nkeys > kMaxItems) return false;
    for (uint32_t k = 0; k < nkeys; ++k) {
      CacheKey key;
      key.cluster_id = cluster_id;
      if (!rd.Get(&key.req_id) || !rd.Get(&key.model_id) || !rd.Get(&key.prefix_id)) return false;
      r.keys.push_back(key);
    }
    if (!rd.Get(&has_bk) || !rd.Get(&bk_model)) return false;
    if (has_bk != 0) r.blocks_key = BlocksCacheKey{cluster_id, bk_model};
    if (TensorBytes(r.desc) == 0) return false;
    records.push_back(std::move(r));
  }
  if (!rd.done()) return false;
  *out = std::move(records);
  return true;
}

std::string EncodeTable(uint64_t cluster_id, const std::vector<CacheRecord> &records) {
  std::vector<uint8_t> out;
  Put<uint64_t>(out, cluster_id);
  const std::vector<uint8_t> table = SerializeRecords(records);
  out.insert(out.end(), table.begin(), table.end());
  return std::string(out.begin(), out.end());
}

bool DecodeTable(const std::string &blob, uint64_t *cluster_id, std::vector<CacheRecord> *out) {
  if (blob.size() < sizeof(uint64_t)) return false;
  memcpy(cluster_id, blob.data(), sizeof(uint64_t));
  const auto *p = reinterpret_cast<const uint8_t *>(blob.data());
  return ParseRecords(p + sizeof(uint64_t), blob.size() - sizeof(uint64_t), *cluster_id, out);
}

}  // namespace llm_datadist::internal
