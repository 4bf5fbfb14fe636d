// llm_datadist::LlmDataDist, the vendor's C++ API (include/llm_datadist/
// llm_datadist.h): argument checks give the vendor's codes and one ERROR
// line each; pull / push / copy / role switch move the right bytes (two
// clusters in one process, on loopback).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "adxl/adxl_engine.h"
#include "cache_manager.h"
#include "datadist_access.h"
#include "error_lines.h"
#include "free_port.h"
#include "llm_datadist/llm_datadist.h"

namespace llm_datadist {
namespace {

using adxl_test::FreePort;
using Options = std::map<AscendString, AscendString>;

using adxl_test::ErrorLines;

std::string Listen(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

CacheDesc HostDesc(uint32_t tensors, std::vector<int64_t> shape) {
  CacheDesc d{};
  d.placement = CachePlacement::kHost;
  d.num_tensors = tensors;
  d.data_type = DT_INT32;
  d.shape = std::move(shape);
  return d;
}

ClusterInfo Remote(uint64_t id, uint16_t port) {
  ClusterInfo c{};
  c.remote_cluster_id = id;
  IpInfo ip{};
  ip.ip = "127.0.0.1";
  ip.port = port;
  c.remote_ip_infos.push_back(ip);
  return c;
}

CacheIndex Index(uint64_t cluster, int64_t cache, uint32_t batch = 0) {
  CacheIndex i{};
  i.cluster_id = cluster;
  i.cache_id = cache;
  i.batch_index = batch;
  return i;
}

// num tensors of rows x 16 int32; tensor t row r element e = seed + t*10000 + r*100 + e.
struct Tensors {
  Tensors(uint32_t n, int64_t rows, int32_t seed) : rows(rows), data(n, std::vector<int32_t>(rows * 16)) {
    for (uint32_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < rows * 16; ++i) data[t][i] = seed == 0 ? 0 : seed + static_cast<int32_t>(t * 10000 + i);
    }
  }
  std::vector<uint64_t> addrs() {
    std::vector<uint64_t> a;
    for (auto &d : data) a.push_back(reinterpret_cast<uint64_t>(d.data()));
    return a;
  }
  bool Row(uint32_t t, int64_t r, const Tensors &src, uint32_t st, int64_t sr) const {
    return std::memcmp(&data[t][r * 16], &src.data[st][sr * 16], 16 * sizeof(int32_t)) == 0;
  }
  int64_t rows;
  std::vector<std::vector<int32_t>> data;
};

// A Prompt (cluster 1, listening on `port`) and a Decoder (cluster 2,
// linked to it), each with one registered host cache of the same shape: the
// prompt's filled from `seed`, the decoder's zero.  Set up under
// ASSERT_NO_FATAL_FAILURE.
struct LinkedPair {
  LinkedPair(uint32_t tensors, int64_t rows, int32_t seed) : p(tensors, rows, seed), d(tensors, rows, 0) {}
  void SetUp(const Options &decoder_options = {}) {
    ASSERT_EQ(prompt.Initialize({{OPTION_LISTEN_IP_INFO, Listen(port).c_str()}}), LLM_SUCCESS);
    ASSERT_EQ(decoder.Initialize(decoder_options), LLM_SUCCESS);
    const CacheDesc desc = HostDesc(static_cast<uint32_t>(p.data.size()), {p.rows, 16});
    ASSERT_EQ(prompt.RegisterKvCache(desc, p.addrs(), {}, pc.cache_id), LLM_SUCCESS);
    ASSERT_EQ(decoder.RegisterKvCache(desc, d.addrs(), {}, dc.cache_id), LLM_SUCCESS);
    std::vector<Status> rets;
    ASSERT_EQ(decoder.LinkLlmClusters({Remote(1, port)}, rets, 3000), LLM_SUCCESS);
  }
  const uint16_t port = FreePort();
  LlmDataDist prompt{1, LlmRole::kPrompt}, decoder{2, LlmRole::kDecoder};
  Tensors p, d;
  Cache pc{}, dc{};  // the registered caches (their ids)
};

TEST(LlmDataDist, EveryCallBeforeInitializeIsFailedWithOneLine) {
  LlmDataDist dd(1, LlmRole::kDecoder);
  std::vector<Status> rets;
  Cache c{};
  int64_t id = -1;
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.LinkLlmClusters({Remote(2, 1)}, rets), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.RegisterKvCache(HostDesc(1, {1, 16}), {64}, {}, id), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.AllocateCache(HostDesc(1, {1, 16}), c), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.PullKvCache(Index(2, 1), c), LLM_FAILED); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.SetRole(LlmRole::kPrompt), LLM_FAILED); }), 1);
  dd.Finalize();
  dd.Finalize();
}

TEST(LlmDataDist, InitializeChecksItsOptions) {
  const std::vector<Options> bad = {
      {},  // a Prompt without llm.ListenIpInfo
      {{OPTION_LISTEN_IP_INFO, "127.0.0.1"}},
      {{OPTION_LISTEN_IP_INFO, "127.0.0.1:70000"}},
      {{OPTION_LISTEN_IP_INFO, "127.0.0.1:1"}, {OPTION_SYNC_CACHE_WAIT_TIME, "soon"}},
      {{OPTION_LISTEN_IP_INFO, "127.0.0.1:1"}, {OPTION_TRANSFER_BACKEND, "carrier-pigeon"}},
      {{OPTION_LISTEN_IP_INFO, "127.0.0.1:1"}, {OPTION_ENABLE_SET_ROLE, "maybe"}},
      {{OPTION_LISTEN_IP_INFO, "127.0.0.1:1"}, {OPTION_DEVICE_ID, "-3"}},
  };
  for (const Options &o : bad) {
    LlmDataDist dd(1, LlmRole::kPrompt);
    EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.Initialize(o), LLM_PARAM_INVALID); }), 1);
  }
  {
    // Passed to the engine, whose own check refuses it (its line, then the cache layer's).
    LlmDataDist dd(1, LlmRole::kPrompt);
    const Options o = {{OPTION_LISTEN_IP_INFO, Listen(FreePort()).c_str()},
                       {OPTION_GLOBAL_RESOURCE_CONFIG, "not json"}};
    EXPECT_GE(ErrorLines([&] { EXPECT_EQ(dd.Initialize(o), LLM_PARAM_INVALID); }), 1);
  }
  // The RDMA keys reach the engine, as the vendor translates them for its
  // transfer engine (and as the Python package always did): a traffic class
  // that is not a multiple of 4, or a service level over 7, is the engine's
  // refusal; valid ones initialize.
  for (const Options &rdma : {Options{{"llm.RdmaTrafficClass", "130"}}, Options{{"llm.RdmaServiceLevel", "8"}}}) {
    LlmDataDist dd(1, LlmRole::kDecoder);
    EXPECT_GE(ErrorLines([&] { EXPECT_EQ(dd.Initialize(rdma), LLM_PARAM_INVALID); }), 1)
        << rdma.begin()->first.GetString();
  }
  {
    LlmDataDist dd(1, LlmRole::kDecoder);
    EXPECT_EQ(dd.Initialize({{"llm.RdmaTrafficClass", "132"}, {"llm.RdmaServiceLevel", "4"}}), LLM_SUCCESS);
  }
  // Accepted: the vendor's keys with no effect here, and keys of its runtime.
  LlmDataDist dd(1, LlmRole::kPrompt);
  const Options good = {{OPTION_LISTEN_IP_INFO, Listen(FreePort()).c_str()}, {OPTION_DEVICE_ID, "0"},
                        {OPTION_SYNC_CACHE_WAIT_TIME, "2000"}, {OPTION_TRANSFER_BACKEND, "hixl"},
                        {OPTION_BUF_POOL_CFG, "{}"}, {OPTION_LOCAL_COMM_RES, ""},
                        {OPTION_GLOBAL_RESOURCE_CONFIG, "{}"}, {"ge.exec.deviceId", "0"}};
  EXPECT_EQ(dd.Initialize(good), LLM_SUCCESS);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.Initialize(good), LLM_FAILED); }), 1);
}

TEST(LlmDataDist, ArgumentChecksGiveTheVendorCodes) {
  LlmDataDist dd(1, LlmRole::kDecoder);
  ASSERT_EQ(dd.Initialize({}), LLM_SUCCESS);
  Tensors t(2, 4, 1);
  int64_t id = -1;
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.RegisterKvCache(HostDesc(2, {4, 16}), {t.addrs()[0]}, {}, id),
                                       LLM_PARAM_INVALID); }), 1);
  CacheDesc weird = HostDesc(2, {4, 16});
  weird.placement = static_cast<CachePlacement>(7);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.RegisterKvCache(weird, t.addrs(), {}, id), LLM_PARAM_INVALID); }), 1);
  ASSERT_EQ(dd.RegisterKvCache(HostDesc(2, {4, 16}), t.addrs(), {}, id), LLM_SUCCESS);
  Cache c{};
  c.cache_id = id;
  std::vector<Status> rets;
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.LinkLlmClusters({}, rets), LLM_PARAM_INVALID); }), 1);
  ClusterInfo no_ip{};
  no_ip.remote_cluster_id = 2;
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.LinkLlmClusters({no_ip}, rets), LLM_PARAM_INVALID); }), 1);
  ASSERT_EQ(rets.size(), 1u);
  EXPECT_EQ(rets[0], LLM_PARAM_INVALID);
  KvCacheExtParam backwards{};
  backwards.src_layer_range = {2, 1};
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.PullKvCache(Index(2, 1), c, 0, -1, backwards), LLM_PARAM_INVALID); }), 1);
  KvCacheExtParam no_tensors{};
  no_tensors.tensor_num_per_layer = 0;
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.PushKvBlocks(c, Index(2, 1), {0}, {0}, no_tensors), LLM_PARAM_INVALID); }),
            1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.PullKvCache(Index(2, 1), c), LLM_NOT_YET_LINK); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.UnregisterKvCache(id + 100), LLM_KV_CACHE_NOT_EXIST); }), 1);
  // Not linked either way: the vendor asks the peer at the address given; nobody answers there.
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.UnlinkLlmClusters({Remote(2, 1)}, rets), LLM_UNLINK_FAILED); }), 1);
  // No llm.EnableSwitchRole needed (the vendor's C++ layer); a Prompt needs a listen address.
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.SetRole(LlmRole::kPrompt), LLM_PARAM_INVALID); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.SetRole(static_cast<LlmRole>(9)), LLM_PARAM_INVALID); }), 1);
  // Nobody listens there.
  EXPECT_EQ(dd.LinkLlmClusters({Remote(2, FreePort())}, rets, 500), LLM_LINK_FAILED);
  EXPECT_EQ(dd.UnregisterKvCache(id), LLM_SUCCESS);
}

TEST(LlmDataDist, AllocateCopyAndDeallocate) {
  LlmDataDist dd(1, LlmRole::kDecoder);
  ASSERT_EQ(dd.Initialize({}), LLM_SUCCESS);
  Cache a{}, b{};
  ASSERT_EQ(dd.AllocateCache(HostDesc(2, {4, 16}), a), LLM_SUCCESS);
  ASSERT_EQ(dd.AllocateCache(HostDesc(2, {8, 16}), b), LLM_SUCCESS);
  ASSERT_EQ(a.tensor_addrs.size(), 2u);
  EXPECT_EQ(a.cache_desc.shape, (std::vector<int64_t>{4, 16}));
  for (uint32_t t = 0; t < 2; ++t) {
    auto *p = reinterpret_cast<int32_t *>(a.tensor_addrs[t]);
    for (int i = 0; i < 64; ++i) p[i] = static_cast<int32_t>(t * 1000 + i);
    std::memset(reinterpret_cast<void *>(b.tensor_addrs[t]), 0, 8 * 16 * sizeof(int32_t));
  }
  auto at = [](const Cache &c, uint32_t t, int row, int e) {
    return reinterpret_cast<const int32_t *>(c.tensor_addrs[t])[row * 16 + e];
  };
  // Entry 1 of a -> entry 5 of b, bytes [16, 48) of the entry.
  ASSERT_EQ(dd.CopyKvCache(a, b, 1, 5, 16, 32), LLM_SUCCESS);
  EXPECT_EQ(at(b, 1, 5, 4), at(a, 1, 1, 4));
  EXPECT_EQ(at(b, 1, 5, 11), at(a, 1, 1, 11));
  EXPECT_EQ(at(b, 1, 5, 3), 0);
  EXPECT_EQ(at(b, 1, 5, 12), 0);
  // Blocks 0, 3 of a -> blocks 1, 2 and 6, 7 of b.
  ASSERT_EQ(dd.CopyKvBlocks(a, b, {0, 3}, {{1, 2}, {6, 7}}), LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t) {
    for (int e = 0; e < 16; ++e) {
      EXPECT_EQ(at(b, t, 1, e), at(a, t, 0, e));
      EXPECT_EQ(at(b, t, 7, e), at(a, t, 3, e));
    }
  }
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.CopyKvCache(a, b, 4, 0), LLM_PARAM_INVALID); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.CopyKvBlocks(a, b, {0}, {{1, 2}}), LLM_PARAM_INVALID); }), 1);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.UnregisterKvCache(a.cache_id), LLM_PARAM_INVALID); }), 1);
  Cache d{};
  CacheDesc dev = HostDesc(1, {1, 16});
  dev.placement = CachePlacement::kDevice;
  const Status s = dd.AllocateCache(dev, d);
  EXPECT_TRUE(s == LLM_SUCCESS || s == LLM_FEATURE_NOT_ENABLED) << s;
  EXPECT_EQ(dd.DeallocateCache(a.cache_id), LLM_SUCCESS);
  EXPECT_EQ(dd.DeallocateCache(a.cache_id), LLM_SUCCESS);  // already freed: the vendor's answer
  EXPECT_EQ(dd.DeallocateCache(b.cache_id), LLM_SUCCESS);
}

// DeallocateCache while a Finalize is under way: the cache layer already
// refuses new calls (its unregistration fails) but deregisters the cache
// only later.  The memory must not be freed before that: it stays a live
// block, and Finalize frees it.  The Finalize is held open by a link in
// flight to a peer that accepts TCP and never answers (it waits for the
// link to end); its cache-layer half is called directly, as
// LlmDataDist::Finalize calls it once DeallocateCache has passed its checks.
TEST(LlmDataDist, DeallocateCacheDuringAFinalizeLeavesTheMemoryToIt) {
  const adxl_test::SilentListener silent;
  ASSERT_TRUE(silent.ok());
  LlmDataDist dd(1, LlmRole::kDecoder);
  ASSERT_EQ(dd.Initialize({}), LLM_SUCCESS);
  Cache c{};
  ASSERT_EQ(dd.AllocateCache(HostDesc(1, {4, 16}), c), LLM_SUCCESS);
  void *mem = reinterpret_cast<void *>(c.tensor_addrs[0]);
  adxl::ShareableHandle handle{};
  ASSERT_EQ(adxl::AdxlEngine::ExportToShareableHandle(mem, handle), adxl::SUCCESS);  // a live block
  internal::CacheManager &cm = ext::DataDistAccess::Manager(dd);
  std::thread link([&] {
    std::vector<Status> rets;
    (void)cm.LinkClusters({{2, Listen(silent.port())}}, rets, 2000);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the link is under way
  std::atomic<bool> finalized{false};
  std::thread finalize([&] {
    cm.Finalize();
    finalized = true;
  });
  std::vector<adxl::NotifyDesc> notifies;
  for (int i = 0; i < 100 && cm.GetNotifies(notifies) == LLM_SUCCESS; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(cm.GetNotifies(notifies), LLM_FAILED);  // finalizing
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(dd.DeallocateCache(c.cache_id), LLM_FAILED); }), 1);
  // The premise: the Finalize has not deregistered the cache yet.
  EXPECT_FALSE(finalized);
  EXPECT_EQ(cm.RegisteredAddrCount(), 1u);
  EXPECT_EQ(adxl::AdxlEngine::ExportToShareableHandle(mem, handle), adxl::SUCCESS)
      << "DeallocateCache freed memory that was still registered";
  link.join();
  finalize.join();
  EXPECT_EQ(cm.RegisteredAddrCount(), 0u);
  EXPECT_EQ(adxl::AdxlEngine::ExportToShareableHandle(mem, handle), adxl::SUCCESS);  // until dd's Finalize
  dd.Finalize();
  EXPECT_EQ(ErrorLines([&] { EXPECT_NE(adxl::AdxlEngine::ExportToShareableHandle(mem, handle), adxl::SUCCESS); }),
            1);  // freed now
}

// A Prompt holding a cache, a Decoder pulling from it and pushing into it.
TEST(LlmDataDist, PullAndPushBetweenTwoClusters) {
  LinkedPair pair(4, 8, 7);
  ASSERT_NO_FATAL_FAILURE(pair.SetUp({{OPTION_SYNC_CACHE_WAIT_TIME, "3000"}}));
  const int64_t pid = pair.pc.cache_id;
  std::vector<Status> rets;
  EXPECT_EQ(pair.decoder.LinkLlmClusters({Remote(1, pair.port)}, rets, 3000), LLM_ALREADY_LINK);
  // Batch entry 3 of every tensor -> local entry 2.
  ASSERT_EQ(pair.decoder.PullKvCache(Index(1, pid, 3), pair.dc, 2), LLM_SUCCESS);
  for (uint32_t t = 0; t < 4; ++t) EXPECT_TRUE(pair.d.Row(t, 2, pair.p, t, 3)) << t;
  // Layer 1 only ({1, 1}: tensors 2 and 3), entry 5 -> entry 6.
  KvCacheExtParam layer1{};
  layer1.src_layer_range = {1, 1};
  layer1.dst_layer_range = {1, 1};
  ASSERT_EQ(pair.decoder.PullKvCache(Index(1, pid, 5), pair.dc, 6, -1, layer1), LLM_SUCCESS);
  EXPECT_TRUE(pair.d.Row(2, 6, pair.p, 2, 5));
  EXPECT_TRUE(pair.d.Row(3, 6, pair.p, 3, 5));
  EXPECT_FALSE(pair.d.Row(0, 6, pair.p, 0, 5));
  // Blocks 0, 1 -> 4, 7; and a batch entry (no source blocks) cut into block 0.
  ASSERT_EQ(pair.decoder.PullKvBlocks(Index(1, pid), pair.dc, {0, 1}, {4, 7}), LLM_SUCCESS);
  for (uint32_t t = 0; t < 4; ++t) EXPECT_TRUE(pair.d.Row(t, 4, pair.p, t, 0) && pair.d.Row(t, 7, pair.p, t, 1)) << t;
  ASSERT_EQ(pair.decoder.PullKvBlocks(Index(1, pid, 6), pair.dc, {}, {0}), LLM_SUCCESS);
  for (uint32_t t = 0; t < 4; ++t) EXPECT_TRUE(pair.d.Row(t, 0, pair.p, t, 6)) << t;
  // Push back: decoder blocks 4 -> prompt block 2, decoder entry 0 -> prompt entry 1 (tensor pairs per layer).
  ASSERT_EQ(pair.decoder.PushKvBlocks(pair.dc, Index(1, pid), {4}, {2}), LLM_SUCCESS);
  for (uint32_t t = 0; t < 4; ++t) EXPECT_TRUE(pair.p.Row(t, 2, pair.d, t, 4)) << t;
  ASSERT_EQ(pair.decoder.PushKvCache(pair.dc, Index(1, pid, 1), 0), LLM_SUCCESS);
  for (uint32_t t = 0; t < 4; ++t) EXPECT_TRUE(pair.p.Row(t, 1, pair.d, t, 0)) << t;
  // Unknown remote cache; out-of-range block.
  EXPECT_EQ(
      ErrorLines([&] { EXPECT_EQ(pair.decoder.PullKvCache(Index(1, pid + 50), pair.dc), LLM_KV_CACHE_NOT_EXIST); }), 1);
  EXPECT_EQ(
      ErrorLines([&] { EXPECT_EQ(pair.decoder.PullKvBlocks(Index(1, pid), pair.dc, {8}, {0}), LLM_PARAM_INVALID); }),
      1);
  ASSERT_EQ(pair.decoder.UnlinkLlmClusters({Remote(1, pair.port)}, rets, 3000), LLM_SUCCESS);
  // Forced: nothing to destroy is the vendor's LLM_SUCCESS (its DestroyEntity of a missing entity).
  EXPECT_EQ(pair.decoder.UnlinkLlmClusters({Remote(1, pair.port)}, rets, 3000, true), LLM_SUCCESS);
  EXPECT_EQ(rets, std::vector<Status>{LLM_SUCCESS});
}

// SetRole moves the listener; the cache keeps its id and can be pulled there.
TEST(LlmDataDist, SetRoleMovesTheListenerAndKeepsCaches) {
  LlmDataDist a(1, LlmRole::kDecoder), b(2, LlmRole::kDecoder);
  ASSERT_EQ(a.Initialize({{OPTION_ENABLE_SET_ROLE, "1"}}), LLM_SUCCESS);
  ASSERT_EQ(b.Initialize({}), LLM_SUCCESS);
  Tensors src(2, 4, 3), dst(2, 4, 0);
  int64_t aid = -1, bid = -1;
  ASSERT_EQ(a.RegisterKvCache(HostDesc(2, {4, 16}), src.addrs(), {}, aid), LLM_SUCCESS);
  ASSERT_EQ(b.RegisterKvCache(HostDesc(2, {4, 16}), dst.addrs(), {}, bid), LLM_SUCCESS);
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(a.SetRole(LlmRole::kPrompt), LLM_PARAM_INVALID); }), 1);
  const uint16_t port = FreePort();
  ASSERT_EQ(a.SetRole(LlmRole::kPrompt, {{OPTION_LISTEN_IP_INFO, Listen(port).c_str()}}), LLM_SUCCESS);
  std::vector<Status> rets;
  ASSERT_EQ(b.LinkLlmClusters({Remote(1, port)}, rets, 3000), LLM_SUCCESS);
  Cache bc{};
  bc.cache_id = bid;
  ASSERT_EQ(b.PullKvCache(Index(1, aid, 2), bc, 3), LLM_SUCCESS);
  EXPECT_TRUE(dst.Row(0, 3, src, 0, 2) && dst.Row(1, 3, src, 1, 2));
  // b's link is incoming at a: a cannot move while it exists.
  EXPECT_EQ(ErrorLines([&] {
              EXPECT_EQ(a.SetRole(LlmRole::kPrompt, {{OPTION_LISTEN_IP_INFO, Listen(FreePort()).c_str()}}),
                        LLM_EXIST_LINK);
            }),
            1);
  ASSERT_EQ(b.UnlinkLlmClusters({Remote(1, port)}, rets, 3000), LLM_SUCCESS);
  EXPECT_EQ(a.SetRole(LlmRole::kDecoder), LLM_SUCCESS);
}

// As the vendor's C++ prompt/decoder switch-roles examples: only llm.DeviceId
// and llm.ListenIpInfo at Initialize (no llm.EnableSwitchRole).  A switch
// without llm.ListenIpInfo stops listening, one with it listens there again;
// the cache stays registered under its id; a link either way refuses a switch.
TEST(LlmDataDist, SetRoleWithoutEnableSwitchRoleAsTheVendorsExamples) {
  const uint16_t p1 = FreePort(), p2 = FreePort();
  LlmDataDist a(1, LlmRole::kPrompt), b(2, LlmRole::kDecoder);
  ASSERT_EQ(a.Initialize({{OPTION_DEVICE_ID, "0"}, {OPTION_LISTEN_IP_INFO, Listen(p1).c_str()}}), LLM_SUCCESS);
  ASSERT_EQ(b.Initialize({{OPTION_DEVICE_ID, "0"}}), LLM_SUCCESS);
  Tensors src(2, 4, 5), dst(2, 4, 0);
  int64_t aid = -1, bid = -1;
  ASSERT_EQ(a.RegisterKvCache(HostDesc(2, {4, 16}), src.addrs(), {}, aid), LLM_SUCCESS);
  ASSERT_EQ(b.RegisterKvCache(HostDesc(2, {4, 16}), dst.addrs(), {}, bid), LLM_SUCCESS);
  std::vector<Status> rets;
  ASSERT_EQ(a.SetRole(LlmRole::kDecoder), LLM_SUCCESS);  // stops listening
  EXPECT_EQ(b.LinkLlmClusters({Remote(1, p1)}, rets, 500), LLM_LINK_FAILED);
  ASSERT_EQ(a.SetRole(LlmRole::kPrompt, {{OPTION_LISTEN_IP_INFO, Listen(p2).c_str()}}), LLM_SUCCESS);
  ASSERT_EQ(b.LinkLlmClusters({Remote(1, p2)}, rets, 3000), LLM_SUCCESS);
  EXPECT_EQ(a.SetRole(LlmRole::kDecoder), LLM_EXIST_LINK);  // linked from b
  EXPECT_EQ(b.SetRole(LlmRole::kDecoder), LLM_EXIST_LINK);  // b links to a
  Cache bc{};
  bc.cache_id = bid;
  ASSERT_EQ(b.PullKvCache(Index(1, aid, 1), bc, 2), LLM_SUCCESS);
  EXPECT_TRUE(dst.Row(0, 2, src, 0, 1) && dst.Row(1, 2, src, 1, 1));
  ASSERT_EQ(b.UnlinkLlmClusters({Remote(1, p2)}, rets, 3000, true), LLM_SUCCESS);
  ASSERT_EQ(a.UnlinkLlmClusters({Remote(2, 0)}, rets, 3000, true), LLM_SUCCESS);  // the side that never linked
  EXPECT_EQ(a.SetRole(LlmRole::kDecoder), LLM_SUCCESS);
}

// Links are two-way on the default backend, also when the linking side has no
// llm.ListenIpInfo (the vendor's switch_role sample: a cluster that stopped
// listening links and is pushed to over that link): it starts listening on an
// ephemeral port at its first link, and the linked cluster connects back.
TEST(LlmDataDist, ALinkingSideWithoutListenAddressIsPushedToOverItsLink) {
  LinkedPair pair(2, 4, 9);
  ASSERT_NO_FATAL_FAILURE(pair.SetUp());
  const int64_t pid = pair.pc.cache_id, did = pair.dc.cache_id;
  std::vector<Status> rets;
  ASSERT_EQ(pair.prompt.PushKvBlocks(pair.pc, Index(2, did), {0, 3}, {1, 2}), LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t) EXPECT_TRUE(pair.d.Row(t, 1, pair.p, t, 0) && pair.d.Row(t, 2, pair.p, t, 3)) << t;
  ASSERT_EQ(pair.decoder.PullKvBlocks(Index(1, pid), pair.dc, {2}, {3}),
            LLM_SUCCESS);  // and the linking side still pulls
  for (uint32_t t = 0; t < 2; ++t) EXPECT_TRUE(pair.d.Row(t, 3, pair.p, t, 2)) << t;
  ASSERT_EQ(pair.decoder.UnlinkLlmClusters({Remote(1, pair.port)}, rets, 3000, true), LLM_SUCCESS);
  ASSERT_EQ(pair.prompt.UnlinkLlmClusters({Remote(2, 0)}, rets, 3000, true), LLM_SUCCESS);
}

// The call's result is the last failure among the clusters, as the vendor's
// LLMLinkManager; rets has each cluster's own.
TEST(LlmDataDist, LinkResultIsTheLastFailure) {
  LlmDataDist decoder(2, LlmRole::kDecoder);
  ASSERT_EQ(decoder.Initialize({}), LLM_SUCCESS);
  ClusterInfo no_ip{};
  no_ip.remote_cluster_id = 5;
  const ClusterInfo nobody = Remote(6, FreePort());  // nothing listens there
  std::vector<Status> rets;
  EXPECT_EQ(decoder.LinkLlmClusters({no_ip, nobody}, rets, 500), LLM_LINK_FAILED);
  EXPECT_EQ(rets, (std::vector<Status>{LLM_PARAM_INVALID, LLM_LINK_FAILED}));
  EXPECT_EQ(decoder.LinkLlmClusters({nobody, no_ip}, rets, 500), LLM_PARAM_INVALID);
  EXPECT_EQ(rets, (std::vector<Status>{LLM_LINK_FAILED, LLM_PARAM_INVALID}));
  // Unlink: nobody answers at port 1 for 6, 7 has no ip info (unforced): the last failure.
  ClusterInfo seven{};
  seven.remote_cluster_id = 7;
  EXPECT_EQ(decoder.UnlinkLlmClusters({Remote(6, 1), seven}, rets, 500), LLM_PARAM_INVALID);
  EXPECT_EQ(rets, (std::vector<Status>{LLM_UNLINK_FAILED, LLM_PARAM_INVALID}));
  EXPECT_EQ(decoder.UnlinkLlmClusters({seven, Remote(6, 1)}, rets, 500), LLM_UNLINK_FAILED);
  // The same through the cache layer's own loop: 2 is this cluster.
  EXPECT_EQ(decoder.LinkLlmClusters({Remote(2, 1), nobody}, rets, 500), LLM_LINK_FAILED);
  EXPECT_EQ(rets, (std::vector<Status>{LLM_PARAM_INVALID, LLM_LINK_FAILED}));
  EXPECT_EQ(decoder.LinkLlmClusters({nobody, Remote(2, 1)}, rets, 500), LLM_PARAM_INVALID);
}

// Without force_flag the vendor's default backend wants exactly one remote ip
// info per cluster (it asks the peer there): LLM_PARAM_INVALID, one ERROR
// line, and the link stays.
TEST(LlmDataDist, UnforcedUnlinkWithoutRemoteIpIsRefusedAndKeepsTheLink) {
  LinkedPair pair(2, 4, 11);
  ASSERT_NO_FATAL_FAILURE(pair.SetUp());
  const int64_t pid = pair.pc.cache_id;
  std::vector<Status> rets;
  ClusterInfo only_id{};
  only_id.remote_cluster_id = 1;
  ClusterInfo two_ips = Remote(1, pair.port);
  two_ips.remote_ip_infos.push_back(two_ips.remote_ip_infos[0]);
  for (const ClusterInfo &c : {only_id, two_ips}) {
    EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(pair.decoder.UnlinkLlmClusters({c}, rets, 3000), LLM_PARAM_INVALID); }), 1);
    EXPECT_EQ(rets, std::vector<Status>{LLM_PARAM_INVALID});
  }
  ASSERT_EQ(pair.decoder.PullKvBlocks(Index(1, pid), pair.dc, {1}, {2}), LLM_SUCCESS);  // still linked
  for (uint32_t t = 0; t < 2; ++t) EXPECT_TRUE(pair.d.Row(t, 2, pair.p, t, 1)) << t;
  EXPECT_EQ(pair.decoder.UnlinkLlmClusters({Remote(1, pair.port)}, rets, 3000), LLM_SUCCESS);
  EXPECT_EQ(pair.prompt.UnlinkLlmClusters({only_id}, rets, 3000, true), LLM_SUCCESS);
}

// Bad input on a linked pair (docs/cache_layer.md, "Bad input on these
// paths"): each refusal is the vendor's status with one ERROR line, and the
// link and the caches still work (a pull, bytes checked, after each).
TEST(LlmDataDist, BadInputOnALinkedPairKeepsTheLinkAndCaches) {
  LinkedPair pair(2, 4, 11);
  ASSERT_NO_FATAL_FAILURE(pair.SetUp());
  const int64_t pid = pair.pc.cache_id;
  std::vector<Status> rets;
  uint32_t round = 0;
  auto still_works = [&] {
    const uint32_t src = round % 4, dst = (round + 1) % 4;
    ++round;
    ASSERT_EQ(pair.decoder.PullKvBlocks(Index(1, pid), pair.dc, {src}, {dst}), LLM_SUCCESS);
    for (uint32_t t = 0; t < 2; ++t) EXPECT_TRUE(pair.d.Row(t, dst, pair.p, t, src)) << t;
  };
  still_works();
  for (const int32_t timeout : {0, -1}) {
    for (const bool force : {false, true}) {
      EXPECT_EQ(ErrorLines([&] {
                  EXPECT_EQ(pair.decoder.UnlinkLlmClusters({Remote(1, pair.port)}, rets, timeout, force),
                            LLM_PARAM_INVALID);
                }),
                1);
      still_works();
    }
  }
  const std::string elsewhere = Listen(FreePort());
  EXPECT_EQ(ErrorLines([&] {
              EXPECT_EQ(pair.decoder.SetRole(LlmRole::kPrompt, {{OPTION_LISTEN_IP_INFO, elsewhere.c_str()}}),
                        LLM_EXIST_LINK);
            }),
            1);
  still_works();
  EXPECT_EQ(
      ErrorLines([&] { EXPECT_EQ(pair.decoder.PullKvBlocks(Index(1, pid), pair.dc, {4}, {0}), LLM_PARAM_INVALID); }),
      1);
  still_works();
  int64_t again = -1;  // the same addresses again, after the link
  EXPECT_EQ(ErrorLines([&] {
              EXPECT_EQ(pair.decoder.RegisterKvCache(HostDesc(2, {4, 16}), pair.d.addrs(), {}, again),
                        LLM_PARAM_INVALID);
            }),
            1);
  still_works();
  EXPECT_EQ(pair.decoder.UnlinkLlmClusters({Remote(1, pair.port)}, rets, 3000), LLM_SUCCESS);
}

}  // namespace
}  // namespace llm_datadist
