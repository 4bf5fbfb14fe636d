// Decoder side of a pull: links to the prompt and pulls caches and blocks
// into one registered device cache (aclrtMalloc) (whole batch entries, one layer, a part of
// an entry, blocks, blocks layer by layer, a batch entry cut into blocks),
// then checks every byte of it and says "decoder_done".
//   decoder_pull <prompt_port>
#include <string>

#include "llm_datadist/llm_datadist.h"
#include "vendor_test_util.h"

using namespace llm_datadist;
using namespace vendor_test;

namespace {
constexpr uint64_t kPromptClusterId = 1U;
constexpr uint64_t kAllocatedPattern = 11U;  // what prompt_pull writes into its allocated cache
constexpr uint64_t kDecoderClusterId = 2U;

bool Ok(const char *what, Status ret) {
  if (ret == LLM_SUCCESS) {
    std::printf("[INFO] %s success\n", what);
    return true;
  }
  std::printf("[ERROR] %s failed, ret = %u\n", what, ret);
  return false;
}

ClusterInfo Prompt(uint16_t port) {
  ClusterInfo cluster{};
  cluster.remote_cluster_id = kPromptClusterId;
  IpInfo local{};
  local.ip = "127.0.0.1";
  cluster.local_ip_infos.push_back(local);
  IpInfo remote{};
  remote.ip = "127.0.0.1";
  remote.port = port;
  cluster.remote_ip_infos.push_back(remote);
  return cluster;
}

CacheIndex Remote(int64_t cache_id, uint32_t batch_index) {
  CacheIndex index{};
  index.cluster_id = kPromptClusterId;
  index.cache_id = cache_id;
  index.batch_index = batch_index;
  return index;
}

int Run(uint16_t port) {
  AclSession acl;  // before the engine, torn down after it
  if (!acl.ok) return 1;
  LlmDataDist llm_datadist(kDecoderClusterId, LlmRole::kDecoder);
  std::map<AscendString, AscendString> options;
  options[OPTION_SYNC_CACHE_WAIT_TIME] = "5000";
  if (!Ok("Initialize", llm_datadist.Initialize(options))) return 1;
  CacheDesc desc{};
  desc.placement = CachePlacement::kDevice;
  desc.num_tensors = kNumTensors;
  desc.data_type = DT_INT32;
  desc.shape = {kRows, kRowElems};
  DeviceTensors mine(0);
  Cache cache{};
  if (!Ok("RegisterKvCache", llm_datadist.RegisterKvCache(desc, mine.Addrs(), {}, cache.cache_id))) return 1;
  std::vector<int64_t> ids;
  if (!Wait("prompt_ready", &ids) || ids.size() != 2U) return 1;
  const int64_t registered = ids[0], allocated = ids[1];
  std::vector<Status> rets;
  if (!Ok("LinkLlmClusters", llm_datadist.LinkLlmClusters({Prompt(port)}, rets, 5000))) return 1;
  Expected expect;

  // Whole batch entry 3 -> local entry 0.
  if (!Ok("PullKvCache whole entry", llm_datadist.PullKvCache(Remote(registered, 3), cache, 0))) return 1;
  for (uint32_t t = 0; t < kNumTensors; ++t) expect.Row(kPromptClusterId, t, 3, 0);
  // Layer 1 only (K1, V1), entry 5 -> entry 1.
  KvCacheExtParam layer1{};
  layer1.src_layer_range = {1, 1};
  layer1.dst_layer_range = {1, 1};
  if (!Ok("PullKvCache layer 1", llm_datadist.PullKvCache(Remote(registered, 5), cache, 1, -1, layer1))) return 1;
  expect.Row(kPromptClusterId, 2, 5, 1);
  expect.Row(kPromptClusterId, 3, 5, 1);
  // The first 32 bytes (8 elements) of entry 6 -> entry 2.
  if (!Ok("PullKvCache 32 bytes", llm_datadist.PullKvCache(Remote(registered, 6), cache, 2, 32))) return 1;
  for (uint32_t t = 0; t < kNumTensors; ++t) expect.Row(kPromptClusterId, t, 6, 2, 0, 8);
  // Blocks of the allocated cache: {0, 7} -> {3, 4}.
  if (!Ok("PullKvBlocks", llm_datadist.PullKvBlocks(Remote(allocated, 0), cache, {0, 7}, {3, 4}))) return 1;
  for (uint32_t t = 0; t < kNumTensors; ++t) {
    expect.Row(kAllocatedPattern, t, 0, 3);
    expect.Row(kAllocatedPattern, t, 7, 4);
  }
  // Block 2 -> 5, one tensor at a time (tensor_num_per_layer 1, layers {i, i}).
  for (int32_t i = 0; i < static_cast<int32_t>(kNumTensors); ++i) {
    KvCacheExtParam one{};
    one.src_layer_range = {i, i};
    one.dst_layer_range = {i, i};
    one.tensor_num_per_layer = 1;
    if (!Ok("PullKvBlocks per tensor", llm_datadist.PullKvBlocks(Remote(registered, 0), cache, {2}, {5}, one))) {
      return 1;
    }
    expect.Row(kPromptClusterId, static_cast<uint32_t>(i), 2, 5);
  }
  // No source blocks: the remote batch entry 1 cut into local block 7.
  if (!Ok("PullKvBlocks from an entry", llm_datadist.PullKvBlocks(Remote(registered, 1), cache, {}, {7}))) return 1;
  for (uint32_t t = 0; t < kNumTensors; ++t) expect.Row(kPromptClusterId, t, 1, 7);
  // A cache the prompt does not have.
  const Status missing = llm_datadist.PullKvCache(Remote(allocated + 100, 0), cache, 0);
  if (missing != LLM_KV_CACHE_NOT_EXIST) {
    std::printf("[ERROR] pulling a missing cache gave %u, not LLM_KV_CACHE_NOT_EXIST\n", missing);
    return 1;
  }
  const bool ok = expect.Check("decoder cache after the pulls", Pointers(mine));
  if (!Ok("UnlinkLlmClusters", llm_datadist.UnlinkLlmClusters({Prompt(port)}, rets, 5000))) return 1;
  if (!Ok("UnregisterKvCache", llm_datadist.UnregisterKvCache(cache.cache_id))) return 1;
  llm_datadist.Finalize();
  return ok ? 0 : 1;
}
}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::printf("usage: decoder_pull <prompt_port>\n");
    return 2;
  }
  const int rc = Run(static_cast<uint16_t>(std::atoi(argv[1])));
  Signal("decoder_done");
  std::printf("[INFO] decoder_pull %s\n", rc == 0 ? "success" : "FAILED");
  return rc;
}
