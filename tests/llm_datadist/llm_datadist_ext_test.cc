// Our extension of the vendor's C++ API (include/llm_datadist/llm_datadist_ext.h),
// public headers only: each call reaches the cache layer behind the
// LlmDataDist it is given (caches registered by key are pulled by key and by
// the class's own calls, remote_accessible hides a cache, blocks caches,
// check_link_status, key removal, the listener's move, the layer-wise push,
// SwapKvBlocks' checks; its swaps on the host ACL emulation's device memory
// are tests/acl_host/device_cache_test.cc's), and each
// refusal is a status with one ERROR line.  Two clusters in one process, on
// loopback; every byte checked.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "error_lines.h"
#include "free_port.h"
#include "llm_datadist/llm_datadist.h"
#include "llm_datadist/llm_datadist_ext.h"

namespace llm_datadist::ext {
namespace {

using adxl_test::FreePort;
using adxl_test::LoopbackName;
using Options = std::map<AscendString, AscendString>;

using adxl_test::ErrorLines;

// n tensors of rows x 16 int32; 0 for seed 0, else distinct per tensor and element.
struct Tensors {
  Tensors(uint32_t n, int64_t rows, int32_t seed) : rows(rows), data(n, std::vector<int32_t>(rows * 16)) {
    for (uint32_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < rows * 16; ++i) data[t][i] = seed == 0 ? 0 : seed + static_cast<int32_t>(t * 10000 + i);
    }
  }
  std::vector<uintptr_t> addrs() {
    std::vector<uintptr_t> a;
    for (auto &d : data) a.push_back(reinterpret_cast<uintptr_t>(d.data()));
    return a;
  }
  CacheDesc desc() const {
    CacheDesc d;
    d.num_tensors = static_cast<uint32_t>(data.size());
    d.shape = {rows, 16};
    d.data_type = DataType::DT_INT32;
    d.placement = Placement::HOST;
    return d;
  }
  // Row r of tensor t equals row sr of src's tensor t.
  bool Row(uint32_t t, int64_t r, const Tensors &src, int64_t sr) const {
    return std::memcmp(&data[t][r * 16], &src.data[t][sr * 16], 16 * sizeof(int32_t)) == 0;
  }
  bool Zero(uint32_t t, int64_t r) const {
    for (int i = 0; i < 16; ++i) {
      if (data[t][r * 16 + i] != 0) return false;
    }
    return true;
  }
  int64_t rows;
  std::vector<std::vector<int32_t>> data;
};

Cache ById(int64_t id) {
  Cache c;
  c.cache_id = id;
  return c;
}

// Cluster 1 (the holder) started by our InitializeEngine, listening;
// cluster 2 started by the class's own Initialize, listening too (pushes
// and the layer-wise push go 2 -> 1 over 2's link).
struct Pair {
  void SetUp() {
    ASSERT_EQ(InitializeEngine(holder, LoopbackName(holder_port), {}), LLM_SUCCESS);
    ASSERT_EQ(other.Initialize({{OPTION_LISTEN_IP_INFO, LoopbackName(FreePort()).c_str()}}), LLM_SUCCESS);
  }
  void Link() {
    std::vector<Status> rets;
    ASSERT_EQ(LinkClusters(other, {{1, LoopbackName(holder_port)}}, rets, 3000), LLM_SUCCESS);
    ASSERT_EQ(rets, std::vector<Status>{LLM_SUCCESS});
  }
  uint16_t holder_port = FreePort();
  LlmDataDist holder{1, LlmRole::kPrompt}, other{2, LlmRole::kDecoder};
};

TEST(LlmDataDistExt, CacheRegisteredByKeyIsPulledByKeyAndByTheClassesPull) {
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(pair.SetUp());
  Tensors src(2, 4, 7), by_key(2, 4, 0), by_class(2, 4, 0);
  Cache sc;
  const CacheKey key{1, /*req_id=*/42, /*model_id=*/0};
  ASSERT_EQ(RegisterCache(pair.holder, src.desc(), src.addrs(), {CacheKey{1, 41, 0}, key}, true, sc), LLM_SUCCESS);
  EXPECT_GT(sc.cache_id, 0);
  EXPECT_FALSE(sc.paged);
  EXPECT_TRUE(sc.remote_accessible);
  EXPECT_EQ(RegisteredAddrCount(pair.holder), 2U);
  Cache mine;
  ASSERT_EQ(RegisterCache(pair.other, by_key.desc(), by_key.addrs(), {}, std::nullopt, mine), LLM_SUCCESS);
  int64_t class_id = -1;
  llm_datadist::CacheDesc vendor_desc{};
  vendor_desc.placement = CachePlacement::kHost;
  vendor_desc.num_tensors = 2;
  vendor_desc.data_type = DT_INT32;
  vendor_desc.shape = {4, 16};
  std::vector<uint64_t> class_addrs;
  for (uintptr_t a : by_class.addrs()) class_addrs.push_back(a);
  ASSERT_EQ(pair.other.RegisterKvCache(vendor_desc, class_addrs, {}, class_id), LLM_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(pair.Link());
  EXPECT_EQ(CheckLinkStatus(pair.other, 1), LLM_SUCCESS);

  // By key: batch entry 1 (the entry registered under `key`) -> local entry 3.
  ASSERT_EQ(PullCache(pair.other, key, ById(mine.cache_id), 3), LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t) {
    EXPECT_TRUE(by_key.Row(t, 3, src, 1)) << t;
    EXPECT_TRUE(by_key.Zero(t, 0) && by_key.Zero(t, 1) && by_key.Zero(t, 2)) << t;
  }
  // The class's PullKvCache finds the same cache by the id the extension returned.
  llm_datadist::CacheIndex index{};
  index.cluster_id = 1;
  index.cache_id = sc.cache_id;
  index.batch_index = 2;
  llm_datadist::Cache dst{};
  dst.cache_id = class_id;
  ASSERT_EQ(pair.other.PullKvCache(index, dst, 0), LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t) EXPECT_TRUE(by_class.Row(t, 0, src, 2)) << t;
  // And the extension's pull by id and index reaches a cache the class registered.
  Tensors again(2, 4, 0);
  Cache again_c;
  ASSERT_EQ(RegisterCache(pair.other, again.desc(), again.addrs(), {}, false, again_c), LLM_SUCCESS);
  ASSERT_EQ(PullCache(pair.other, CacheKeyByIdAndIndex{1, sc.cache_id, 0}, ById(again_c.cache_id), 1),
            LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t) EXPECT_TRUE(again.Row(t, 1, src, 0)) << t;

  // The key withdrawn: a pull by it is LLM_KV_CACHE_NOT_EXIST; by id it still works.
  ASSERT_EQ(RemoveCacheKey(pair.holder, key), LLM_SUCCESS);
  EXPECT_EQ(PullCache(pair.other, key, ById(mine.cache_id), 0), LLM_KV_CACHE_NOT_EXIST);
  EXPECT_EQ(PullCache(pair.other, CacheKeyByIdAndIndex{1, sc.cache_id, 1}, ById(mine.cache_id), 0), LLM_SUCCESS);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(RemoveCacheKey(pair.holder, key), LLM_KV_CACHE_NOT_EXIST); }), 1);
}

TEST(LlmDataDistExt, ACacheThatIsNotRemoteAccessibleIsHiddenFromPeers) {
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(pair.SetUp());
  Tensors hidden(2, 2, 3), shown(2, 2, 5), dst(2, 2, 0);
  Cache hc, sc, dc;
  // remote_accessible absent: false for HOST placement.
  ASSERT_EQ(RegisterCache(pair.holder, hidden.desc(), hidden.addrs(), {}, std::nullopt, hc), LLM_SUCCESS);
  EXPECT_FALSE(hc.remote_accessible);
  ASSERT_EQ(RegisterCache(pair.holder, shown.desc(), shown.addrs(), {}, true, sc), LLM_SUCCESS);
  ASSERT_EQ(RegisterCache(pair.other, dst.desc(), dst.addrs(), {}, std::nullopt, dc), LLM_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(pair.Link());
  EXPECT_EQ(PullCache(pair.other, CacheKeyByIdAndIndex{1, hc.cache_id, 0}, ById(dc.cache_id)),
            LLM_KV_CACHE_NOT_EXIST);
  for (uint32_t t = 0; t < 2; ++t) EXPECT_TRUE(dst.Zero(t, 0) && dst.Zero(t, 1));
  ASSERT_EQ(PullCache(pair.other, CacheKeyByIdAndIndex{1, sc.cache_id, 1}, ById(dc.cache_id)), LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t) EXPECT_TRUE(dst.Row(t, 0, shown, 1)) << t;
}

TEST(LlmDataDistExt, BlocksCachesArePulledAndPushedByTheirKey) {
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(pair.SetUp());
  Tensors held(4, 6, 11), mine(4, 6, 13);
  Cache hc, mc;
  const BlocksCacheKey held_key{1, /*model_id=*/5};
  ASSERT_EQ(RegisterBlocksCache(pair.holder, held.desc(), held.addrs(), held_key, true, hc), LLM_SUCCESS);
  EXPECT_TRUE(hc.paged);
  ASSERT_EQ(RegisterBlocksCache(pair.other, mine.desc(), mine.addrs(), std::nullopt, std::nullopt, mc), LLM_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(pair.Link());
  const Tensors mine_before = mine;
  // Pull blocks 4, 1 -> 0, 5, layer 1 only (tensors 2 and 3).
  LayerRangeArgs layer1;
  layer1.src_layer_range = LayerRange{1, 2};
  layer1.dst_layer_range = LayerRange{1, 2};
  ASSERT_EQ(PullBlocks(pair.other, held_key, ById(mc.cache_id), {4, 1}, {0, 5}, layer1), LLM_SUCCESS);
  for (uint32_t t = 0; t < 4; ++t) {
    if (t >= 2) {
      EXPECT_TRUE(mine.Row(t, 0, held, 4) && mine.Row(t, 5, held, 1)) << t;
    } else {
      EXPECT_TRUE(mine.Row(t, 0, mine_before, 0) && mine.Row(t, 5, mine_before, 5)) << t;  // layer 0 untouched
    }
  }
  // Push block 2 -> remote block 3, every layer.
  ASSERT_EQ(PushBlocks(pair.other, held_key, ById(mc.cache_id), {2}, {3}), LLM_SUCCESS);
  for (uint32_t t = 0; t < 4; ++t) EXPECT_TRUE(held.Row(t, 3, mine, 2)) << t;
  // Push a batch entry by id and index.
  Tensors entries(2, 3, 0), from(2, 3, 17);
  Cache ec, fc;
  ASSERT_EQ(RegisterCache(pair.holder, entries.desc(), entries.addrs(), {}, true, ec), LLM_SUCCESS);
  ASSERT_EQ(RegisterCache(pair.other, from.desc(), from.addrs(), {}, std::nullopt, fc), LLM_SUCCESS);
  ASSERT_EQ(PushCache(pair.other, CacheKeyByIdAndIndex{1, ec.cache_id, 2}, ById(fc.cache_id), 1), LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t) EXPECT_TRUE(entries.Row(t, 2, from, 1) && entries.Zero(t, 0)) << t;
}

// Says every layer is ready at once and counts the calls.
struct Ready : LayerSynchronizer {
  bool SynchronizeLayer(uint32_t layer_index, int32_t timeout_ms) override {
    ++calls;
    return true;
  }
  int calls = 0;
};

TEST(LlmDataDistExt, LayerwisePushReachesTheKeyedCache) {
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(pair.SetUp());
  Tensors held(4, 4, 0), mine(4, 4, 19);
  Cache hc, mc;
  ASSERT_EQ(RegisterBlocksCache(pair.holder, held.desc(), held.addrs(), BlocksCacheKey{1, 9}, true, hc), LLM_SUCCESS);
  ASSERT_EQ(RegisterBlocksCache(pair.other, mine.desc(), mine.addrs(), std::nullopt, std::nullopt, mc), LLM_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(pair.Link());
  auto sync = std::make_shared<Ready>();
  CacheTask task;
  const std::vector<TransferTarget> targets = {
      TransferWithCacheKeyConfig{BlocksCacheKey{1, 9}, LayerRange{0, 2}, LayerRange{0, 2}}};
  ASSERT_EQ(TransferCacheAsync(pair.other, ById(mc.cache_id), sync, targets, {0, 3}, {1, 2}, 0, task), LLM_SUCCESS);
  EXPECT_EQ(task.Synchronize(10000), LLM_SUCCESS);
  EXPECT_EQ(task.LayersSynchronized(), 2U);
  for (uint32_t t = 0; t < 4; ++t) {
    EXPECT_TRUE(held.Row(t, 1, mine, 0) && held.Row(t, 2, mine, 3)) << t;
    EXPECT_TRUE(held.Zero(t, 0) && held.Zero(t, 3)) << t;
  }
  // A source block beyond the cache: refused before anything moves.
  CacheTask none;
  EXPECT_EQ(ErrorLines([&] {
              EXPECT_EQ(TransferCacheAsync(pair.other, ById(mc.cache_id), sync, targets, {0, 9}, {1, 2}, 0, none),
                        LLM_PARAM_INVALID);
            }),
            1);
}

TEST(LlmDataDistExt, TheListenerMovesWithoutLinksAndTheCachesKeepTheirIds) {
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(pair.SetUp());
  Tensors src(2, 2, 23), dst(2, 2, 0);
  Cache sc, dc;
  ASSERT_EQ(RegisterCache(pair.holder, src.desc(), src.addrs(), {}, true, sc), LLM_SUCCESS);
  ASSERT_EQ(RegisterCache(pair.other, dst.desc(), dst.addrs(), {}, std::nullopt, dc), LLM_SUCCESS);
  const uint16_t moved = FreePort();
  ASSERT_EQ(MoveListener(pair.holder, LoopbackName(moved), {}), LLM_SUCCESS);
  pair.holder_port = moved;
  ASSERT_NO_FATAL_FAILURE(pair.Link());
  ASSERT_EQ(PullCache(pair.other, CacheKeyByIdAndIndex{1, sc.cache_id, 1}, ById(dc.cache_id)), LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t) EXPECT_TRUE(dst.Row(t, 0, src, 1)) << t;
  // With a link either way: refused with one line naming the caller's call, nothing moved.
  testing::internal::CaptureStderr();
  EXPECT_EQ(MoveListener(pair.holder, LoopbackName(FreePort()), {}, "link(\"comm\")"), LLM_EXIST_LINK);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("link(\"comm\")"), std::string::npos) << err;
  EXPECT_EQ(CheckLinkStatus(pair.other, 1), LLM_SUCCESS);
  // Unlinked both ways, the link status says so.
  std::vector<Status> rets;
  ASSERT_EQ(UnlinkClusters(pair.other, {{1, LoopbackName(moved)}}, rets, 3000, false), LLM_SUCCESS);
  EXPECT_EQ(CheckLinkStatus(pair.other, 1), LLM_NOT_YET_LINK);
}

// InitializeEngine records whether the cluster listens by the cache layer's
// one rule (a port > 0): "ip" and "ip:0" are client only, so the Prompt
// role, which needs a listener, is refused until one is given.
TEST(LlmDataDistExt, AnEngineNameWithoutAPortIsClientOnly) {
  for (const char *name : {"127.0.0.1", "127.0.0.1:0"}) {
    LlmDataDist dd(1, LlmRole::kDecoder);
    ASSERT_EQ(InitializeEngine(dd, name, {}), LLM_SUCCESS) << name;
    EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.SetRole(LlmRole::kPrompt, {}), LLM_PARAM_INVALID) << name; }), 1);
    dd.Finalize();
  }
  LlmDataDist listening(2, LlmRole::kDecoder);
  ASSERT_EQ(InitializeEngine(listening, LoopbackName(FreePort()), {}), LLM_SUCCESS);
  EXPECT_EQ(listening.SetRole(LlmRole::kPrompt, {}), LLM_SUCCESS);
  listening.Finalize();
}

TEST(LlmDataDistExt, BadInputIsAStatusAndOneLine) {
  LlmDataDist dd(1, LlmRole::kDecoder);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(SetSyncTimeout(dd, 100), LLM_FAILED); }), 1);  // not initialized
  ASSERT_EQ(InitializeEngine(dd, "127.0.0.1", {}), LLM_SUCCESS);                     // client only
  testing::internal::CaptureStderr();
  EXPECT_EQ(InitializeEngine(dd, "127.0.0.1", {}), LLM_FAILED);
  const std::string again = testing::internal::GetCapturedStderr();
  EXPECT_NE(again.find("InitializeEngine: already initialized"), std::string::npos) << again;
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(SetSyncTimeout(dd, 0), LLM_PARAM_INVALID); }), 1);
  EXPECT_EQ(SetSyncTimeout(dd, 500), LLM_SUCCESS);
  Tensors t(2, 2, 1);
  Cache c;
  // Three addresses for two tensors.
  std::vector<uintptr_t> three = t.addrs();
  three.push_back(three[0] + 64);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(RegisterCache(dd, t.desc(), three, {}, true, c), LLM_PARAM_INVALID); }), 1);
  // Three keys for a batch of two; a key of another cluster.
  const std::vector<CacheKey> three_keys = {CacheKey{1, 1, 0}, CacheKey{1, 2, 0}, CacheKey{1, 3, 0}};
  EXPECT_EQ(ErrorLines([&] {
              EXPECT_EQ(RegisterCache(dd, t.desc(), t.addrs(), three_keys, true, c), LLM_PARAM_INVALID);
            }),
            1);
  EXPECT_EQ(ErrorLines([&] {
              EXPECT_EQ(RegisterCache(dd, t.desc(), t.addrs(), {CacheKey{7, 1, 0}}, true, c), LLM_PARAM_INVALID);
            }),
            1);
  EXPECT_EQ(RegisteredAddrCount(dd), 0U);
  ASSERT_EQ(RegisterCache(dd, t.desc(), t.addrs(), {}, true, c), LLM_SUCCESS);
  // Not linked.
  EXPECT_EQ(ErrorLines([&] {
              EXPECT_EQ(PullCache(dd, CacheKeyByIdAndIndex{2, 1, 0}, ById(c.cache_id)), LLM_NOT_YET_LINK);
            }),
            1);
  EXPECT_EQ(CheckLinkStatus(dd, 2), LLM_NOT_YET_LINK);
  // The class's own calls see the cluster the extension started.
  EXPECT_EQ(dd.UnregisterKvCache(c.cache_id), LLM_SUCCESS);
  EXPECT_EQ(RegisteredAddrCount(dd), 0U);
  dd.Finalize();
  // After Finalize every call is LLM_FAILED with one line, as the class's own.
  std::vector<Status> rets;
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(RegisterCache(dd, t.desc(), t.addrs(), {}, true, c), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] {
              EXPECT_EQ(RegisterBlocksCache(dd, t.desc(), t.addrs(), std::nullopt, true, c), LLM_FAILED);
            }),
            1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(RemoveCacheKey(dd, CacheKey{1, 1, 0}), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(LinkClusters(dd, {{2, LoopbackName(1)}}, rets, 100), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(UnlinkClusters(dd, {{2, ""}}, rets, 100, true), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(CheckLinkStatus(dd, 2), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(MoveListener(dd, LoopbackName(FreePort()), {}), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(PullCache(dd, CacheKey{2, 1, 0}, ById(1)), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(PullBlocks(dd, BlocksCacheKey{2, 0}, ById(1), {0}, {0}), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(PushCache(dd, CacheKeyByIdAndIndex{2, 1, 0}, ById(1)), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(PushBlocks(dd, BlocksCacheKey{2, 0}, ById(1), {0}, {0}), LLM_FAILED); }), 1);
  CacheTask task;
  EXPECT_EQ(ErrorLines([&] {
              EXPECT_EQ(TransferCacheAsync(dd, ById(1), std::make_shared<Ready>(), {}, {}, {}, 0, task), LLM_FAILED);
            }),
            1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(SetSyncTimeout(dd, 100), LLM_FAILED); }), 1);
  EXPECT_EQ(RegisteredAddrCount(dd), 0U);
}

// ---- SwapKvBlocks ----

// A paged cache of desc's layout at addrs, placed as given, not registered.
Cache Paged(CacheDesc desc, const std::vector<uintptr_t> &addrs, Placement placement) {
  Cache c;
  desc.placement = placement;
  c.cache_desc = desc;
  c.tensor_addrs = addrs;
  c.paged = true;
  return c;
}

// call() returns `want` and writes exactly one ERROR line, which contains `says`.
template <typename Call>
void ExpectRefused(Call call, Status want, const std::string &says) {
  testing::internal::CaptureStderr();
  const Status got = call();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(got, want) << err;
  int lines = 0;
  for (size_t p = err.find(" ERROR "); p != std::string::npos; p = err.find(" ERROR ", p + 1)) ++lines;
  EXPECT_EQ(lines, 1) << err;
  EXPECT_NE(err.find(says), std::string::npos) << "want \"" << says << "\" in: " << err;
}

TEST(LlmDataDistExt, SwapKvBlocksBadInputIsAStatusAndOneLine) {
  LlmDataDist dd(1, LlmRole::kMix);
  Tensors host(2, 4, 7), dst(2, 4, 0);  // dst: host memory, said to be DEVICE below
  const Cache h = Paged(host.desc(), host.addrs(), Placement::HOST);
  const Cache d = Paged(dst.desc(), dst.addrs(), Placement::DEVICE);
  const auto swap = [&](const Cache &s, const Cache &t, std::vector<uint64_t> sb,
                        std::vector<std::vector<uint64_t>> db) {
    return [&dd, s, t, sb, db] { return SwapKvBlocks(dd, s, t, sb, db); };
  };
  ExpectRefused(swap(h, d, {0}, {{0}}), LLM_FAILED, "SwapKvBlocks");  // not initialized
  ASSERT_EQ(InitializeEngine(dd, "127.0.0.1", {}), LLM_SUCCESS);

  Cache flat = h;
  flat.paged = false;
  ExpectRefused(swap(flat, d, {0}, {{0}}), LLM_PARAM_INVALID, "src and dst caches should be blocks caches");
  ExpectRefused(swap(h, flat, {0}, {{0}}), LLM_PARAM_INVALID, "src and dst caches should be blocks caches");
  Cache wide = d;  // the same bytes as 2 blocks of 128
  wide.cache_desc.shape = {2, 32};
  ExpectRefused(swap(h, wide, {0}, {{0}}), LLM_PARAM_INVALID, "src block size:64 and dst block size:128 must be equal");
  Tensors three(3, 4, 0);
  ExpectRefused(swap(h, Paged(three.desc(), three.addrs(), Placement::DEVICE), {0}, {{0}}), LLM_PARAM_INVALID,
                "src and dst num_tensors must be equal");
  Cache one_addr = d;
  one_addr.tensor_addrs.pop_back();
  ExpectRefused(swap(h, one_addr, {0}, {{0}}), LLM_PARAM_INVALID, "the dst cache has 1 addresses for num_tensors 2");
  Cache no_shape = h;
  no_shape.cache_desc.shape = {4, 0};
  ExpectRefused(swap(no_shape, d, {0}, {{0}}), LLM_PARAM_INVALID, "the src cache's description is invalid");
  ExpectRefused(swap(h, d, {4}, {{0}}), LLM_PARAM_INVALID, "block pair (4, 0) out of range");
  ExpectRefused(swap(h, d, {0}, {{4}}), LLM_PARAM_INVALID, "block pair (0, 4) out of range");
  ExpectRefused(swap(h, d, {0, 1}, {{0}}), LLM_PARAM_INVALID, "2 source blocks for 1 destination blocks");
  ExpectRefused(swap(h, Paged(dst.desc(), dst.addrs(), Placement::HOST), {0}, {{0}}), LLM_PARAM_INVALID,
                "swap from HOST to HOST is not supported");
  ExpectRefused(swap(Paged(host.desc(), host.addrs(), Placement::DEVICE), d, {0}, {{0}}), LLM_PARAM_INVALID,
                "swap from DEVICE to DEVICE is not supported");
  // Valid arguments, but no device runtime in this process copies `d`'s
  // memory (this binary has no host ACL emulation; the swap on the
  // emulation's memory is tests/acl_host/device_cache_test.cc's).
  ExpectRefused(swap(h, d, {0}, {{0}}), LLM_FEATURE_NOT_ENABLED, "no device runtime in this process copies");
  for (int64_t r = 0; r < 4; ++r) EXPECT_TRUE(dst.Zero(0, r) && dst.Zero(1, r)) << "row " << r;  // nothing moved
}

TEST(LlmDataDistExt, TablesAreTheCacheLayers) {
  EXPECT_STREQ(StatusName(LLM_PARAM_INVALID), "LLM_PARAM_INVALID");
  EXPECT_STREQ(StatusName(0x5010B0FFU), "LLM_UNKNOWN_ERROR");
  const std::vector<adxl::StatusInfo> table = StatusTable();
  bool found_alias = false, found_row = false;
  for (const adxl::StatusInfo &s : table) {
    found_alias = found_alias || (std::string(s.name) == "LLM_UNSUPPORTED" && s.value == LLM_FEATURE_NOT_ENABLED);
    found_row = found_row || (std::string(s.name) == "LLM_TIMEOUT" && s.value == LLM_TIMEOUT);
  }
  EXPECT_TRUE(found_alias && found_row);
  EXPECT_EQ(DataTypeSize(DataType::DT_FLOAT16), 2U);
  EXPECT_EQ(DataTypeSize(DataType::DT_INT64), 8U);
  const std::optional<EngineKey> comm = EngineOptionKey("llm.LocalCommRes");
  ASSERT_TRUE(comm.has_value());
  EXPECT_EQ(comm->name, "adxl.LocalCommRes");
  EXPECT_FALSE(EngineOptionKey("llm.SyncKvCacheWaitTime").has_value());
  EXPECT_EQ(TransferBackends(), (std::vector<std::string>{"", "adxl", "hixl"}));
}

}  // namespace
}  // namespace llm_datadist::ext
