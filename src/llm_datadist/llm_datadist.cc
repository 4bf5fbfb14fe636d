// llm_datadist::LlmDataDist (include/llm_datadist/llm_datadist.h): the
// vendor's C++ API as a thin layer over the internal CacheManager
// (cache_manager.h), which does registration, links, metadata and
// transfers.  This file turns the vendor's types into the cache layer's
// (CacheIndex -> CacheKeyByIdAndIndex, inclusive layer pairs -> [begin, end)
// ranges, ip/port -> engine names) and owns what the vendor's API adds:
// roles, AllocateCache's memory, and local copies (local_copy.cc).
//
// Its state and locks: llm_datadist_impl.h.  Our extension
// (llm_datadist_ext.h) reaches the same Impl through ext::DataDistAccess
// (datadist_access.cc).
#include "llm_datadist/llm_datadist.h"

#include <string>
#include <utility>

#include "adxl/adxl_engine.h"
#include "cache_manager.h"
#include "common/log.h"
#include "llm_datadist_impl.h"
#include "local_copy.h"
#include "options.h"

namespace llm_datadist {
namespace {

// Client only (contract §2.2): a cluster that does not listen.
constexpr char kClientOnlyName[] = "127.0.0.1";

Status ToDesc(const char *what, const CacheDesc &in, internal::CacheDesc *out) {
  if (in.placement != CachePlacement::kHost && in.placement != CachePlacement::kDevice) {
    ADXL_ERROR("%s: placement %u is neither kHost nor kDevice", what, static_cast<uint32_t>(in.placement));
    return LLM_PARAM_INVALID;
  }
  out->num_tensors = in.num_tensors;
  out->shape = in.shape;
  out->data_type = static_cast<internal::DataType>(in.data_type);
  out->placement = in.placement == CachePlacement::kHost ? internal::Placement::HOST : internal::Placement::DEVICE;
  return LLM_SUCCESS;
}

// {first, last} inclusive, {-1, -1} for all -> [first, last + 1) or none.
Status ToRange(const char *what, const char *side, const std::pair<int32_t, int32_t> &r,
               std::optional<internal::LayerRange> *out) {
  if (r.first == -1 && r.second == -1) return LLM_SUCCESS;
  if (r.first < 0 || r.second < r.first) {
    ADXL_ERROR("%s: %s_layer_range {%d, %d} is neither {-1, -1} nor {first, last} with 0 <= first <= last", what,
               side, r.first, r.second);
    return LLM_PARAM_INVALID;
  }
  *out = internal::LayerRange{static_cast<uint32_t>(r.first), static_cast<uint32_t>(r.second) + 1U};
  return LLM_SUCCESS;
}

using internal::CacheManager;

// The cache-manager call behind each of the vendor's transfers (PullCache:
// its by-id overload, the one PullKvCache means).
using CacheMove = Status (CacheManager::*)(const internal::CacheKeyByIdAndIndex &, const internal::Cache &, uint32_t,
                                           int64_t, const internal::LayerRangeArgs &);
using BlocksMove = Status (CacheManager::*)(const internal::CacheKeyByIdAndIndex &, const internal::Cache &,
                                            const std::vector<uint64_t> &, const std::vector<uint64_t> &,
                                            const internal::LayerRangeArgs &);
constexpr CacheMove kPullCache = &CacheManager::PullCache;
constexpr BlocksMove kPullBlocks = &CacheManager::PullBlocksById;
constexpr CacheMove kPushCache = &CacheManager::PushCache;
constexpr BlocksMove kPushBlocks = &CacheManager::PushBlocksById;

// The engine name of remote_ip_infos[0] ("ip:port", "[ipv6]:port").
Status RemoteName(const char *what, const ClusterInfo &c, std::string *name) {
  if (c.remote_ip_infos.empty() || c.remote_ip_infos[0].ip.GetLength() == 0 || c.remote_ip_infos[0].port == 0) {
    ADXL_ERROR("%s: cluster %lu has no remote_ip_infos entry with an ip and a port > 0", what,
               static_cast<unsigned long>(c.remote_cluster_id));
    return LLM_PARAM_INVALID;
  }
  const std::string ip = c.remote_ip_infos[0].ip.GetString();
  const std::string port = std::to_string(c.remote_ip_infos[0].port);
  *name = ip.find(':') != std::string::npos ? "[" + ip + "]:" + port : ip + ":" + port;
  return LLM_SUCCESS;
}

}  // namespace

namespace facade {

internal::Cache ById(int64_t cache_id) {
  internal::Cache c;
  c.cache_id = cache_id;
  return c;
}

Status ToLayers(const char *what, const KvCacheExtParam &p, internal::LayerRangeArgs *out) {
  if (p.tensor_num_per_layer == 0) {
    ADXL_ERROR("%s: tensor_num_per_layer must be > 0", what);
    return LLM_PARAM_INVALID;
  }
  out->tensor_num_per_layer = p.tensor_num_per_layer;
  Status s = ToRange(what, "src", p.src_layer_range, &out->src_layer_range);
  if (s == LLM_SUCCESS) s = ToRange(what, "dst", p.dst_layer_range, &out->dst_layer_range);
  return s;
}

internal::CacheKeyByIdAndIndex ToKey(const CacheIndex &i) {
  return internal::CacheKeyByIdAndIndex{i.cluster_id, i.cache_id, i.batch_index};
}

}  // namespace facade

using facade::ById;
using facade::EngineMem;

LlmDataDist::LlmDataDist(uint64_t cluster_id, LlmRole role)
    : impl_(std::make_unique<LlmDataDistImpl>(cluster_id, role)) {}

LlmDataDist::~LlmDataDist() { Finalize(); }

Status LlmDataDist::Initialize(const std::map<AscendString, AscendString> &options) {
  const char *what = "Initialize";
  internal::DataDistOptions o;
  Status s = internal::ParseOptions(what, options, &o);
  if (s != LLM_SUCCESS) return s;
  {
    adxl::MutexLock lock(&impl_->mu);
    if (impl_->initialized) {
      ADXL_ERROR("Initialize: already initialized");
      return LLM_FAILED;
    }
    if (impl_->role != LlmRole::kPrompt && impl_->role != LlmRole::kDecoder && impl_->role != LlmRole::kMix) {
      ADXL_ERROR("Initialize: role %d is not kPrompt, kDecoder or kMix", static_cast<int>(impl_->role));
      return LLM_PARAM_INVALID;
    }
    if (impl_->role == LlmRole::kPrompt && !o.listen) {
      ADXL_ERROR("Initialize: the Prompt role needs llm.ListenIpInfo (ip:port), the address decoders link to");
      return LLM_PARAM_INVALID;
    }
  }
  const std::string local = o.listen ? *o.listen : kClientOnlyName;
  s = impl_->cm.Initialize(impl_->cluster_id, local, o.engine);
  if (s != LLM_SUCCESS) return s;
  if (o.sync_timeout_ms) (void)impl_->cm.SetSyncTimeout(*o.sync_timeout_ms);
  impl_->Started(o.listen ? *o.listen : "", o.engine);
  return LLM_SUCCESS;
}

void LlmDataDist::Finalize() {
  std::map<int64_t, std::vector<EngineMem>> memory;
  {
    adxl::MutexLock lock(&impl_->mu);
    impl_->initialized = false;
    memory.swap(impl_->allocated);
    impl_->comms.clear();  // Finalize drops every link, so every comm
    impl_->next_comm = 1;
    impl_->listener_holds = 0;  // their links end, LLM_FAILED (the instance moved on)
    impl_->listener_moving = false;
  }
  // Unlinks and deregisters (peer I/O: no lock of ours held); the memory is
  // freed after, when nothing refers to it any more.
  impl_->cm.Finalize();
}

Status LlmDataDist::SetRole(LlmRole role, const std::map<AscendString, AscendString> &options) {
  const char *what = "SetRole";
  if (role != LlmRole::kPrompt && role != LlmRole::kDecoder && role != LlmRole::kMix) {
    ADXL_ERROR("SetRole: role %d is not kPrompt, kDecoder or kMix", static_cast<int>(role));
    return LLM_PARAM_INVALID;
  }
  Status s = impl_->Ready(what);
  if (s != LLM_SUCCESS) return s;
  internal::DataDistOptions o;
  s = internal::ParseOptions(what, options, &o);
  if (s != LLM_SUCCESS) return s;
  // llm.EnableSwitchRole is not required: the vendor's C++ layer switches
  // without it (only its Python package's v1 mode has the flag).
  std::string listen;
  std::map<adxl::AscendString, adxl::AscendString> engine_options;
  uint64_t started = 0, generation = 0;
  s = impl_->BeginMove(what, 0, 0, &started, &generation, &listen, &engine_options);
  if (s != LLM_SUCCESS) return s;
  for (const auto &kv : o.engine) engine_options[kv.first] = kv.second;
  if (role == LlmRole::kPrompt && !o.listen && listen.empty()) {
    ADXL_ERROR("SetRole: the Prompt role needs llm.ListenIpInfo (ip:port); this cluster does not listen yet");
    s = LLM_PARAM_INVALID;
  } else {
    // As the vendor: llm.ListenIpInfo starts or moves the listener, a switch
    // without it stops listening; any link either way is LLM_EXIST_LINK.
    const std::string target = o.listen ? *o.listen : std::string(kClientOnlyName);
    s = impl_->cm.Rebind(target, engine_options, what, generation);
  }
  s = impl_->EndMove(what, started, s, o.listen ? *o.listen : "", engine_options);
  if (s != LLM_SUCCESS) return s;
  if (o.sync_timeout_ms) (void)impl_->cm.SetSyncTimeout(*o.sync_timeout_ms);
  adxl::MutexLock lock(&impl_->mu);
  impl_->role = role;
  return LLM_SUCCESS;
}

Status LlmDataDist::LinkLlmClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                                    int32_t timeout_in_millis) {
  const char *what = "LinkLlmClusters";
  const Status s = impl_->AcceptClusters(what, clusters.size(), timeout_in_millis, rets);
  if (s != LLM_SUCCESS) return s;
  rets.assign(clusters.size(), LLM_SUCCESS);
  std::vector<internal::ClusterInfo> todo;
  std::vector<size_t> where;
  for (size_t i = 0; i < clusters.size(); ++i) {
    std::string name;
    rets[i] = RemoteName(what, clusters[i], &name);
    if (rets[i] != LLM_SUCCESS) continue;
    todo.push_back({clusters[i].remote_cluster_id, name});
    where.push_back(i);
  }
  if (!todo.empty()) {
    std::vector<internal::Status> got;
    (void)impl_->cm.LinkClusters(todo, got, timeout_in_millis);
    for (size_t j = 0; j < where.size() && j < got.size(); ++j) {
      rets[where[j]] = got[j];  // LLM_LINK_FAILED for an unreachable peer: the cache layer's
    }
  }
  Status result = LLM_SUCCESS;  // the vendor's: the last failure
  for (Status r : rets) {
    if (r != LLM_SUCCESS) result = r;
  }
  return result;
}

Status LlmDataDist::UnlinkLlmClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                                      int32_t timeout_in_millis, bool force_flag) {
  const char *what = "UnlinkLlmClusters";
  const Status s = impl_->AcceptClusters(what, clusters.size(), timeout_in_millis, rets);
  if (s != LLM_SUCCESS) return s;
  // The cache layer finds links by cluster id and applies force_flag itself;
  // the address goes with a cluster of exactly one remote ip info (without
  // force the vendor's default backend wants it: the peer is asked).
  std::vector<internal::ClusterInfo> todo;
  for (const ClusterInfo &c : clusters) {
    std::string name;
    if (c.remote_ip_infos.size() == 1 && c.remote_ip_infos[0].ip.GetLength() > 0 && c.remote_ip_infos[0].port > 0) {
      (void)RemoteName(what, c, &name);
    }
    todo.push_back({c.remote_cluster_id, name});
  }
  return impl_->cm.UnlinkClusters(todo, rets, timeout_in_millis, force_flag);
}

Status LlmDataDist::AllocateCache(const CacheDesc &cache_desc, Cache &cache) {
  const char *what = "AllocateCache";
  Status s = impl_->Ready(what);
  if (s != LLM_SUCCESS) return s;
  internal::CacheDesc desc;
  s = ToDesc(what, cache_desc, &desc);
  if (s != LLM_SUCCESS) return s;
  const uint64_t bytes = internal::TensorBytes(desc);
  if (bytes == 0 || desc.num_tensors == 0 || desc.num_tensors > internal::kMaxRegisteredAddrs) {
    ADXL_ERROR("%s: invalid description (%u tensors, data type %d, %zu dims, a dimension <= 0 or too large)", what,
               desc.num_tensors, static_cast<int>(cache_desc.data_type), desc.shape.size());
    return LLM_PARAM_INVALID;
  }
  const bool device = cache_desc.placement == CachePlacement::kDevice;
  std::vector<EngineMem> memory;
  std::vector<uintptr_t> addrs;
  for (uint32_t i = 0; i < desc.num_tensors; ++i) {
    void *p = nullptr;
    const adxl::Status e = adxl::AdxlEngine::MallocMem(device ? adxl::MEM_DEVICE : adxl::MEM_HOST, bytes, &p);
    if (e == adxl::UNSUPPORTED) {
      ADXL_ERROR("%s: kDevice memory needs a device runtime, and none is available in this process (use kHost)",
                 what);
      return LLM_FEATURE_NOT_ENABLED;
    }
    if (e != adxl::SUCCESS || p == nullptr) {
      ADXL_ERROR("%s: allocating tensor %u (%lu bytes) failed: engine status %u", what, i,
                 static_cast<unsigned long>(bytes), e);
      return device ? LLM_DEVICE_OUT_OF_MEMORY : LLM_OUT_OF_MEMORY;
    }
    memory.emplace_back(p);
    addrs.push_back(reinterpret_cast<uintptr_t>(p));
  }
  internal::Cache c;
  s = impl_->cm.RegisterCache(desc, addrs, {}, true, c);
  if (s != LLM_SUCCESS) return s;  // memory freed by its owners
  cache.cache_id = c.cache_id;
  cache.tensor_addrs = addrs;
  cache.cache_desc = cache_desc;
  adxl::MutexLock lock(&impl_->mu);
  impl_->allocated[c.cache_id] = std::move(memory);
  return LLM_SUCCESS;
}

Status LlmDataDist::DeallocateCache(int64_t cache_id) {
  Status s = impl_->Ready("DeallocateCache");
  if (s != LLM_SUCCESS) return s;
  {
    adxl::MutexLock lock(&impl_->mu);
    // The vendor's answer for a freed or unknown id, and for one another
    // DeallocateCache is freeing.
    if (impl_->allocated.count(cache_id) == 0 || !impl_->deallocating.insert(cache_id).second) return LLM_SUCCESS;
  }
  // The memory stays in `allocated` until it is no longer registered.  When
  // the unregistration fails (a Finalize began meanwhile: its deregistration
  // of the cache comes later, after it told the peers), it stays there and
  // Finalize frees it after that deregistration; freed here, a peer could
  // still read it, or the engine deregister freed memory.
  s = impl_->cm.UnregisterCache(cache_id);
  std::vector<EngineMem> memory;  // freed after the lock is released
  adxl::MutexLock lock(&impl_->mu);
  impl_->deallocating.erase(cache_id);
  if (s != LLM_SUCCESS) return s;
  // Gone already when a Finalize took it meanwhile (it frees it; cache ids
  // are not reused, so the id is still this cache's).
  auto it = impl_->allocated.find(cache_id);
  if (it != impl_->allocated.end()) {
    memory = std::move(it->second);
    impl_->allocated.erase(it);
  }
  return LLM_SUCCESS;
}

Status LlmDataDist::RegisterKvCache(const CacheDesc &cache_desc, const std::vector<uint64_t> &addrs,
                                    const RegisterCfg &cfg, int64_t &cache_id) {
  (void)cfg;  // reserved bytes only
  const char *what = "RegisterKvCache";
  Status s = impl_->Ready(what);
  if (s != LLM_SUCCESS) return s;
  internal::CacheDesc desc;
  s = ToDesc(what, cache_desc, &desc);
  if (s != LLM_SUCCESS) return s;
  const std::vector<uintptr_t> a(addrs.begin(), addrs.end());
  internal::Cache c;
  s = impl_->cm.RegisterCache(desc, a, {}, true, c);
  if (s == LLM_SUCCESS) cache_id = c.cache_id;
  return s;
}

Status LlmDataDist::UnregisterKvCache(int64_t cache_id) {
  const char *what = "UnregisterKvCache";
  Status s = impl_->Ready(what);
  if (s != LLM_SUCCESS) return s;
  {
    adxl::MutexLock lock(&impl_->mu);
    if (impl_->allocated.count(cache_id) != 0) {
      ADXL_ERROR("%s: cache %ld was allocated by AllocateCache; DeallocateCache it", what,
                 static_cast<long>(cache_id));
      return LLM_PARAM_INVALID;
    }
  }
  return impl_->cm.UnregisterCache(cache_id);  // logs an unknown id itself
}

Status LlmDataDist::PullKvCache(const CacheIndex &src_cache_index, const Cache &dst_cache, uint32_t batch_index,
                                int64_t size, const KvCacheExtParam &ext_param) {
  return impl_->Transfer("PullKvCache", src_cache_index, dst_cache, ext_param, kPullCache, batch_index, size);
}

Status LlmDataDist::PullKvBlocks(const CacheIndex &src_cache_index, const Cache &dst_cache,
                                 const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                                 const KvCacheExtParam &ext_param) {
  return impl_->Transfer("PullKvBlocks", src_cache_index, dst_cache, ext_param, kPullBlocks, src_blocks, dst_blocks);
}

Status LlmDataDist::PushKvCache(const Cache &src_cache, const CacheIndex &dst_cache_index, uint32_t src_batch_index,
                                int64_t size, const KvCacheExtParam &ext_param) {
  return impl_->Transfer("PushKvCache", dst_cache_index, src_cache, ext_param, kPushCache, src_batch_index, size);
}

Status LlmDataDist::PushKvBlocks(const Cache &src_cache, const CacheIndex &dst_cache_index,
                                 const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                                 const KvCacheExtParam &ext_param) {
  return impl_->Transfer("PushKvBlocks", dst_cache_index, src_cache, ext_param, kPushBlocks, src_blocks, dst_blocks);
}

Status LlmDataDist::CopyKvCache(const Cache &src_cache, const Cache &dst_cache, uint32_t src_batch_index,
                                uint32_t dst_batch_index, uint64_t offset, int64_t size) {
  internal::Cache src, dst;
  const Status s = impl_->Locals("CopyKvCache", src_cache, dst_cache, &src, &dst);
  return s == LLM_SUCCESS ? internal::CopyCache(src, dst, src_batch_index, dst_batch_index, offset, size) : s;
}

Status LlmDataDist::CopyKvBlocks(const Cache &src_cache, const Cache &dst_cache,
                                 const std::vector<uint64_t> &src_blocks,
                                 const std::vector<std::vector<uint64_t>> &dst_blocks_list) {
  internal::Cache src, dst;
  const Status s = impl_->Locals("CopyKvBlocks", src_cache, dst_cache, &src, &dst);
  return s == LLM_SUCCESS ? internal::CopyBlocks(src, dst, src_blocks, dst_blocks_list) : s;
}

}  // namespace llm_datadist
