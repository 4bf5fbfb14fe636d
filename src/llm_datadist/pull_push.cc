// CacheManager's pulls and pushes (cache_manager.h Pull*, Push*): each call
// finds the local cache and the link (LocalCaches, LinkTable), the remote cache in the
// peer's table (the link's lock), plans the byte moves and runs them as one
// engine TransferSync with no lock held.
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cache_manager.h"
#include "cache_manager_impl.h"
#include "common/log.h"
#include "metadata.h"

namespace llm_datadist::internal {
namespace {

// What a transfer needs to know about either side.
struct SideView {
  const CacheDesc *desc;
  const std::vector<uintptr_t> *addrs;
  bool paged;
};

// Tensor pairs (src index, dst index) selected by the layer ranges.
Status ResolveLayers(const char *what, const CacheDesc &src, const CacheDesc &dst, const LayerRangeArgs &layers,
                     std::vector<std::pair<uint32_t, uint32_t>> *pairs) {
  if (src.data_type != dst.data_type) {
    ADXL_ERROR("%s: data types differ (source %d, destination %d)", what, static_cast<int>(src.data_type),
             static_cast<int>(dst.data_type));
    return LLM_PARAM_INVALID;
  }
  const uint32_t t = layers.tensor_num_per_layer;
  if (!layers.src_layer_range && !layers.dst_layer_range) {
    if (src.num_tensors != dst.num_tensors) {
      ADXL_ERROR("%s: source has %u tensors, destination %u (give layer ranges to move a part)", what, src.num_tensors,
               dst.num_tensors);
      return LLM_PARAM_INVALID;
    }
    for (uint32_t i = 0; i < src.num_tensors; ++i) pairs->emplace_back(i, i);
    return LLM_SUCCESS;
  }
  if (t == 0 || src.num_tensors % t != 0 || dst.num_tensors % t != 0) {
    ADXL_ERROR("%s: tensor_num_per_layer %u does not divide the tensor counts (%u, %u)", what, t, src.num_tensors,
             dst.num_tensors);
    return LLM_PARAM_INVALID;
  }
  LayerRange s = layers.src_layer_range.value_or(LayerRange{0, src.num_tensors / t});
  LayerRange d = layers.dst_layer_range.value_or(LayerRange{0, dst.num_tensors / t});
  if (s.begin >= s.end || s.end > src.num_tensors / t || d.begin >= d.end || d.end > dst.num_tensors / t ||
      s.end - s.begin != d.end - d.begin) {
    ADXL_ERROR("%s: layer ranges [%u,%u) -> [%u,%u) are empty, out of range (%u, %u layers) or of different length",
             what, s.begin, s.end, d.begin, d.end, src.num_tensors / t, dst.num_tensors / t);
    return LLM_PARAM_INVALID;
  }
  for (uint32_t l = 0; l < s.end - s.begin; ++l) {
    for (uint32_t j = 0; j < t; ++j) pairs->emplace_back((s.begin + l) * t + j, (d.begin + l) * t + j);
  }
  return LLM_SUCCESS;
}

// One pull / push: the local cache and the link, each under its part's lock
// (cache_manager_impl.h), then the metadata refresh (the link's lock) and
// the transfer with no lock held.
Status PlanAndRun(
    CacheManager::Impl *impl, const char *what, uint64_t remote_cluster, const Cache &local_in, bool local_is_dst,
    const std::function<Status(const std::vector<CacheRecord> &, const CacheRecord **, uint64_t *, std::string *)>
        &find,
    const std::function<Status(const SideView &, const SideView &, uint64_t, std::vector<adxl::TransferOpDesc> *)>
        &build,
    adxl::TransferOp op) ADXL_EXCLUDES(impl->mu) {
  impl->EnsureReverse(what, remote_cluster);  // two-way links: reach a cluster that linked to us
  OpContext ctx;
  Cache local;
  std::shared_ptr<RemoteLink> link;
  OpGuard guard(impl);
  {
    Status s = impl->Begin(what, &ctx, &guard);
    if (s != LLM_SUCCESS) return s;
    s = impl->LocalAndLink(what, ctx, local_in, remote_cluster, &local, &link);
    if (s != LLM_SUCCESS) return s;
  }
  std::shared_ptr<const std::vector<CacheRecord>> records;
  const CacheRecord *rec = nullptr;
  uint64_t index = 0;
  Status s = LLM_SUCCESS;
  // The table as last pushed; once more after asking the peer when what we
  // look for is not in it (refresh on miss).
  std::string why;
  for (bool refresh : {false, true}) {
    s = RefreshLink(ctx, *link, refresh, &records);
    if (s != LLM_SUCCESS) {
      ADXL_ERROR("%s: reading the metadata of cluster %lu failed: status %u", what,
                 static_cast<unsigned long>(remote_cluster), s);
      return s;
    }
    s = find(*records, &rec, &index, &why);
    if (s == LLM_SUCCESS) break;
  }
  if (s != LLM_SUCCESS) {
    ADXL_ERROR("%s: %s", what, why.c_str());
    return s;
  }
  std::vector<adxl::TransferOpDesc> ops;
  SideView l{&local.cache_desc, &local.tensor_addrs, local.paged};
  SideView r{&rec->desc, &rec->addrs, rec->paged};
  s = local_is_dst ? build(r, l, index, &ops) : build(l, r, index, &ops);
  if (s != LLM_SUCCESS) return s;
  // local_is_dst: READ (remote -> local); descriptors are (local, remote).
  s = ctx.engine->TransferSync(link->engine.c_str(), op, ops, ctx.timeout_ms);
  if (s != adxl::SUCCESS) ADXL_ERROR("%s: transfer with %s failed: engine status %u", what, link->engine.c_str(), s);
  return FromEngine(s);
}

}  // namespace

namespace {

// Batch entry -> batch entry, tensor by tensor.
auto CacheToCache(const char *what, const LayerRangeArgs &layers, uint64_t local_index, int64_t size,
                  bool local_is_dst) {
  return [=](const SideView &src, const SideView &dst, uint64_t remote_index,
             std::vector<adxl::TransferOpDesc> *ops) -> Status {
    if (src.paged || dst.paged) {
      ADXL_ERROR("%s: both caches must be non-paged (use the *Blocks calls for paged caches)", what);
      return LLM_PARAM_INVALID;
    }
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    Status s = ResolveLayers(what, *src.desc, *dst.desc, layers, &pairs);
    if (s != LLM_SUCCESS) return s;
    const uint64_t se = EntryBytes(*src.desc), de = EntryBytes(*dst.desc);
    const uint64_t si = local_is_dst ? remote_index : local_index;
    const uint64_t di = local_is_dst ? local_index : remote_index;
    if (si >= static_cast<uint64_t>(src.desc->shape[0]) || di >= static_cast<uint64_t>(dst.desc->shape[0])) {
      ADXL_ERROR("%s: batch index %lu -> %lu out of range (batches %ld, %ld)", what, static_cast<unsigned long>(si),
               static_cast<unsigned long>(di), static_cast<long>(src.desc->shape[0]),
               static_cast<long>(dst.desc->shape[0]));
      return LLM_PARAM_INVALID;
    }
    uint64_t len = se;
    if (size == -1) {
      if (se != de) {
        ADXL_ERROR("%s: batch entries differ (%lu and %lu bytes); give a size", what, static_cast<unsigned long>(se),
                 static_cast<unsigned long>(de));
        return LLM_PARAM_INVALID;
      }
    } else if (size <= 0 || static_cast<uint64_t>(size) > se || static_cast<uint64_t>(size) > de) {
      ADXL_ERROR("%s: size %ld is not in (0, %lu]", what, static_cast<long>(size),
               static_cast<unsigned long>(std::min(se, de)));
      return LLM_PARAM_INVALID;
    } else {
      len = static_cast<uint64_t>(size);
    }
    for (auto [a, b] : pairs) {
      uintptr_t s_addr = (*src.addrs)[a] + si * se, d_addr = (*dst.addrs)[b] + di * de;
      if (local_is_dst) {
        AddOp(ops, d_addr, s_addr, len);
      } else {
        AddOp(ops, s_addr, d_addr, len);
      }
    }
    return LLM_SUCCESS;
  };
}

// Blocks -> blocks (src_blocks non-empty), or a batch entry -> blocks (src_blocks empty).
auto ToBlocks(const char *what, const LayerRangeArgs &layers, std::vector<uint64_t> src_blocks,
              std::vector<uint64_t> dst_blocks, bool local_is_dst) {
  return [=](const SideView &src, const SideView &dst, uint64_t remote_index,
             std::vector<adxl::TransferOpDesc> *ops) -> Status {
    if (!dst.paged) {
      ADXL_ERROR("%s: the destination cache is not paged", what);
      return LLM_PARAM_INVALID;
    }
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    Status s = ResolveLayers(what, *src.desc, *dst.desc, layers, &pairs);
    if (s != LLM_SUCCESS) return s;
    const uint64_t db = EntryBytes(*dst.desc);
    const uint64_t dn = static_cast<uint64_t>(dst.desc->shape[0]);
    s = CheckBlockRange(what, "destination", dst_blocks, dn);
    if (s != LLM_SUCCESS) return s;
    auto add = [&](uintptr_t s_addr, uintptr_t d_addr, uint64_t len) {
      if (local_is_dst) {
        AddOp(ops, d_addr, s_addr, len);
      } else {
        AddOp(ops, s_addr, d_addr, len);
      }
    };
    if (src.paged) {
      const uint64_t sb = EntryBytes(*src.desc), sn = static_cast<uint64_t>(src.desc->shape[0]);
      if (src_blocks.empty() || src_blocks.size() != dst_blocks.size()) {
        ADXL_ERROR("%s: %zu source blocks for %zu destination blocks (must be equal and > 0)", what, src_blocks.size(),
                 dst_blocks.size());
        return LLM_PARAM_INVALID;
      }
      if (sb != db) {
        ADXL_ERROR("%s: block sizes differ (%lu and %lu bytes)", what, static_cast<unsigned long>(sb),
                 static_cast<unsigned long>(db));
        return LLM_PARAM_INVALID;
      }
      s = CheckBlockRange(what, "source", src_blocks, sn);
      if (s != LLM_SUCCESS) return s;
      for (auto [a, c] : pairs) {
        for (size_t k = 0; k < src_blocks.size(); ++k) {
          add((*src.addrs)[a] + src_blocks[k] * sb, (*dst.addrs)[c] + dst_blocks[k] * db, sb);
        }
      }
      return LLM_SUCCESS;
    }
    // A non-paged batch entry (remote_index) cut into destination blocks.
    const uint64_t se = EntryBytes(*src.desc);
    if (!src_blocks.empty() || dst_blocks.empty() || (se + db - 1) / db != dst_blocks.size()) {
      ADXL_ERROR("%s: a %lu-byte batch entry needs %lu destination blocks of %lu bytes and no source blocks (got %zu, "
               "%zu)",
               what, static_cast<unsigned long>(se), static_cast<unsigned long>((se + db - 1) / db),
               static_cast<unsigned long>(db), dst_blocks.size(), src_blocks.size());
      return LLM_PARAM_INVALID;
    }
    for (auto [a, c] : pairs) {
      for (size_t k = 0; k < dst_blocks.size(); ++k) {
        const uint64_t off = k * db;
        add((*src.addrs)[a] + remote_index * se + off, (*dst.addrs)[c] + dst_blocks[k] * db, std::min(db, se - off));
      }
    }
    return LLM_SUCCESS;
  };
}

// The remote cache record a key names, for each kind of key (an overload
// each, so that one pull or push serves every kind).
auto Find(const CacheKey &key) {
  return [=](const std::vector<CacheRecord> &recs, const CacheRecord **rec, uint64_t *index,
             std::string *why) -> Status {
    for (const CacheRecord &r : recs) {
      for (size_t i = 0; i < r.keys.size(); ++i) {
        if (SameKey(r.keys[i], key)) {
          *rec = &r;
          *index = i;
          return LLM_SUCCESS;
        }
      }
    }
    *why = KeyText(key) + " is not registered (remote-accessible) at the remote cluster";
    return LLM_KV_CACHE_NOT_EXIST;
  };
}

auto Find(const CacheKeyByIdAndIndex &key) {
  return [=](const std::vector<CacheRecord> &recs, const CacheRecord **rec, uint64_t *index,
             std::string *why) -> Status {
    for (const CacheRecord &r : recs) {
      if (r.cache_id == key.cache_id) {
        *rec = &r;
        *index = key.batch_index;
        return LLM_SUCCESS;
      }
    }
    *why = "cache " + std::to_string(key.cache_id) + " is not registered (remote-accessible) at cluster " +
           std::to_string(key.cluster_id);
    return LLM_KV_CACHE_NOT_EXIST;
  };
}

auto Find(const BlocksCacheKey &key) {
  return [=](const std::vector<CacheRecord> &recs, const CacheRecord **rec, uint64_t *index,
             std::string *why) -> Status {
    for (const CacheRecord &r : recs) {
      if (r.blocks_key && r.blocks_key->model_id == key.model_id) {
        *rec = &r;
        *index = 0;
        return LLM_SUCCESS;
      }
    }
    *why = "BlocksCacheKey(cluster_id=" + std::to_string(key.cluster_id) + ", model_id=" +
           std::to_string(key.model_id) + ") is not registered at the remote cluster";
    return LLM_KV_CACHE_NOT_EXIST;
  };
}

// Paged source blocks -> remote paged blocks (push).
auto FromBlocks(const char *what, const LayerRangeArgs &layers, std::vector<uint64_t> src_blocks,
                std::vector<uint64_t> dst_blocks) {
  return [=](const SideView &src, const SideView &dst, uint64_t remote_index,
             std::vector<adxl::TransferOpDesc> *ops) -> Status {
    if (!src.paged) {
      ADXL_ERROR("%s: the source cache is not paged", what);
      return LLM_PARAM_INVALID;
    }
    return ToBlocks(what, layers, src_blocks, dst_blocks, false)(src, dst, remote_index, ops);
  };
}

// A block plan on caches registered without a layout: both sides seen as
// paged, except a pulled source given no blocks (a batch entry).
template <typename Build>
auto AsBlocks(bool src_paged, Build build) {
  return [=](const SideView &src, const SideView &dst, uint64_t remote_index,
             std::vector<adxl::TransferOpDesc> *ops) -> Status {
    SideView s = src, d = dst;
    s.paged = src_paged;
    d.paged = true;
    return build(s, d, remote_index, ops);
  };
}

// A pull of the remote entry `key` names into the local `dst` by the plan
// `build` (READ), and a push of the local `src` to it (WRITE).
template <typename Key, typename Build>
Status Pull(CacheManager::Impl *impl, const char *what, const Key &key, const Cache &dst, Build build) {
  return PlanAndRun(impl, what, key.cluster_id, dst, true, Find(key), build, adxl::READ);
}
template <typename Key, typename Build>
Status Push(CacheManager::Impl *impl, const char *what, const Key &key, const Cache &src, Build build) {
  return PlanAndRun(impl, what, key.cluster_id, src, false, Find(key), build, adxl::WRITE);
}

// PullCache and PullBlocks for every kind of key (their overloads differ
// only in how the remote entry is found).
template <typename Key>
Status PullCacheOf(CacheManager::Impl *impl, const Key &key, const Cache &dst, uint32_t batch_index, int64_t size,
                   const LayerRangeArgs &layers) {
  const char *what = "PullCache";
  return Pull(impl, what, key, dst, CacheToCache(what, layers, batch_index, size, true));
}
template <typename Key>
Status PullBlocksOf(CacheManager::Impl *impl, const Key &key, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                    const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers) {
  const char *what = "PullBlocks";
  return Pull(impl, what, key, dst, ToBlocks(what, layers, src_blocks, dst_blocks, true));
}

}  // namespace

Status CacheManager::PullBlocksById(const CacheKeyByIdAndIndex &key, const Cache &dst,
                                    const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                                    const LayerRangeArgs &layers) {
  const char *what = "PullKvBlocks";
  return Pull(impl_.get(), what, key, dst,
              AsBlocks(!src_blocks.empty(), ToBlocks(what, layers, src_blocks, dst_blocks, true)));
}

Status CacheManager::PushBlocksById(const CacheKeyByIdAndIndex &key, const Cache &src,
                                    const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                                    const LayerRangeArgs &layers) {
  const char *what = "PushKvBlocks";
  return Push(impl_.get(), what, key, src, AsBlocks(true, ToBlocks(what, layers, src_blocks, dst_blocks, false)));
}

Status CacheManager::PullCache(const CacheKey &key, const Cache &dst, uint32_t batch_index, int64_t size,
                               const LayerRangeArgs &layers) {
  return PullCacheOf(impl_.get(), key, dst, batch_index, size, layers);
}

Status CacheManager::PullCache(const CacheKeyByIdAndIndex &key, const Cache &dst, uint32_t batch_index, int64_t size,
                               const LayerRangeArgs &layers) {
  return PullCacheOf(impl_.get(), key, dst, batch_index, size, layers);
}

Status CacheManager::PullBlocks(const BlocksCacheKey &key, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                                const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers) {
  return PullBlocksOf(impl_.get(), key, dst, src_blocks, dst_blocks, layers);
}

Status CacheManager::PullBlocks(const CacheKey &key, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                                const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers) {
  return PullBlocksOf(impl_.get(), key, dst, src_blocks, dst_blocks, layers);
}

Status CacheManager::PullBlocks(const CacheKeyByIdAndIndex &key, const Cache &dst,
                                const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                                const LayerRangeArgs &layers) {
  return PullBlocksOf(impl_.get(), key, dst, src_blocks, dst_blocks, layers);
}

Status CacheManager::PushCache(const CacheKeyByIdAndIndex &key, const Cache &src, uint32_t src_batch_index,
                               int64_t size, const LayerRangeArgs &layers) {
  const char *what = "PushCache";
  return Push(impl_.get(), what, key, src, CacheToCache(what, layers, src_batch_index, size, false));
}

Status CacheManager::PushBlocks(const BlocksCacheKey &key, const Cache &src, const std::vector<uint64_t> &src_blocks,
                                const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers) {
  const char *what = "PushBlocks";
  return Push(impl_.get(), what, key, src, FromBlocks(what, layers, src_blocks, dst_blocks));
}

}  // namespace llm_datadist::internal
