// Layer-wise push (CacheManager::TransferCacheAsync, cache_task.h) and the
// lock rules of cache_manager_impl.h: a prefill manager pushes into a decode
// manager (both on loopback in this process, so the synchronizer can watch
// the destination memory), and a peer that never answers stalls only its
// own link.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "free_port.h"
#include "time_scale.h"
#include "cache_manager.h"

namespace llm_datadist::internal {
namespace {

using Clock = std::chrono::steady_clock;

using adxl_test::FreePort;

constexpr uint64_t kPrefill = 1, kDecode = 2;
constexpr uint32_t kLayers = 3, kTensors = kLayers * 2, kBlocks = 8, kBlockElems = 64;
constexpr size_t kBlockBytes = kBlockElems * 2;  // fp16

CacheDesc Paged() {
  CacheDesc d;
  d.num_tensors = kTensors;
  d.shape = {kBlocks, kBlockElems};
  d.data_type = DataType::DT_FLOAT16;
  d.placement = Placement::HOST;
  return d;
}

// Differs per tensor, block and byte.
uint8_t Pattern(uint32_t tensor, size_t byte) {
  return static_cast<uint8_t>(tensor * 37 + (byte / kBlockBytes) * 11 + byte * 3 + 1);
}

struct Tensors {
  explicit Tensors(size_t bytes = kBlocks * kBlockBytes) : bufs(kTensors, std::vector<uint8_t>(bytes)) {}
  std::vector<uintptr_t> addrs() {
    std::vector<uintptr_t> a;
    for (auto &b : bufs) a.push_back(reinterpret_cast<uintptr_t>(b.data()));
    return a;
  }
  void Fill() {
    for (uint32_t t = 0; t < kTensors; ++t)
      for (size_t i = 0; i < bufs[t].size(); ++i) bufs[t][i] = Pattern(t, i);
  }
  // Block db of tensor dt holds source block sb of tensor st.
  bool Holds(uint32_t dt, uint64_t db, uint32_t st, uint64_t sb) const {
    for (size_t i = 0; i < kBlockBytes; ++i)
      if (bufs[dt][db * kBlockBytes + i] != Pattern(st, sb * kBlockBytes + i)) return false;
    return true;
  }
  bool Zero(uint32_t t, uint64_t b) const {
    for (size_t i = 0; i < kBlockBytes; ++i)
      if (bufs[t][b * kBlockBytes + i] != 0) return false;
    return true;
  }
  std::vector<std::vector<uint8_t>> bufs;
};

// Prefill (cluster 1, paged source, linked to decode) and decode (cluster 2,
// two paged destinations: keyed D1, raw-addressed D2).
class LayerwiseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    decode_name_ = "127.0.0.1:" + std::to_string(FreePort());
    ASSERT_EQ(decode_.Initialize(kDecode, decode_name_), LLM_SUCCESS);
    ASSERT_EQ(prefill_.Initialize(kPrefill, "127.0.0.1"), LLM_SUCCESS);
    ASSERT_EQ(prefill_.SetSyncTimeout(5000), LLM_SUCCESS);  // loaded CI machines
    src_.Fill();
    ASSERT_EQ(prefill_.RegisterBlocksCache(Paged(), src_.addrs(), std::nullopt, std::nullopt, src_cache_), LLM_SUCCESS);
    ASSERT_EQ(decode_.RegisterBlocksCache(Paged(), d1_.addrs(), BlocksCacheKey{kDecode, 0}, true, d1_cache_),
              LLM_SUCCESS);
    ASSERT_EQ(decode_.RegisterBlocksCache(Paged(), d2_.addrs(), std::nullopt, true, d2_cache_), LLM_SUCCESS);
    std::vector<Status> rets;
    ASSERT_EQ(prefill_.LinkClusters({{kDecode, decode_name_}}, rets), LLM_SUCCESS);
  }

  std::string decode_name_;
  CacheManager decode_, prefill_;
  Tensors src_, d1_, d2_;
  Cache src_cache_, d1_cache_, d2_cache_;
};

// A synchronizer driven by a function of the layer.
class FnSync : public LayerSynchronizer {
 public:
  explicit FnSync(std::function<bool(uint32_t)> fn) : fn_(std::move(fn)) {}
  bool SynchronizeLayer(uint32_t layer, int32_t) override {
    calls.push_back(layer);
    return fn_(layer);
  }
  std::vector<uint32_t> calls;

 private:
  std::function<bool(uint32_t)> fn_;
};

const std::vector<uint64_t> kSrcBlocks = {1, 3, 6}, kDstBlocks = {0, 5, 2};

bool LayerArrived(const Tensors &d, uint32_t layer) {
  for (uint32_t j = 0; j < 2; ++j)
    for (size_t k = 0; k < kSrcBlocks.size(); ++k)
      if (!d.Holds(layer * 2 + j, kDstBlocks[k], layer * 2 + j, kSrcBlocks[k])) return false;
  return true;
}

bool LayerZero(const Tensors &d, uint32_t layer) {
  for (uint32_t j = 0; j < 2; ++j)
    for (uint64_t b = 0; b < kBlocks; ++b)
      if (!d.Zero(layer * 2 + j, b)) return false;
  return true;
}

// Layer 0 is at the destination while layer 1 is still held by the
// synchronizer; both targets (keyed and raw addresses) get every layer.
TEST_F(LayerwiseTest, OverlapKeyedAndRawTargets) {
  std::atomic<bool> overlap{false}, layer1_clean{false};
  auto sync = std::make_shared<FnSync>([&](uint32_t layer) {
    if (layer == 1) {  // hold layer 1 until layer 0 has landed at the destination
      const auto deadline = Clock::now() + std::chrono::seconds(5);
      while (Clock::now() < deadline && !LayerArrived(d1_, 0)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      overlap = LayerArrived(d1_, 0);
      layer1_clean = LayerZero(d1_, 1) && LayerZero(d1_, 2);
    }
    return true;
  });
  // Raw target: source layers 1..2 into D2's layers 0..1.
  TransferConfig raw;
  raw.dst_cluster_id = kDecode;
  raw.dst_addrs = {d2_cache_.tensor_addrs.begin(), d2_cache_.tensor_addrs.begin() + 4};
  raw.src_layer_range = LayerRange{1, 3};
  TransferWithCacheKeyConfig keyed{BlocksCacheKey{kDecode, 0}, LayerRange{0, 3}, LayerRange{0, 3}, 0};
  CacheTask task;
  ASSERT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {keyed, raw}, kSrcBlocks, kDstBlocks, 0, task), LLM_SUCCESS);
  EXPECT_EQ(task.Synchronize(), LLM_SUCCESS);
  auto results = task.GetResults();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], std::optional<Status>(LLM_SUCCESS));
  EXPECT_EQ(results[1], std::optional<Status>(LLM_SUCCESS));
  EXPECT_TRUE(overlap);
  EXPECT_TRUE(layer1_clean);
  EXPECT_EQ(sync->calls, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(task.LayersSynchronized(), 3u);
  for (uint32_t l = 0; l < kLayers; ++l) EXPECT_TRUE(LayerArrived(d1_, l)) << l;
  // D2: tensors 0..3 hold source tensors 2..5 in the destination blocks; nothing else written.
  for (uint32_t t = 0; t < kTensors; ++t) {
    for (uint64_t b = 0; b < kBlocks; ++b) {
      auto it = std::find(kDstBlocks.begin(), kDstBlocks.end(), b);
      if (t < 4 && it != kDstBlocks.end()) {
        EXPECT_TRUE(d2_.Holds(t, b, t + 2, kSrcBlocks[it - kDstBlocks.begin()])) << t << " " << b;
      } else {
        EXPECT_TRUE(d2_.Zero(t, b)) << t << " " << b;
      }
      if (it == kDstBlocks.end()) {
        EXPECT_TRUE(d1_.Zero(t, b));
      }
    }
  }
}

// A layer that is not ready ends the task: started or due targets get
// LLM_TIMEOUT, a target not yet started stays "not started", later layers
// are not pushed.
TEST_F(LayerwiseTest, LayerNotReadyEndsTask) {
  auto sync = std::make_shared<FnSync>([](uint32_t layer) { return layer != 1; });
  TransferWithCacheKeyConfig all{BlocksCacheKey{kDecode, 0}, LayerRange{0, 3}, LayerRange{0, 3}, 0};
  TransferConfig late;
  late.dst_cluster_id = kDecode;
  late.dst_addrs = {d2_cache_.tensor_addrs[4], d2_cache_.tensor_addrs[5]};
  late.src_layer_range = LayerRange{2, 3};
  CacheTask task;
  ASSERT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {all, late}, kSrcBlocks, kDstBlocks, 0, task), LLM_SUCCESS);
  EXPECT_EQ(task.Synchronize(), LLM_TIMEOUT);
  auto results = task.GetResults();
  EXPECT_EQ(results[0], std::optional<Status>(LLM_TIMEOUT));
  EXPECT_EQ(results[1], std::nullopt);
  EXPECT_EQ(sync->calls, (std::vector<uint32_t>{0, 1}));
  EXPECT_TRUE(LayerArrived(d1_, 0));
  EXPECT_TRUE(LayerZero(d1_, 1));
  EXPECT_TRUE(LayerZero(d1_, 2));
  EXPECT_TRUE(LayerZero(d2_, 2));
}

// A wait that times out cancels the task: nothing lands after it reported.
TEST_F(LayerwiseTest, WaitTimeoutCancelsTask) {
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  auto sync = std::make_shared<FnSync>([&](uint32_t layer) {
    if (layer == 1) {
      std::unique_lock<std::mutex> l(m);
      cv.wait_for(l, std::chrono::seconds(5), [&] { return release; });
    }
    return true;
  });
  TransferWithCacheKeyConfig all{BlocksCacheKey{kDecode, 0}, LayerRange{0, 3}, LayerRange{0, 3}, 0};
  CacheTask task;
  ASSERT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {all}, kSrcBlocks, kDstBlocks, 0, task), LLM_SUCCESS);
  EXPECT_EQ(task.Synchronize(200), LLM_TIMEOUT);
  EXPECT_TRUE(task.Done());
  {
    std::lock_guard<std::mutex> l(m);
    release = true;
  }
  cv.notify_all();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(LayerArrived(d1_, 0));
  EXPECT_TRUE(LayerZero(d1_, 1));
  EXPECT_TRUE(LayerZero(d1_, 2));
  EXPECT_EQ(task.GetResults()[0], std::optional<Status>(LLM_TIMEOUT));
  EXPECT_EQ(task.Synchronize(), LLM_TIMEOUT);  // the reported result stays
}

// A transfer that fails for one target ends only that target.
TEST_F(LayerwiseTest, FailedTargetDoesNotStopOthers) {
  auto sync = std::make_shared<FnSync>([](uint32_t) { return true; });
  std::vector<uint8_t> unregistered(kBlocks * kBlockBytes * 2);
  TransferConfig bad;
  bad.dst_cluster_id = kDecode;
  bad.dst_addrs = {reinterpret_cast<uintptr_t>(unregistered.data()),
                   reinterpret_cast<uintptr_t>(unregistered.data() + kBlocks * kBlockBytes)};
  bad.src_layer_range = LayerRange{0, 1};
  TransferWithCacheKeyConfig all{BlocksCacheKey{kDecode, 0}, LayerRange{0, 3}, LayerRange{0, 3}, 0};
  CacheTask task;
  ASSERT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {bad, all}, kSrcBlocks, kDstBlocks, 0, task), LLM_SUCCESS);
  const Status s = task.Synchronize();
  EXPECT_NE(s, LLM_SUCCESS);
  auto results = task.GetResults();
  ASSERT_TRUE(results[0].has_value());
  EXPECT_NE(*results[0], LLM_SUCCESS);
  EXPECT_EQ(results[1], std::optional<Status>(LLM_SUCCESS));
  for (uint32_t l = 0; l < kLayers; ++l) EXPECT_TRUE(LayerArrived(d1_, l));
}

// As the vendor: no block indices on a blocks cache is a cache-to-cache copy,
// block 0 to block 0 of each tensor in the layer range; nothing else moves.
TEST_F(LayerwiseTest, NoBlockIndicesCopiesBlockZero) {
  auto sync = std::make_shared<FnSync>([](uint32_t) { return true; });
  TransferWithCacheKeyConfig first_two{BlocksCacheKey{kDecode, 0}, LayerRange{0, 2}, LayerRange{0, 2}, 0};
  CacheTask task;
  ASSERT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {first_two}, {}, {}, 0, task), LLM_SUCCESS);
  ASSERT_EQ(task.Synchronize(), LLM_SUCCESS);
  for (uint32_t t = 0; t < 4; ++t) EXPECT_TRUE(d1_.Holds(t, 0, t, 0)) << t;
  for (uint32_t t = 0; t < 4; ++t) EXPECT_TRUE(d1_.Zero(t, 1)) << t;
  EXPECT_TRUE(d1_.Zero(4, 0) && d1_.Zero(5, 0));  // layer 2 was not in the range
}

TEST_F(LayerwiseTest, RejectedArguments) {
  auto sync = std::make_shared<FnSync>([](uint32_t) { return true; });
  TransferWithCacheKeyConfig all{BlocksCacheKey{kDecode, 0}, LayerRange{0, 3}, LayerRange{0, 3}, 0};
  CacheTask task;
  // blocks out of range; no synchronizer; no targets (a paged source without blocks: see below)
  EXPECT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {all}, {8}, {0}, 0, task), LLM_PARAM_INVALID);
  EXPECT_EQ(prefill_.TransferCacheAsync(src_cache_, nullptr, {all}, {1}, {0}, 0, task), LLM_PARAM_INVALID);
  EXPECT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {}, {1}, {0}, 0, task), LLM_PARAM_INVALID);
  // layer ranges: beyond the source, different lengths, destination block out of range
  TransferWithCacheKeyConfig bad = all;
  bad.src_layer_range = LayerRange{0, 4};
  EXPECT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {bad}, {1}, {0}, 0, task), LLM_PARAM_INVALID);
  bad = all;
  bad.dst_layer_range = LayerRange{0, 2};
  EXPECT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {bad}, {1}, {0}, 0, task), LLM_PARAM_INVALID);
  EXPECT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {all}, {1}, {8}, 0, task), LLM_PARAM_INVALID);
  // raw addresses: two per layer
  TransferConfig raw;
  raw.dst_cluster_id = kDecode;
  raw.dst_addrs = {d2_cache_.tensor_addrs[0]};
  EXPECT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {raw}, {1}, {0}, 0, task), LLM_PARAM_INVALID);
  // unknown key, cluster not linked, own cluster, unknown local cache
  TransferWithCacheKeyConfig other{BlocksCacheKey{kDecode, 7}, LayerRange{0, 3}, LayerRange{0, 3}, 0};
  EXPECT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {other}, {1}, {0}, 0, task), LLM_KV_CACHE_NOT_EXIST);
  raw.dst_cluster_id = 9;
  EXPECT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {raw}, {1}, {0}, 0, task), LLM_NOT_YET_LINK);
  raw.dst_cluster_id = kPrefill;
  EXPECT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {raw}, {1}, {0}, 0, task), LLM_PARAM_INVALID);
  Cache unknown = src_cache_;
  unknown.cache_id = 999;
  EXPECT_EQ(prefill_.TransferCacheAsync(unknown, sync, {all}, {1}, {0}, 0, task), LLM_KV_CACHE_NOT_EXIST);
  EXPECT_TRUE(sync->calls.empty());
  EXPECT_EQ(CacheTask().Synchronize(), LLM_FAILED);
}

// Non-paged source: a batch entry into destination blocks (raw addresses,
// dst_block_memory_size) and into a remote non-paged entry by id and index.
TEST_F(LayerwiseTest, NonPagedSource) {
  CacheDesc flat = Paged();
  flat.shape = {2, 4 * kBlockElems};  // 2 entries of 4 blocks' bytes
  Tensors src(2 * 4 * kBlockBytes), dst(2 * 4 * kBlockBytes);
  src.Fill();
  Cache sc, dc;
  ASSERT_EQ(prefill_.RegisterCache(flat, src.addrs(), {}, std::nullopt, sc), LLM_SUCCESS);
  ASSERT_EQ(decode_.RegisterCache(flat, dst.addrs(), {}, true, dc), LLM_SUCCESS);
  auto sync = std::make_shared<FnSync>([](uint32_t) { return true; });
  // entry 1 of every layer -> the remote entry 0, by id and index
  TransferWithCacheKeyConfig byid{CacheKeyByIdAndIndex{kDecode, dc.cache_id, 0}, LayerRange{0, 3}, LayerRange{0, 3}, 1};
  CacheTask task;
  ASSERT_EQ(prefill_.TransferCacheAsync(sc, sync, {byid}, {}, {}, 0, task), LLM_SUCCESS);
  EXPECT_EQ(task.Synchronize(), LLM_SUCCESS);
  const size_t entry = 4 * kBlockBytes;
  for (uint32_t t = 0; t < kTensors; ++t)
    for (size_t i = 0; i < entry; ++i) ASSERT_EQ(dst.bufs[t][i], Pattern(t, entry + i)) << t << " " << i;
  // entry 0 of layer 0 cut into D1's blocks 7, 4, 3, 6 (raw addresses, the block size given)
  TransferConfig raw;
  raw.dst_cluster_id = kDecode;
  raw.dst_addrs = {d1_cache_.tensor_addrs[0], d1_cache_.tensor_addrs[1]};
  raw.src_layer_range = LayerRange{0, 1};
  ASSERT_EQ(prefill_.TransferCacheAsync(sc, sync, {raw}, {}, {7, 4, 3, 6}, kBlockBytes, task), LLM_SUCCESS);
  EXPECT_EQ(task.Synchronize(), LLM_SUCCESS);
  const std::vector<uint64_t> order = {7, 4, 3, 6};
  for (uint32_t t = 0; t < 2; ++t)
    for (size_t k = 0; k < order.size(); ++k) EXPECT_TRUE(d1_.Holds(t, order[k], t, k)) << t << " " << k;
  // a paged destination by raw addresses needs the block size for a non-paged source
  EXPECT_EQ(prefill_.TransferCacheAsync(sc, sync, {raw}, {}, {7}, 0, task), LLM_PARAM_INVALID);
}

// Finalize cancels a running task and joins its thread.
TEST_F(LayerwiseTest, FinalizeEndsRunningTask) {
  auto sync = std::make_shared<FnSync>([](uint32_t layer) {
    if (layer == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return true;
  });
  TransferWithCacheKeyConfig all{BlocksCacheKey{kDecode, 0}, LayerRange{0, 3}, LayerRange{0, 3}, 0};
  CacheTask task;
  ASSERT_EQ(prefill_.TransferCacheAsync(src_cache_, sync, {all}, kSrcBlocks, kDstBlocks, 0, task), LLM_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  prefill_.Finalize();
  EXPECT_TRUE(task.Done());
  EXPECT_EQ(task.Synchronize(), LLM_FAILED);
  EXPECT_TRUE(LayerZero(d1_, 2));
}

// A peer that accepts TCP but never answers (a listening socket nobody
// serves) stalls LinkClusters to it until its timeout; a caller on another
// link keeps pulling meanwhile.
TEST_F(LayerwiseTest, SlowPeerDoesNotStallOtherLink) {
  const adxl_test::SilentListener listener;
  ASSERT_TRUE(listener.ok());
  const std::string silent = listener.name();

  std::atomic<bool> linking_done{false};
  Status link_status = LLM_SUCCESS;
  auto start = Clock::now();
  std::thread slow([&] {
    std::vector<Status> rets;
    link_status = prefill_.LinkClusters({{7, silent}}, rets, 3000);
    linking_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int pulls = 0;
  auto worst = Clock::duration::zero();
  while (!linking_done && Clock::now() - start < std::chrono::milliseconds(2000)) {
    auto t0 = Clock::now();
    ASSERT_EQ(prefill_.PullBlocks(BlocksCacheKey{kDecode, 0}, src_cache_, {0}, {7}), LLM_SUCCESS);
    worst = std::max(worst, Clock::now() - t0);
    ++pulls;
  }
  const bool still_linking = !linking_done;
  slow.join();
  const auto link_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  EXPECT_NE(link_status, LLM_SUCCESS);
  // The peer really was slow (the link waited for it), and meanwhile the
  // other link served pulls without waiting for it.
  EXPECT_GE(link_ms, 2000);
  EXPECT_TRUE(still_linking);
  EXPECT_GT(pulls, 5);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(worst).count(), adxl_test::ScaledMs(1000));
}

}  // namespace
}  // namespace llm_datadist::internal
