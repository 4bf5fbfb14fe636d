// Layer-wise push: CacheManager::TransferCacheAsync and CacheTask
// (src/llm_datadist/cache_task.h).  Everything is validated and planned
// on the caller's thread (the metadata of keyed targets read through each
// link's own lock, no manager lock held across I/O); the task's thread then
// only waits for the synchronizer and runs one TransferSync per target and
// layer.
#include <algorithm>
#include <chrono>
#include <exception>

#include "cache_manager_impl.h"
#include "common/log.h"

namespace llm_datadist::internal {

namespace {

constexpr uint32_t kTensorsPerLayer = 2;  // K and V, as the reference's layer-wise push

// One target, planned: where each source tensor of its layer range goes.
struct TargetPlan {
  std::string engine;
  LayerRange src;                    // source layers
  std::vector<uintptr_t> dst_base;   // per tensor of `src`, in order (2 per layer)
  bool dst_blocks = false;           // destination addressed in blocks of dst_block_bytes
  uint64_t dst_block_bytes = 0;
  uint32_t src_batch_index = 0;
};

struct Job {
  OpContext ctx;
  Cache src;
  std::shared_ptr<LayerSynchronizer> sync;
  std::vector<TargetPlan> targets;
  std::vector<uint64_t> src_blocks, dst_blocks;
  LayerRange layers;  // union of the targets' source ranges
};

Status BadRange(const char *what, const char *name, LayerRange r, uint32_t layers) {
  ADXL_ERROR("%s: %s [%u,%u) is empty or beyond %u layers", what, name, r.begin, r.end, layers);
  return LLM_PARAM_INVALID;
}

// The descriptors of layer `l` to target `t` (WRITE: local source, remote destination).
std::vector<adxl::TransferOpDesc> LayerOps(const Job &job, const TargetPlan &t, uint32_t l) {
  std::vector<adxl::TransferOpDesc> ops;
  const CacheDesc &sd = job.src.cache_desc;
  const uint64_t se = EntryBytes(sd);
  for (uint32_t j = 0; j < kTensorsPerLayer; ++j) {
    const uintptr_t sbase = job.src.tensor_addrs[l * kTensorsPerLayer + j];
    const uintptr_t dbase = t.dst_base[(l - t.src.begin) * kTensorsPerLayer + j];
    if (job.src.paged) {
      for (size_t i = 0; i < job.src_blocks.size(); ++i) {
        AddOp(&ops, sbase + job.src_blocks[i] * se, dbase + job.dst_blocks[i] * t.dst_block_bytes, se);
      }
    } else if (t.dst_blocks) {
      const uintptr_t entry = sbase + t.src_batch_index * se;
      for (size_t k = 0; k < job.dst_blocks.size() && k * t.dst_block_bytes < se; ++k) {
        const uint64_t off = k * t.dst_block_bytes;
        AddOp(&ops, entry + off, dbase + job.dst_blocks[k] * t.dst_block_bytes, std::min(t.dst_block_bytes, se - off));
      }
    } else {
      AddOp(&ops, sbase + t.src_batch_index * se, dbase, se);
    }
  }
  return ops;
}

// Checks and plans one target.  Keyed targets read the link's metadata.
Status PlanTarget(const char *what, CacheManager::Impl *impl, const OpContext &ctx, const Cache &src,
                  const TransferTarget &target, const std::vector<uint64_t> &dst_blocks, uint64_t dst_block_bytes,
                  TargetPlan *plan) ADXL_EXCLUDES(impl->mu, impl->peers.mu) {
  const uint32_t src_layers = src.cache_desc.num_tensors / kTensorsPerLayer;
  const uint64_t se = EntryBytes(src.cache_desc);
  uint64_t cluster = 0;
  uint32_t batch = 0;
  if (const auto *tc = std::get_if<TransferConfig>(&target)) {
    cluster = tc->dst_cluster_id;
    batch = tc->src_batch_index;
    plan->src = tc->src_layer_range.value_or(LayerRange{0, src_layers});
  } else {
    const auto &kc = std::get<TransferWithCacheKeyConfig>(target);
    cluster = std::visit([](const auto &k) { return k.cluster_id; }, kc.cache_key);
    batch = kc.src_batch_index;
    plan->src = kc.src_layer_range;
  }
  if (plan->src.begin >= plan->src.end || plan->src.end > src_layers) {
    return BadRange(what, "src_layer_range", plan->src, src_layers);
  }
  if (src.paged ? batch != 0 : batch >= static_cast<uint64_t>(src.cache_desc.shape[0])) {
    ADXL_ERROR("%s: src_batch_index %u is out of range (%s source of %ld entries)", what, batch,
             src.paged ? "a paged" : "a", static_cast<long>(src.cache_desc.shape[0]));
    return LLM_PARAM_INVALID;
  }
  plan->src_batch_index = batch;
  std::shared_ptr<RemoteLink> link;
  if (cluster != ctx.cluster_id) impl->EnsureReverse(what, cluster);  // two-way links
  if (cluster == ctx.cluster_id) {
    ADXL_ERROR("%s: cluster %lu is this process's own cluster", what, static_cast<unsigned long>(cluster));
    return LLM_PARAM_INVALID;
  }
  {
    adxl::MutexLock lock(&impl->peers.mu);
    auto it = impl->peers.links.find(cluster);
    if (it == impl->peers.links.end()) {
      ADXL_ERROR("%s: cluster %lu is not linked", what, static_cast<unsigned long>(cluster));
      return LLM_NOT_YET_LINK;
    }
    link = it->second;
  }
  plan->engine = link->engine;
  const uint32_t n = plan->src.end - plan->src.begin;

  if (const auto *tc = std::get_if<TransferConfig>(&target)) {
    if (tc->dst_addrs.size() != static_cast<size_t>(n) * kTensorsPerLayer) {
      ADXL_ERROR("%s: %zu destination addresses for %u layers (two per layer)", what, tc->dst_addrs.size(), n);
      return LLM_PARAM_INVALID;
    }
    for (uintptr_t a : tc->dst_addrs) {
      if (a == 0) {
        ADXL_ERROR("%s: a destination address is 0", what);
        return LLM_PARAM_INVALID;
      }
    }
    plan->dst_base = tc->dst_addrs;
    plan->dst_blocks = !dst_blocks.empty();
    plan->dst_block_bytes = dst_block_bytes != 0 ? dst_block_bytes : (src.paged ? se : 0);
    if (plan->dst_blocks && plan->dst_block_bytes == 0) {
      ADXL_ERROR("%s: dst_block_indices into a non-paged source need dst_block_memory_size", what);
      return LLM_PARAM_INVALID;
    }
    if (src.paged && plan->dst_block_bytes < se) {
      ADXL_ERROR("%s: source blocks of %lu bytes do not fit destination blocks of %lu", what,
               static_cast<unsigned long>(se), static_cast<unsigned long>(plan->dst_block_bytes));
      return LLM_PARAM_INVALID;
    }
    return LLM_SUCCESS;
  }

  // Keyed: the remote cache's record.
  const auto &kc = std::get<TransferWithCacheKeyConfig>(target);
  std::shared_ptr<const std::vector<CacheRecord>> records;
  const CacheRecord *rec = nullptr;
  uint64_t dst_index = 0;
  // The table as last pushed; once more after asking the peer when the
  // destination is not in it (refresh on miss).
  for (bool refresh : {false, true}) {
    Status s = RefreshLink(ctx, *link, refresh, &records);
    if (s != LLM_SUCCESS) {
      ADXL_ERROR("%s: reading the metadata of cluster %lu failed: status %u", what,
                 static_cast<unsigned long>(cluster), s);
      return s;
    }
    for (const CacheRecord &r : *records) {
      if (const auto *bk = std::get_if<BlocksCacheKey>(&kc.cache_key)) {
        if (r.blocks_key && r.blocks_key->model_id == bk->model_id) rec = &r;
      } else {
        const auto &ik = std::get<CacheKeyByIdAndIndex>(kc.cache_key);
        if (r.cache_id == ik.cache_id) {
          rec = &r;
          dst_index = ik.batch_index;
        }
      }
      if (rec != nullptr) break;
    }
    if (rec != nullptr) break;
  }
  if (rec == nullptr) {
    ADXL_ERROR("%s: the destination cache is not registered (remote-accessible) at cluster %lu", what,
             static_cast<unsigned long>(cluster));
    return LLM_KV_CACHE_NOT_EXIST;
  }
  if (rec->desc.data_type != src.cache_desc.data_type || rec->desc.num_tensors % kTensorsPerLayer != 0) {
    ADXL_ERROR("%s: the destination cache has another data type or an odd number of tensors", what);
    return LLM_PARAM_INVALID;
  }
  const uint32_t dst_layers = rec->desc.num_tensors / kTensorsPerLayer;
  const LayerRange d = kc.dst_layer_range;
  if (d.begin >= d.end || d.end > dst_layers) return BadRange(what, "dst_layer_range", d, dst_layers);
  if (d.end - d.begin != n) {
    ADXL_ERROR("%s: %u source layers for %u destination layers", what, n, d.end - d.begin);
    return LLM_PARAM_INVALID;
  }
  const uint64_t de = EntryBytes(rec->desc);
  const uint64_t dn = static_cast<uint64_t>(rec->desc.shape[0]);
  for (uint32_t l = d.begin; l < d.end; ++l) {
    for (uint32_t j = 0; j < kTensorsPerLayer; ++j) plan->dst_base.push_back(rec->addrs[l * kTensorsPerLayer + j]);
  }
  if (rec->paged) {
    if (dst_blocks.empty() || (dst_block_bytes != 0 && dst_block_bytes != de)) {
      ADXL_ERROR("%s: a paged destination needs dst_block_indices (and its own block size, %lu bytes)", what,
               static_cast<unsigned long>(de));
      return LLM_PARAM_INVALID;
    }
    const Status s = CheckBlockRange(what, "destination", dst_blocks, dn);
    if (s != LLM_SUCCESS) return s;
    if (src.paged && se > de) {
      ADXL_ERROR("%s: source blocks of %lu bytes do not fit destination blocks of %lu", what,
               static_cast<unsigned long>(se), static_cast<unsigned long>(de));
      return LLM_PARAM_INVALID;
    }
    plan->dst_blocks = true;
    plan->dst_block_bytes = de;
    return LLM_SUCCESS;
  }
  if (src.paged || !dst_blocks.empty()) {
    ADXL_ERROR("%s: the destination cache is not paged (no paged source, no dst_block_indices)", what);
    return LLM_PARAM_INVALID;
  }
  if (dst_index >= dn || se != de) {
    ADXL_ERROR("%s: destination batch index %lu of %lu, or entries of different sizes (%lu, %lu bytes)", what,
             static_cast<unsigned long>(dst_index), static_cast<unsigned long>(dn), static_cast<unsigned long>(se),
             static_cast<unsigned long>(de));
    return LLM_PARAM_INVALID;
  }
  for (uintptr_t &b : plan->dst_base) b += dst_index * de;
  return LLM_SUCCESS;
}

// Layer `failed` could not be sent (status why): every target due to get it,
// or already started, ends with `why`.
void FailFromLocked(CacheTask::State &st, const Job &job, uint32_t failed, Status why) ADXL_REQUIRES(st.mu) {
  for (size_t d = 0; d < job.targets.size(); ++d) {
    const bool due = job.targets[d].src.begin <= failed && failed < job.targets[d].src.end;
    if (st.phase[d] == CacheTask::State::kStarted ||
        (st.phase[d] == CacheTask::State::kNotStarted && due)) {
      st.phase[d] = CacheTask::State::kFailed;
      st.results[d] = why;
      if (st.status == LLM_SUCCESS) st.status = why;
    }
  }
}

void RunTask(Job &job, CacheTask::State &st) {
  using Phase = CacheTask::State::Phase;
  for (uint32_t l = job.layers.begin; l < job.layers.end; ++l) {
    {
      adxl::MutexLock lock(&st.mu);
      if (st.done) break;
      bool pending = false;  // a target still wants this layer or a later one
      for (size_t d = 0; d < job.targets.size(); ++d) {
        pending = pending || (st.phase[d] < CacheTask::State::kComplete && l < job.targets[d].src.end);
      }
      if (!pending) break;
    }
    Status ready = LLM_FAILED;
    try {
      ready = job.sync->WaitLayer(l, job.ctx.timeout_ms);
    } catch (const std::exception &e) {
      ADXL_ERROR("TransferCacheAsync: the layer synchronizer failed at layer %u: %s", l, e.what());
    } catch (...) {
      ADXL_ERROR("TransferCacheAsync: the layer synchronizer failed at layer %u", l);
    }
    {
      adxl::MutexLock lock(&st.mu);
      if (st.done) break;
      if (ready != LLM_SUCCESS) {
        ADXL_ERROR("TransferCacheAsync: layer %u was not ready (status %u); the task ends", l, ready);
        FailFromLocked(st, job, l, ready);
        st.done = true;
        st.cv.NotifyAll();
        break;
      }
      ++st.synced;
    }
    for (size_t d = 0; d < job.targets.size(); ++d) {
      const TargetPlan &t = job.targets[d];
      if (l < t.src.begin || l >= t.src.end) continue;
      const std::vector<adxl::TransferOpDesc> ops = LayerOps(job, t, l);
      {
        adxl::MutexLock lock(&st.mu);
        if (st.done) break;
        if (st.phase[d] >= CacheTask::State::kComplete) continue;
        st.phase[d] = CacheTask::State::kStarted;
        st.pushing = true;
      }
      Status s = FromEngine(job.ctx.engine->TransferSync(t.engine.c_str(), adxl::WRITE, ops, job.ctx.timeout_ms));
      adxl::MutexLock lock(&st.mu);
      st.pushing = false;
      st.cv.NotifyAll();
      if (st.done) break;  // a canceller waited for this transfer and has ended the task
      if (s != LLM_SUCCESS) {
        ADXL_ERROR("TransferCacheAsync: layer %u to %s failed: status %u", l, t.engine.c_str(), s);
        st.phase[d] = CacheTask::State::kFailed;
        st.results[d] = s;
        if (st.status == LLM_SUCCESS) st.status = s;
      } else if (l + 1 == t.src.end) {
        st.phase[d] = CacheTask::State::kComplete;
        st.results[d] = LLM_SUCCESS;
      }
    }
  }
  job.sync.reset();  // the caller's synchronizer is released before the task counts as exited
  adxl::MutexLock lock(&st.mu);
  if (!st.done) {
    for (size_t d = 0; d < st.phase.size(); ++d) {
      if (st.phase[d] == CacheTask::State::kStarted) {  // cannot happen: every range ends inside job.layers
        st.phase[d] = static_cast<Phase>(CacheTask::State::kFailed);
        st.results[d] = LLM_FAILED;
        if (st.status == LLM_SUCCESS) st.status = LLM_FAILED;
      }
    }
    st.done = true;
  }
  st.exited = true;
  st.cv.NotifyAll();
}

}  // namespace

}  // namespace llm_datadist::internal

// CacheTask is a public type (llm_datadist_ext_layerwise.h): its members are
// defined in its namespace.
namespace llm_datadist::ext {

void CacheTask::State::EndLocked(Status why) {
  if (done) return;
  cancelled = true;
  cv.Wait(&mu, [this]() ADXL_REQUIRES(mu) { return !pushing; });
  if (done) return;  // the worker ended it while we waited
  for (size_t d = 0; d < phase.size(); ++d) {
    if (phase[d] == kStarted) {
      phase[d] = kFailed;
      results[d] = why;
    }
  }
  if (status == LLM_SUCCESS) status = why;
  done = true;
  cv.NotifyAll();
}

Status CacheTask::Synchronize(std::optional<int32_t> timeout_ms) {
  if (!state_) return LLM_FAILED;
  State &st = *state_;
  adxl::MutexLock lock(&st.mu);
  if (timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(*timeout_ms, 0));
    if (!st.cv.WaitUntil(&st.mu, deadline, [&st]() ADXL_REQUIRES(st.mu) { return st.done; })) {
      ADXL_ERROR("CacheTask: not done within %d ms; the task is cancelled", *timeout_ms);
      st.EndLocked(LLM_TIMEOUT);
    }
  } else {
    st.cv.Wait(&st.mu, [&st]() ADXL_REQUIRES(st.mu) { return st.done; });
  }
  return st.status;
}

std::vector<std::optional<Status>> CacheTask::GetResults(std::optional<int32_t> timeout_ms) {
  if (!state_) return {};
  Synchronize(timeout_ms);
  adxl::MutexLock lock(&state_->mu);
  return state_->results;
}

bool CacheTask::Done() const {
  if (!state_) return true;
  adxl::MutexLock lock(&state_->mu);
  return state_->done;
}

uint32_t CacheTask::LayersSynchronized() const {
  if (!state_) return 0;
  adxl::MutexLock lock(&state_->mu);
  return state_->synced;
}

}  // namespace llm_datadist::ext

namespace llm_datadist::internal {

Status CacheManager::TransferCacheAsync(const Cache &src, std::shared_ptr<LayerSynchronizer> synchronizer,
                                        const std::vector<TransferTarget> &targets,
                                        const std::vector<uint64_t> &src_blocks_in,
                                        const std::vector<uint64_t> &dst_blocks_in, uint64_t dst_block_bytes,
                                        CacheTask &task) {
  const char *what = "TransferCacheAsync";
  std::vector<uint64_t> src_blocks = src_blocks_in, dst_blocks = dst_blocks_in;
  auto job = std::make_shared<Job>();
  OpGuard guard(impl_.get());
  {
    Status s = impl_->Begin(what, &job->ctx, &guard);
    if (s != LLM_SUCCESS) return s;
    if (impl_->store.Get(src.cache_id, &job->src) != LLM_SUCCESS) {
      ADXL_ERROR("%s: local cache %ld is not registered", what, static_cast<long>(src.cache_id));
      return LLM_KV_CACHE_NOT_EXIST;
    }
  }
  if (!synchronizer || targets.empty()) {
    ADXL_ERROR("%s: a layer synchronizer and at least one transfer config are needed", what);
    return LLM_PARAM_INVALID;
  }
  const CacheDesc &sd = job->src.cache_desc;
  if (sd.num_tensors % kTensorsPerLayer != 0) {
    ADXL_ERROR("%s: the source has %u tensors, not two per layer", what, sd.num_tensors);
    return LLM_PARAM_INVALID;
  }
  if (job->src.paged) {
    if (src_blocks.empty() && dst_blocks.empty()) {
      // The vendor's cache-to-cache copy: without block indices a blocks
      // cache is a batch of one block, block 0 to block 0 of each tensor.
      src_blocks = {0};
      dst_blocks = {0};
    }
    if (src_blocks.empty() || src_blocks.size() != dst_blocks.size()) {
      ADXL_ERROR("%s: a paged source needs as many src_block_indices as dst_block_indices (%zu, %zu; > 0)", what,
               src_blocks.size(), dst_blocks.size());
      return LLM_PARAM_INVALID;
    }
    const Status s = CheckBlockRange(what, "source", src_blocks, static_cast<uint64_t>(sd.shape[0]));
    if (s != LLM_SUCCESS) return s;
  } else if (!src_blocks.empty()) {
    ADXL_ERROR("%s: src_block_indices given for a source that is not paged", what);
    return LLM_PARAM_INVALID;
  }
  job->src_blocks = src_blocks;
  job->dst_blocks = dst_blocks;
  job->sync = std::move(synchronizer);
  job->layers = LayerRange{UINT32_MAX, 0};
  for (const TransferTarget &t : targets) {
    TargetPlan plan;
    Status s = PlanTarget(what, impl_.get(), job->ctx, job->src, t, dst_blocks, dst_block_bytes, &plan);
    if (s != LLM_SUCCESS) return s;
    job->layers.begin = std::min(job->layers.begin, plan.src.begin);
    job->layers.end = std::max(job->layers.end, plan.src.end);
    job->targets.push_back(std::move(plan));
  }
  auto state = std::make_shared<CacheTask::State>(targets.size());
  // Under Impl::mu: Finalize, which sets `stopping` under it before it takes
  // the workers, sees every task started.
  adxl::MutexLock lock(&impl_->mu);
  if (impl_->stopping || !impl_->live) return LLM_FAILED;
  adxl::MutexLock tasks_lock(&impl_->tasks.mu);
  impl_->tasks.ReapLocked();
  TaskWorker w;
  w.state = state;
  w.thread = std::thread([job, state]() { RunTask(*job, *state); });
  impl_->tasks.workers.push_back(std::move(w));
  task = CacheTask(state);
  return LLM_SUCCESS;
}

}  // namespace llm_datadist::internal
