// Role switch, cluster 2: a Decoder that links to cluster 1 (a Prompt by
// then) and pulls all its blocks, checks them, is refused a role switch
// while linked (LLM_EXIST_LINK), unlinks, and becomes a Prompt listening on
// port_b so that cluster 1 pulls from it.
//   switch_role_b <port_a> <port_b>
#include <string>

#include "llm_datadist/llm_datadist.h"
#include "vendor_test_util.h"

using namespace llm_datadist;
using namespace vendor_test;

namespace {
constexpr uint64_t kClusterA = 1U;
constexpr uint64_t kClusterB = 2U;

bool Ok(const char *what, Status ret) {
  if (ret == LLM_SUCCESS) {
    std::printf("[INFO] b: %s success\n", what);
    return true;
  }
  std::printf("[ERROR] b: %s failed, ret = %u\n", what, ret);
  return false;
}

int Run(uint16_t port_a, const std::string &port_b) {
  AclSession acl;  // before the engine, torn down after it
  if (!acl.ok) return 1;
  LlmDataDist llm_datadist(kClusterB, LlmRole::kDecoder);
  std::map<AscendString, AscendString> options;
  options[OPTION_ENABLE_SET_ROLE] = "1";
  if (!Ok("Initialize", llm_datadist.Initialize(options))) return 1;
  CacheDesc desc{};
  desc.placement = CachePlacement::kDevice;
  desc.num_tensors = kNumTensors;
  desc.data_type = DT_INT32;
  desc.shape = {kRows, kRowElems};
  DeviceTensors src(kClusterB), dst(0);
  Cache src_cache{}, dst_cache{};
  if (!Ok("RegisterKvCache src", llm_datadist.RegisterKvCache(desc, src.Addrs(), {}, src_cache.cache_id)) ||
      !Ok("RegisterKvCache dst", llm_datadist.RegisterKvCache(desc, dst.Addrs(), {}, dst_cache.cache_id))) {
    return 1;
  }
  std::vector<int64_t> ids;
  if (!Wait("a_is_prompt", &ids) || ids.size() != 1U) return 1;
  ClusterInfo a{};
  a.remote_cluster_id = kClusterA;
  IpInfo ip{};
  ip.ip = "127.0.0.1";
  ip.port = port_a;
  a.remote_ip_infos.push_back(ip);
  std::vector<Status> rets;
  if (!Ok("LinkLlmClusters", llm_datadist.LinkLlmClusters({a}, rets, 5000))) return 1;
  CacheIndex index{};
  index.cluster_id = kClusterA;
  index.cache_id = ids[0];
  index.batch_index = 0;
  const std::vector<uint64_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
  if (!Ok("PullKvBlocks", llm_datadist.PullKvBlocks(index, dst_cache, all, all))) return 1;
  Expected expect;
  for (uint32_t t = 0; t < kNumTensors; ++t) {
    for (int64_t r = 0; r < kRows; ++r) expect.Row(kClusterA, t, r, r);
  }
  if (!expect.Check("b: pulled from a", Pointers(dst))) return 1;
  std::map<AscendString, AscendString> prompt_options;
  prompt_options[OPTION_LISTEN_IP_INFO] = ("127.0.0.1:" + port_b).c_str();
  const Status linked = llm_datadist.SetRole(LlmRole::kPrompt, prompt_options);
  if (linked != LLM_EXIST_LINK) {
    std::printf("[ERROR] b: SetRole while linked gave %u, not LLM_EXIST_LINK\n", linked);
    return 1;
  }
  if (!Ok("UnlinkLlmClusters", llm_datadist.UnlinkLlmClusters({a}, rets, 5000))) return 1;
  if (!Ok("SetRole(kPrompt)", llm_datadist.SetRole(LlmRole::kPrompt, prompt_options))) return 1;
  Signal("b_is_prompt", {src_cache.cache_id});
  std::vector<int64_t> result;
  if (!Wait("a_done", &result) || result.size() != 1U || result[0] != 0) return 1;
  llm_datadist.Finalize();
  return 0;
}
}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::printf("usage: switch_role_b <port_a> <port_b>\n");
    return 2;
  }
  const int rc = Run(static_cast<uint16_t>(std::atoi(argv[1])), argv[2]);
  if (rc != 0) Signal("b_is_prompt", {-1});  // a stops waiting
  std::printf("[INFO] switch_role_b %s\n", rc == 0 ? "success" : "FAILED");
  return rc;
}
