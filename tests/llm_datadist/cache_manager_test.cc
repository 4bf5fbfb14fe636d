// CacheManager contract (docs/contract.md §10): registration rules in one process, and
// pull / push between two processes (a forked holder) on loopback.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "child_guard.h"
#include "free_port.h"
#include "cache_manager.h"
#include "metadata.h"

namespace llm_datadist::internal {
namespace {

using adxl_test::ChildGuard;
using adxl_test::FreePort;

CacheDesc HostDesc(uint32_t n, std::vector<int64_t> shape) {
  CacheDesc d;
  d.num_tensors = n;
  d.shape = std::move(shape);
  d.data_type = DataType::DT_FLOAT16;
  d.placement = Placement::HOST;
  return d;
}

struct Tensors {
  Tensors(size_t n, size_t bytes) : bufs(n, std::vector<uint8_t>(bytes)) {}
  std::vector<uintptr_t> addrs() {
    std::vector<uintptr_t> a;
    for (auto &b : bufs) a.push_back(reinterpret_cast<uintptr_t>(b.data()));
    return a;
  }
  std::vector<std::vector<uint8_t>> bufs;
};

TEST(CacheTypes, SizesAndNames) {
  EXPECT_EQ(DataTypeSize(DataType::DT_BF16), 2u);
  EXPECT_EQ(DataTypeSize(DataType::DT_DOUBLE), 8u);
  EXPECT_EQ(TensorBytes(HostDesc(1, {4, 8})), 64u);
  EXPECT_EQ(TensorBytes(HostDesc(1, {4, 0})), 0u);
  EXPECT_EQ(TensorBytes(HostDesc(1, {})), 0u);
  EXPECT_STREQ(StatusName(LLM_EXIST_LINK), "LLM_EXIST_LINK");
  // The type table the Python package binds: every row a sized type, names and values unique.
  std::set<std::string> names;
  std::set<int32_t> values;
  for (const DataTypeInfo &t : kDataTypeTable) {
    EXPECT_GT(DataTypeSize(t.value), 0u) << t.name;
    EXPECT_TRUE(names.insert(t.name).second) << t.name;
    EXPECT_TRUE(values.insert(static_cast<int32_t>(t.value)).second) << t.name;
  }
  EXPECT_EQ(names.size(), 13u);
}

TEST(Metadata, RoundTripAndMalformed) {
  CacheRecord r;
  r.cache_id = 7;
  r.paged = true;
  r.desc = HostDesc(2, {16, 4});
  r.addrs = {0x1000, 0x2000};
  r.keys = {CacheKey{3, 11, 1, 5}};
  r.blocks_key = BlocksCacheKey{3, 9};
  auto bytes = SerializeRecords({r});
  std::vector<CacheRecord> out;
  ASSERT_TRUE(ParseRecords(bytes.data(), bytes.size(), 3, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cache_id, 7);
  EXPECT_EQ(out[0].addrs, r.addrs);
  EXPECT_EQ(out[0].keys[0].req_id, 11u);
  EXPECT_EQ(out[0].keys[0].cluster_id, 3u);
  EXPECT_EQ(out[0].blocks_key->model_id, 9u);
  for (size_t cut = 0; cut < bytes.size(); ++cut) EXPECT_FALSE(ParseRecords(bytes.data(), cut, 3, &out)) << cut;
  bytes.push_back(0);
  EXPECT_FALSE(ParseRecords(bytes.data(), bytes.size(), 3, &out));
}

TEST(CacheManagerRules, LifecycleAndRegistration) {
  CacheManager m;
  Cache c;
  Tensors t(2, 64);
  EXPECT_EQ(m.RegisterCache(HostDesc(2, {4, 8}), t.addrs(), {}, std::nullopt, c), LLM_FAILED);  // before Initialize
  ASSERT_EQ(m.Initialize(1, "127.0.0.1:" + std::to_string(FreePort())), LLM_SUCCESS);
  EXPECT_EQ(m.Initialize(1, "127.0.0.1"), LLM_FAILED);
  // one address per tensor
  EXPECT_EQ(m.RegisterCache(HostDesc(3, {4, 8}), t.addrs(), {}, std::nullopt, c), LLM_PARAM_INVALID);
  // bad descriptions
  EXPECT_EQ(m.RegisterCache(HostDesc(2, {4, -1}), t.addrs(), {}, std::nullopt, c), LLM_PARAM_INVALID);
  CacheDesc bad = HostDesc(2, {4, 8});
  bad.data_type = static_cast<DataType>(99);
  EXPECT_EQ(m.RegisterCache(bad, t.addrs(), {}, std::nullopt, c), LLM_PARAM_INVALID);
  // repeated address in one call
  EXPECT_EQ(m.RegisterCache(HostDesc(2, {4, 8}), {t.addrs()[0], t.addrs()[0]}, {}, std::nullopt, c),
            LLM_PARAM_INVALID);
  // host default: not remote accessible
  ASSERT_EQ(m.RegisterCache(HostDesc(2, {4, 8}), t.addrs(), {CacheKey{1, 5}}, std::nullopt, c), LLM_SUCCESS);
  EXPECT_GT(c.cache_id, 0);
  EXPECT_FALSE(c.remote_accessible);
  EXPECT_FALSE(c.paged);
  EXPECT_EQ(m.RegisteredAddrCount(), 2u);
  // the same address again (unique addresses over all registrations)
  Tensors u(1, 64);
  Cache c2;
  EXPECT_EQ(m.RegisterCache(HostDesc(2, {4, 8}), {u.addrs()[0], t.addrs()[1]}, {}, std::nullopt, c2),
            LLM_PARAM_INVALID);
  // key rules: other cluster, duplicate key, more keys than the batch
  EXPECT_EQ(m.RegisterCache(HostDesc(1, {4, 8}), u.addrs(), {CacheKey{2, 6}}, std::nullopt, c2), LLM_PARAM_INVALID);
  EXPECT_EQ(m.RegisterCache(HostDesc(1, {4, 8}), u.addrs(), {CacheKey{1, 5}}, std::nullopt, c2),
            LLM_CACHE_KEY_ALREADY_EXIST);
  EXPECT_EQ(m.RegisterCache(HostDesc(1, {1, 8}), u.addrs(), {CacheKey{1, 7}, CacheKey{1, 8}}, std::nullopt, c2),
            LLM_PARAM_INVALID);
  // blocks key of another cluster; then a good paged cache, and its key twice
  EXPECT_EQ(m.RegisterBlocksCache(HostDesc(1, {4, 8}), u.addrs(), BlocksCacheKey{2, 0}, true, c2), LLM_PARAM_INVALID);
  ASSERT_EQ(m.RegisterBlocksCache(HostDesc(1, {4, 8}), u.addrs(), BlocksCacheKey{1, 0}, true, c2), LLM_SUCCESS);
  EXPECT_TRUE(c2.paged);
  EXPECT_TRUE(c2.remote_accessible);
  Tensors w(1, 64);
  Cache c3;
  EXPECT_EQ(m.RegisterBlocksCache(HostDesc(1, {4, 8}), w.addrs(), BlocksCacheKey{1, 0}, true, c3),
            LLM_CACHE_KEY_ALREADY_EXIST);
  // unregister
  EXPECT_EQ(m.UnregisterCache(c2.cache_id), LLM_SUCCESS);
  EXPECT_EQ(m.UnregisterCache(c2.cache_id), LLM_KV_CACHE_NOT_EXIST);
  EXPECT_EQ(m.RegisteredAddrCount(), 2u);
  // transfers: own cluster, not linked, unknown local cache
  EXPECT_EQ(m.PullCache(CacheKey{1, 5}, c), LLM_PARAM_INVALID);
  EXPECT_EQ(m.PullCache(CacheKey{2, 5}, c), LLM_NOT_YET_LINK);
  EXPECT_EQ(m.PullBlocks(BlocksCacheKey{2, 0}, c2, {0}, {0}), LLM_KV_CACHE_NOT_EXIST);
  EXPECT_EQ(m.SetSyncTimeout(0), LLM_PARAM_INVALID);
  std::vector<Status> rets;
  EXPECT_EQ(m.LinkClusters({{1, "127.0.0.1:1"}}, rets), LLM_PARAM_INVALID);  // own cluster
  // Not linked either way: the peer is asked there (the vendor's), and nobody answers.
  EXPECT_EQ(m.UnlinkClusters({{2, "127.0.0.1:1"}}, rets), LLM_UNLINK_FAILED);
  m.Finalize();
  m.Finalize();
  EXPECT_EQ(m.UnregisterCache(c.cache_id), LLM_FAILED);
}

// RemoveCacheKey of a published cache returns once every linked peer holds
// the new table: a pull by that key right after it (no pause) is
// LLM_KV_CACHE_NOT_EXIST, never a read of memory its owner may be reusing.
// 20 keys in turn; before the call waited, the peer still held the old table
// here most of the time.
TEST(CacheManagerRules, ARemovedKeyIsGoneForALinkedPeerWhenTheCallReturns) {
  constexpr uint32_t kKeys = 20;
  const std::string name = "127.0.0.1:" + std::to_string(FreePort());
  CacheManager holder, puller;
  ASSERT_EQ(holder.Initialize(1, name), LLM_SUCCESS);
  ASSERT_EQ(puller.Initialize(2, "127.0.0.1"), LLM_SUCCESS);
  Tensors src(1, kKeys * 64), dst(1, 64);
  std::vector<CacheKey> keys;
  for (uint32_t i = 0; i < kKeys; ++i) keys.push_back(CacheKey{1, 100 + i});
  Cache sc, dc;
  ASSERT_EQ(holder.RegisterCache(HostDesc(1, {kKeys, 32}), src.addrs(), keys, true, sc), LLM_SUCCESS);
  ASSERT_EQ(puller.RegisterCache(HostDesc(1, {1, 32}), dst.addrs(), {}, std::nullopt, dc), LLM_SUCCESS);
  std::vector<Status> rets;
  ASSERT_EQ(puller.LinkClusters({{1, name}}, rets), LLM_SUCCESS);
  for (const CacheKey &k : keys) {
    ASSERT_EQ(puller.PullCache(k, dc), LLM_SUCCESS) << k.req_id;
    ASSERT_EQ(holder.RemoveCacheKey(k), LLM_SUCCESS) << k.req_id;
    EXPECT_EQ(puller.PullCache(k, dc), LLM_KV_CACHE_NOT_EXIST) << "key " << k.req_id << " still read after its removal";
  }
  EXPECT_EQ(holder.RemoveCacheKey(keys[0]), LLM_KV_CACHE_NOT_EXIST);
  puller.Finalize();
  holder.Finalize();
}

// The shared start of the calls that do I/O outside the manager's lock:
// after Finalize each fails with LLM_FAILED and one log line naming it.
TEST(CacheManagerRules, CallsAfterFinalizeFailWithOneLineNamingThem) {
  CacheManager m;
  ASSERT_EQ(m.Initialize(1, "127.0.0.1:" + std::to_string(FreePort())), LLM_SUCCESS);
  m.Finalize();
  std::vector<Status> rets;
  CacheTask task;
  const std::vector<std::pair<const char *, std::function<Status()>>> calls = {
      {"LinkClusters", [&] { return m.LinkClusters({{2, "127.0.0.1:1"}}, rets); }},
      {"UnlinkClusters", [&] { return m.UnlinkClusters({{2, "127.0.0.1:1"}}, rets); }},
      {"UnregisterCache", [&] { return m.UnregisterCache(1); }},
      {"PullCache", [&] { return m.PullCache(CacheKey{2, 5}, Cache{}); }},
      {"TransferCacheAsync", [&] { return m.TransferCacheAsync(Cache{}, nullptr, {}, {}, {}, 0, task); }},
      {"CheckLinkStatus", [&] { return m.CheckLinkStatus(2); }},
  };
  for (const auto &call : calls) {
    testing::internal::CaptureStderr();
    const Status s = call.second();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(s, LLM_FAILED) << call.first;
    size_t lines = 0;
    for (size_t p = err.find(" ERROR "); p != std::string::npos; p = err.find(" ERROR ", p + 1)) ++lines;
    EXPECT_EQ(lines, 1u) << call.first << ": " << err;
    EXPECT_NE(err.find(call.first), std::string::npos) << call.first << ": " << err;
  }
  EXPECT_EQ(rets, std::vector<Status>(1, LLM_FAILED));  // UnlinkClusters' per-cluster result
}

// The options of an Initialize that fails leave no trace: a later one
// without llm.TransferBackend links two-way.  Seen through UnlinkClusters of
// a cluster with no link and no address: two-way refuses it
// (LLM_PARAM_INVALID, it would ask the peer there), one-way says
// LLM_NOT_YET_LINK.  The hixl Initialize fails in the engine: its address is
// taken by another engine's listener.
TEST(CacheManagerRules, AFailedInitializeLeavesNoTraceOfItsOptions) {
  const std::map<adxl::AscendString, adxl::AscendString> hixl = {{"llm.TransferBackend", "hixl"}};
  const std::string taken = "127.0.0.1:" + std::to_string(FreePort());
  CacheManager holder, m;
  ASSERT_EQ(holder.Initialize(1, taken), LLM_SUCCESS);
  std::vector<Status> rets;
  ASSERT_EQ(m.Initialize(2, "127.0.0.1", hixl), LLM_SUCCESS);
  EXPECT_EQ(m.UnlinkClusters({{3, ""}}, rets), LLM_NOT_YET_LINK);  // the observation tells the two apart
  m.Finalize();
  ASSERT_NE(m.Initialize(2, taken, hixl), LLM_SUCCESS);
  ASSERT_EQ(m.Initialize(2, "127.0.0.1"), LLM_SUCCESS);
  EXPECT_EQ(m.UnlinkClusters({{3, ""}}, rets), LLM_PARAM_INVALID) << "still one-way after the failed Initialize";
  m.Finalize();
  holder.Finalize();
}

// Notifies read by one instance and never fetched go with its Finalize: a
// GetNotifies after the next Initialize does not return them.  The notify
// is read into the manager by a forced unlink of nothing (it drains the
// engine's notifies first); SendNotify returns once the receiver has it.
TEST(CacheManagerRules, NotifiesOfAFinalizedInstanceAreNotReturnedAfterTheNextInitialize) {
  const std::string name = "127.0.0.1:" + std::to_string(FreePort());
  CacheManager m;
  ASSERT_EQ(m.Initialize(1, name), LLM_SUCCESS);
  adxl::AdxlEngine sender;
  ASSERT_EQ(sender.Initialize("127.0.0.1", {}), adxl::SUCCESS);
  ASSERT_EQ(sender.Connect(name.c_str(), 3000), adxl::SUCCESS);
  adxl::NotifyDesc n;
  n.name = "user";
  n.notify_msg = "of the first instance";
  ASSERT_EQ(sender.SendNotify(name.c_str(), n, 3000), adxl::SUCCESS);
  std::vector<Status> rets;
  ASSERT_EQ(m.UnlinkClusters({{3, ""}}, rets, 1000, true), LLM_SUCCESS);
  m.Finalize();
  ASSERT_EQ(m.Initialize(1, "127.0.0.1"), LLM_SUCCESS);
  std::vector<adxl::NotifyDesc> got;
  EXPECT_EQ(m.GetNotifies(got), LLM_SUCCESS);
  EXPECT_TRUE(got.empty()) << got.size() << " notifies, the first: " << got[0].notify_msg.GetString();
  m.Finalize();
  sender.Finalize();
}

TEST(CacheManagerRules, AtMost240Addresses) {
  CacheManager m;
  ASSERT_EQ(m.Initialize(1, "127.0.0.1"), LLM_SUCCESS);
  std::vector<uint8_t> arena(241 * 64);
  auto at = [&](size_t i) { return reinterpret_cast<uintptr_t>(arena.data() + i * 64); };
  std::vector<uintptr_t> first;
  for (size_t i = 0; i < 200; ++i) first.push_back(at(i));
  Cache c;
  ASSERT_EQ(m.RegisterCache(HostDesc(200, {1, 32}), first, {}, std::nullopt, c), LLM_SUCCESS);
  std::vector<uintptr_t> more;
  for (size_t i = 200; i < 241; ++i) more.push_back(at(i));
  Cache c2;
  EXPECT_EQ(m.RegisterBlocksCache(HostDesc(41, {1, 32}), more, std::nullopt, std::nullopt, c2),
            LLM_RESOURCE_EXHAUSTED);
  more.pop_back();
  EXPECT_EQ(m.RegisterBlocksCache(HostDesc(40, {1, 32}), more, std::nullopt, std::nullopt, c2), LLM_SUCCESS);
  EXPECT_EQ(m.RegisteredAddrCount(), 240u);
}

// Device caches: remote accessible by default, and not once a link exists
// (outgoing here; incoming via the link notify).  Host caches any time.
TEST(CacheManagerRules, DeviceOrderingAndDefaults) {
  const std::string holder_name = "127.0.0.1:" + std::to_string(FreePort());
  CacheManager holder, puller;
  ASSERT_EQ(holder.Initialize(10, holder_name), LLM_SUCCESS);
  ASSERT_EQ(puller.Initialize(20, "127.0.0.1"), LLM_SUCCESS);
  CacheDesc dev = HostDesc(1, {2, 8});
  dev.placement = Placement::DEVICE;
  Tensors t(4, 32);
  std::vector<Status> rets;
  ASSERT_EQ(puller.LinkClusters({{10, holder_name}}, rets), LLM_SUCCESS);
  EXPECT_EQ(puller.LinkClusters({{10, holder_name}}, rets), LLM_ALREADY_LINK);
  Cache c;
  // puller has an outgoing link; holder has an incoming one: remote-accessible
  // device caches may still be registered (the vendor's rule; the engine has
  // no device runtime for this host memory, so it answers UNSUPPORTED or SUCCESS)
  for (CacheManager *m : {&puller, &holder}) {
    const Status r = m->RegisterCache(dev, {t.addrs()[m == &puller ? 0 : 1]}, {}, true, c);
    EXPECT_TRUE(r == LLM_SUCCESS || r == LLM_UNSUPPORTED) << r;
    if (r == LLM_SUCCESS) {
      EXPECT_EQ(m->UnregisterCache(c.cache_id), LLM_SUCCESS);
    }
  }
  // not remote accessible: the ordering rule does not apply (the engine has no
  // device runtime here, so it answers UNSUPPORTED or SUCCESS)
  Status s = holder.RegisterCache(dev, {t.addrs()[1]}, {}, false, c);
  EXPECT_TRUE(s == LLM_SUCCESS || s == LLM_UNSUPPORTED) << s;
  // host caches any time, remote accessible or not
  EXPECT_EQ(holder.RegisterCache(HostDesc(1, {2, 8}), {t.addrs()[2]}, {}, true, c), LLM_SUCCESS);
  EXPECT_EQ(puller.RegisterCache(HostDesc(1, {2, 8}), {t.addrs()[3]}, {}, std::nullopt, c), LLM_SUCCESS);
  // a wrong cluster id for an engine is refused at link time
  CacheManager other;
  ASSERT_EQ(other.Initialize(30, "127.0.0.1"), LLM_SUCCESS);
  EXPECT_EQ(other.LinkClusters({{11, holder_name}}, rets), LLM_PARAM_INVALID);
  EXPECT_EQ(rets[0], LLM_PARAM_INVALID);
  // after unlink, the holder sees no link any more
  ASSERT_EQ(puller.UnlinkClusters({{10, holder_name}}, rets), LLM_SUCCESS);
  Status d = holder.RegisterCache(dev, {t.addrs()[0]}, {}, std::nullopt, c);
  EXPECT_NE(d, LLM_EXIST_LINK);
}

// ---- two processes -------------------------------------------------------

constexpr uint64_t kHolder = 1, kPuller = 2;
constexpr uint32_t kLayers = 3, kTensors = kLayers * 2, kBlocks = 8, kBlockElems = 64;
constexpr size_t kBlockBytes = kBlockElems * 2;  // fp16
constexpr size_t kBatch = 2, kEntryBytes = 4 * kBlockBytes;

uint8_t Pattern(uint32_t tensor, size_t byte, uint8_t salt) {
  return static_cast<uint8_t>(tensor * 31 + byte * 7 + salt);
}

// The holder: a paged cache (BlocksCacheKey{1,0}), a non-paged cache with
// keys (req 100, 101), both host + remote accessible, filled with a pattern.
// Waits for the parent, then checks what the parent pushed.
int RunHolder(const std::string &name, int up, int down) {
  CacheManager m;
  if (m.Initialize(kHolder, name) != LLM_SUCCESS) return 10;
  Tensors paged(kTensors, kBlocks * kBlockBytes), flat(kTensors, kBatch * kEntryBytes);
  for (uint32_t t = 0; t < kTensors; ++t) {
    for (size_t i = 0; i < paged.bufs[t].size(); ++i) paged.bufs[t][i] = Pattern(t, i, 1);
    for (size_t i = 0; i < flat.bufs[t].size(); ++i) flat.bufs[t][i] = Pattern(t, i, 2);
  }
  Cache pc, fc;
  if (m.RegisterBlocksCache(HostDesc(kTensors, {kBlocks, kBlockElems}), paged.addrs(), BlocksCacheKey{kHolder, 0},
                            true, pc) != LLM_SUCCESS)
    return 11;
  if (m.RegisterCache(HostDesc(kTensors, {kBatch, 4 * kBlockElems}), flat.addrs(),
                      {CacheKey{kHolder, 100}, CacheKey{kHolder, 101}}, true, fc) != LLM_SUCCESS)
    return 12;
  char ready = static_cast<char>(fc.cache_id);
  if (write(up, &ready, 1) != 1) return 13;
  char go = 0;
  if (read(down, &go, 1) != 1) return 14;
  // Late host cache (registered while the parent is linked), then wait again.
  Tensors late(2, kEntryBytes);
  for (auto &b : late.bufs) memset(b.data(), 0x5a, b.size());
  Cache lc;
  if (m.RegisterCache(HostDesc(2, {1, 4 * kBlockElems}), late.addrs(), {CacheKey{kHolder, 200}}, true, lc) !=
      LLM_SUCCESS)
    return 15;
  if (write(up, &ready, 1) != 1) return 16;
  if (read(down, &go, 1) != 1) return 17;
  // The parent pushed its pattern (salt 9) into paged blocks 6,7 of layer 2
  // and into flat batch entry 1 of every tensor.
  for (uint32_t t = 4; t < 6; ++t) {
    for (size_t i = 0; i < kBlockBytes; ++i) {
      if (paged.bufs[t][6 * kBlockBytes + i] != Pattern(t, 0 * kBlockBytes + i, 9)) return 20;
      if (paged.bufs[t][7 * kBlockBytes + i] != Pattern(t, 1 * kBlockBytes + i, 9)) return 21;
    }
  }
  for (uint32_t t = 0; t < kTensors; ++t) {
    for (size_t i = 0; i < kEntryBytes; ++i) {
      if (flat.bufs[t][kEntryBytes + i] != Pattern(t, i, 9)) return 22;
    }
  }
  if (m.UnregisterCache(lc.cache_id) != LLM_SUCCESS) return 23;
  if (write(up, &ready, 1) != 1) return 24;
  if (read(down, &go, 1) != 1) return 25;
  return 0;
}

TEST(CacheManagerTwoProcess, PullAndPush) {
  const std::string name = "127.0.0.1:" + std::to_string(FreePort());
  int up[2], down[2];
  ASSERT_EQ(pipe(up), 0);
  ASSERT_EQ(pipe(down), 0);
  pid_t child = fork();
  if (child == 0) {
    close(up[0]);
    close(down[1]);
    _exit(RunHolder(name, up[1], down[0]));
  }
  close(up[1]);
  close(down[0]);
  char flat_id = 0;
  ASSERT_EQ(read(up[0], &flat_id, 1), 1);

  CacheManager m;
  ASSERT_EQ(m.Initialize(kPuller, "127.0.0.1"), LLM_SUCCESS);
  std::vector<Status> rets;
  ASSERT_EQ(m.LinkClusters({{kHolder, name}}, rets), LLM_SUCCESS);
  Tensors paged(kTensors, kBlocks * kBlockBytes), flat(kTensors, kBatch * kEntryBytes);
  Cache pc, fc;
  ASSERT_EQ(m.RegisterBlocksCache(HostDesc(kTensors, {kBlocks, kBlockElems}), paged.addrs(), std::nullopt,
                                  std::nullopt, pc),
            LLM_SUCCESS);
  ASSERT_EQ(m.RegisterCache(HostDesc(kTensors, {kBatch, 4 * kBlockElems}), flat.addrs(), {}, std::nullopt, fc),
            LLM_SUCCESS);

  // Layer by layer: remote blocks {1,3} -> local {0,5}.
  for (uint32_t l = 0; l < kLayers; ++l) {
    LayerRangeArgs lr;
    lr.src_layer_range = LayerRange{l, l + 1};
    lr.dst_layer_range = LayerRange{l, l + 1};
    ASSERT_EQ(m.PullBlocks(BlocksCacheKey{kHolder, 0}, pc, {1, 3}, {0, 5}, lr), LLM_SUCCESS) << l;
  }
  for (uint32_t t = 0; t < kTensors; ++t) {
    for (size_t i = 0; i < kBlockBytes; ++i) {
      ASSERT_EQ(paged.bufs[t][0 * kBlockBytes + i], Pattern(t, 1 * kBlockBytes + i, 1));
      ASSERT_EQ(paged.bufs[t][5 * kBlockBytes + i], Pattern(t, 3 * kBlockBytes + i, 1));
    }
  }
  // By key (req 101 = remote batch 1) -> local batch 0.
  ASSERT_EQ(m.PullCache(CacheKey{kHolder, 101}, fc, 0), LLM_SUCCESS);
  for (uint32_t t = 0; t < kTensors; ++t)
    for (size_t i = 0; i < kEntryBytes; ++i) ASSERT_EQ(flat.bufs[t][i], Pattern(t, kEntryBytes + i, 2));
  // By id and index, a part of each entry, layer 1 of the source into layer 0.
  LayerRangeArgs one;
  one.src_layer_range = LayerRange{1, 2};
  one.dst_layer_range = LayerRange{0, 1};
  ASSERT_EQ(m.PullCache(CacheKeyByIdAndIndex{kHolder, flat_id, 0}, fc, 1, 16, one), LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t)
    for (size_t i = 0; i < 16; ++i) ASSERT_EQ(flat.bufs[t][kEntryBytes + i], Pattern(t + 2, i, 2));
  // A non-paged entry (req 100) cut into local blocks 2,4,6,7.
  ASSERT_EQ(m.PullBlocks(CacheKey{kHolder, 100}, pc, {}, {2, 4, 6, 7}), LLM_SUCCESS);
  for (uint32_t t = 0; t < kTensors; ++t)
    for (size_t i = 0; i < kBlockBytes; ++i) ASSERT_EQ(paged.bufs[t][4 * kBlockBytes + i], Pattern(t, kBlockBytes + i, 2));

  // Errors: unknown key, block out of range, mismatched layer ranges, paged/non-paged mix.
  EXPECT_EQ(m.PullCache(CacheKey{kHolder, 999}, fc), LLM_KV_CACHE_NOT_EXIST);
  EXPECT_EQ(m.PullBlocks(BlocksCacheKey{kHolder, 0}, pc, {8}, {0}), LLM_PARAM_INVALID);
  EXPECT_EQ(m.PullBlocks(BlocksCacheKey{kHolder, 0}, pc, {0, 1}, {0}), LLM_PARAM_INVALID);
  LayerRangeArgs bad;
  bad.src_layer_range = LayerRange{0, 2};
  bad.dst_layer_range = LayerRange{0, 1};
  EXPECT_EQ(m.PullBlocks(BlocksCacheKey{kHolder, 0}, pc, {0}, {0}, bad), LLM_PARAM_INVALID);
  EXPECT_EQ(m.PullCache(CacheKey{kHolder, 100}, pc), LLM_PARAM_INVALID);
  EXPECT_EQ(m.PullCache(CacheKey{kHolder, 200}, fc), LLM_KV_CACHE_NOT_EXIST);  // not yet registered

  // A host cache registered at the holder after the link becomes visible.
  char go = 1;
  ASSERT_EQ(write(down[1], &go, 1), 1);
  ASSERT_EQ(read(up[0], &go, 1), 1);
  CacheDesc small = HostDesc(2, {1, 4 * kBlockElems});
  LayerRangeArgs first_layer;
  first_layer.src_layer_range = LayerRange{0, 1};
  first_layer.dst_layer_range = LayerRange{0, 1};
  ASSERT_EQ(m.PullCache(CacheKey{kHolder, 200}, fc, 0, -1, first_layer), LLM_SUCCESS);
  EXPECT_EQ(flat.bufs[0][0], 0x5a);
  EXPECT_EQ(flat.bufs[1][kEntryBytes - 1], 0x5a);

  // Push: local blocks {0,1} of layer 2 -> remote blocks {6,7} of layer 2;
  // local batch entry 0 -> remote flat batch 1.
  for (uint32_t t = 0; t < kTensors; ++t) {
    for (size_t i = 0; i < paged.bufs[t].size(); ++i) paged.bufs[t][i] = Pattern(t, i, 9);
    for (size_t i = 0; i < kEntryBytes; ++i) flat.bufs[t][i] = Pattern(t, i, 9);
  }
  LayerRangeArgs l2;
  l2.src_layer_range = LayerRange{2, 3};
  l2.dst_layer_range = LayerRange{2, 3};
  ASSERT_EQ(m.PushBlocks(BlocksCacheKey{kHolder, 0}, pc, {0, 1}, {6, 7}, l2), LLM_SUCCESS);
  ASSERT_EQ(m.PushCache(CacheKeyByIdAndIndex{kHolder, flat_id, 1}, fc, 0), LLM_SUCCESS);
  EXPECT_EQ(m.PushCache(CacheKeyByIdAndIndex{kHolder, flat_id, 2}, fc, 0), LLM_PARAM_INVALID);  // batch 2 of 2
  ASSERT_EQ(write(down[1], &go, 1), 1);
  ASSERT_EQ(read(up[0], &go, 1), 1);
  // The late cache is gone: the next pull sees it unpublished.
  EXPECT_EQ(m.PullCache(CacheKey{kHolder, 200}, fc, 0, -1, first_layer), LLM_KV_CACHE_NOT_EXIST);
  ASSERT_EQ(m.UnlinkClusters({{kHolder, name}}, rets), LLM_SUCCESS);
  EXPECT_EQ(m.PullCache(CacheKey{kHolder, 101}, fc), LLM_NOT_YET_LINK);
  m.Finalize();
  ASSERT_EQ(write(down[1], &go, 1), 1);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  (void)small;
}

// A puller (cluster 2) that links to `name` once the parent says so, says
// it is linked, and then only waits (the parent stops it).
int RunLinkedPuller(const std::string &name, int up, int down) {
  char go = 0;
  if (read(down, &go, 1) != 1) return 30;
  CacheManager m;
  if (m.Initialize(kPuller, "127.0.0.1") != LLM_SUCCESS) return 31;
  std::vector<Status> rets;
  if (m.LinkClusters({{kHolder, name}}, rets) != LLM_SUCCESS) return 32;
  if (write(up, &go, 1) != 1) return 33;
  if (read(down, &go, 1) != 1) return 34;
  return 0;
}

// A registration the engine refuses after it registered an earlier tensor
// deregisters that tensor, which waits for the linked peers'
// acknowledgements: up to ~1 s with a stopped peer.  It does so without the
// manager's locks, so the calls that take them meanwhile (GetNotifies:
// Impl::mu; RegisteredAddrCount: LocalCaches::mu) do not wait for it.
TEST(CacheManagerTwoProcess, ARefusedRegistrationDeregistersWithoutTheLocks) {
  const std::string name = "127.0.0.1:" + std::to_string(FreePort());
  int up[2], down[2];
  ASSERT_EQ(pipe(up), 0);
  ASSERT_EQ(pipe(down), 0);
  pid_t child = fork();
  if (child == 0) {
    close(up[0]);
    close(down[1]);
    _exit(RunLinkedPuller(name, up[1], down[0]));
  }
  ChildGuard guard(child);
  close(up[1]);
  close(down[0]);
  CacheManager m;
  ASSERT_EQ(m.Initialize(kHolder, name), LLM_SUCCESS);
  char go = 1;
  ASSERT_EQ(write(down[1], &go, 1), 1);
  ASSERT_EQ(read(up[0], &go, 1), 1);  // linked: the puller hears of every region registered here
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  int stopped = 0;  // stopped for sure (kill only sends): it acknowledges nothing from here on
  ASSERT_EQ(waitpid(child, &stopped, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(stopped));
  // The second tensor overlaps the first cache's tensor without being it:
  // the engine refuses it after it registered the fresh first one.
  Tensors first(1, 128), fresh(1, 64);
  Cache c;
  ASSERT_EQ(m.RegisterCache(HostDesc(1, {4, 8}), first.addrs(), {}, true, c), LLM_SUCCESS);  // 64 bytes
  const std::vector<uintptr_t> refused = {fresh.addrs()[0], first.addrs()[0] + 32};
  std::atomic<bool> done{false};
  Status s = LLM_SUCCESS;
  const auto start = std::chrono::steady_clock::now();
  std::thread registration([&] {
    Cache r;
    s = m.RegisterCache(HostDesc(2, {4, 8}), refused, {}, true, r);
    done = true;
  });
  std::chrono::steady_clock::duration slowest{};
  while (!done) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<adxl::NotifyDesc> notifies;
    EXPECT_EQ(m.GetNotifies(notifies), LLM_SUCCESS);
    EXPECT_EQ(m.RegisteredAddrCount(), 1u);
    slowest = std::max(slowest, std::chrono::steady_clock::now() - t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  registration.join();
  const auto took = std::chrono::steady_clock::now() - start;
  const auto ms = [](std::chrono::steady_clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  EXPECT_EQ(s, LLM_PARAM_INVALID);
  EXPECT_GE(ms(took), 500) << "the premise: the deregistration waited for the stopped peer";
  EXPECT_LT(ms(slowest), 300) << "a call waited for the refused registration's deregistration";
  EXPECT_EQ(m.RegisteredAddrCount(), 1u);
  guard.Kill();
  EXPECT_EQ(m.UnregisterCache(c.cache_id), LLM_SUCCESS);
  m.Finalize();
}

}  // namespace
}  // namespace llm_datadist::internal
