// Prompt side of a push: listens too, registers a device cache (aclrtMalloc) holding its
// pattern, links to the decoder once it says "decoder_ready" and pushes
// blocks and batch entries into the decoder's cache, then says
// "prompt_done" (with 0 when every call succeeded).
//   prompt_push <decoder_port> <listen_port>
#include <string>

#include "llm_datadist/llm_datadist.h"
#include "vendor_test_util.h"

using namespace llm_datadist;
using namespace vendor_test;

namespace {
constexpr uint64_t kPromptClusterId = 1U;
constexpr uint64_t kDecoderClusterId = 2U;

bool Ok(const char *what, Status ret) {
  if (ret == LLM_SUCCESS) {
    std::printf("[INFO] %s success\n", what);
    return true;
  }
  std::printf("[ERROR] %s failed, ret = %u\n", what, ret);
  return false;
}

ClusterInfo Decoder(uint16_t port) {
  ClusterInfo cluster{};
  cluster.remote_cluster_id = kDecoderClusterId;
  IpInfo remote{};
  remote.ip = "127.0.0.1";
  remote.port = port;
  cluster.remote_ip_infos.push_back(remote);
  return cluster;
}

int Run(uint16_t decoder_port, const std::string &listen_port) {
  AclSession acl;  // before the engine, torn down after it
  if (!acl.ok) return 1;
  LlmDataDist llm_datadist(kPromptClusterId, LlmRole::kPrompt);
  std::map<AscendString, AscendString> options;
  options[OPTION_LISTEN_IP_INFO] = ("127.0.0.1:" + listen_port).c_str();
  options[OPTION_TRANSFER_BACKEND] = "hixl";
  if (!Ok("Initialize", llm_datadist.Initialize(options))) return 1;
  CacheDesc desc{};
  desc.placement = CachePlacement::kDevice;
  desc.num_tensors = kNumTensors;
  desc.data_type = DT_INT32;
  desc.shape = {kRows, kRowElems};
  DeviceTensors mine(kPromptClusterId);
  Cache cache{};
  if (!Ok("RegisterKvCache", llm_datadist.RegisterKvCache(desc, mine.Addrs(), {}, cache.cache_id))) return 1;
  std::vector<int64_t> ids;
  if (!Wait("decoder_ready", &ids) || ids.size() != 1U) return 1;
  std::vector<Status> rets;
  if (!Ok("LinkLlmClusters", llm_datadist.LinkLlmClusters({Decoder(decoder_port)}, rets, 5000))) return 1;
  CacheIndex index{};
  index.cluster_id = kDecoderClusterId;
  index.cache_id = ids[0];
  // Blocks {5, 6, 7}, one tensor at a time.
  for (int32_t i = 0; i < static_cast<int32_t>(kNumTensors); ++i) {
    KvCacheExtParam one{};
    one.src_layer_range = {i, i};
    one.dst_layer_range = {i, i};
    one.tensor_num_per_layer = 1;
    if (!Ok("PushKvBlocks", llm_datadist.PushKvBlocks(cache, index, {5, 6, 7}, {5, 6, 7}, one))) return 1;
  }
  // Layer 0 (K0, V0) of entry 2 -> remote entry 1.
  KvCacheExtParam layer0{};
  layer0.src_layer_range = {0, 0};
  layer0.dst_layer_range = {0, 0};
  index.batch_index = 1;
  if (!Ok("PushKvCache layer 0", llm_datadist.PushKvCache(cache, index, 2, -1, layer0))) return 1;
  // Whole entry 0 -> remote entry 0; 16 bytes of entry 4 -> remote entry 3.
  index.batch_index = 0;
  if (!Ok("PushKvCache whole entry", llm_datadist.PushKvCache(cache, index, 0))) return 1;
  index.batch_index = 3;
  if (!Ok("PushKvCache 16 bytes", llm_datadist.PushKvCache(cache, index, 4, 16))) return 1;
  if (!Ok("UnlinkLlmClusters", llm_datadist.UnlinkLlmClusters({Decoder(decoder_port)}, rets, 5000))) return 1;
  if (!Ok("UnregisterKvCache", llm_datadist.UnregisterKvCache(cache.cache_id))) return 1;
  llm_datadist.Finalize();
  return 0;
}
}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::printf("usage: prompt_push <decoder_port> <listen_port>\n");
    return 2;
  }
  const int rc = Run(static_cast<uint16_t>(std::atoi(argv[1])), argv[2]);
  Signal("prompt_done", {rc});
  std::printf("[INFO] prompt_push %s\n", rc == 0 ? "success" : "FAILED");
  return rc;
}
