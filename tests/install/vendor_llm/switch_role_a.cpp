// Role switch, cluster 1: starts as a Decoder that does not listen, becomes
// a Prompt listening on port_a (SetRole) so cluster 2 can pull from it, then
// a Decoder again that links to cluster 2 (by then a Prompt) and pulls from
// it.  Every byte pulled is checked.
//   switch_role_a <port_a> <port_b>
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
    std::printf("[INFO] a: %s success\n", what);
    return true;
  }
  std::printf("[ERROR] a: %s failed, ret = %u\n", what, ret);
  return false;
}

int Run(const std::string &port_a, uint16_t port_b) {
  AclSession acl;  // before the engine, torn down after it
  if (!acl.ok) return 1;
  LlmDataDist llm_datadist(kClusterA, LlmRole::kDecoder);
  std::map<AscendString, AscendString> options;
  options[OPTION_ENABLE_SET_ROLE] = "1";
  if (!Ok("Initialize", llm_datadist.Initialize(options))) return 1;
  CacheDesc desc{};
  desc.placement = CachePlacement::kDevice;
  desc.num_tensors = kNumTensors;
  desc.data_type = DT_INT32;
  desc.shape = {kRows, kRowElems};
  DeviceTensors src(kClusterA), dst(0);
  Cache src_cache{}, dst_cache{};
  if (!Ok("RegisterKvCache src", llm_datadist.RegisterKvCache(desc, src.Addrs(), {}, src_cache.cache_id)) ||
      !Ok("RegisterKvCache dst", llm_datadist.RegisterKvCache(desc, dst.Addrs(), {}, dst_cache.cache_id))) {
    return 1;
  }
  std::map<AscendString, AscendString> prompt_options;
  prompt_options[OPTION_LISTEN_IP_INFO] = ("127.0.0.1:" + port_a).c_str();
  if (!Ok("SetRole(kPrompt)", llm_datadist.SetRole(LlmRole::kPrompt, prompt_options))) return 1;
  Signal("a_is_prompt", {src_cache.cache_id});
  std::vector<int64_t> ids;
  if (!Wait("b_is_prompt", &ids) || ids.size() != 1U) return 1;
  if (!Ok("SetRole(kDecoder)", llm_datadist.SetRole(LlmRole::kDecoder))) return 1;
  ClusterInfo b{};
  b.remote_cluster_id = kClusterB;
  IpInfo ip{};
  ip.ip = "127.0.0.1";
  ip.port = port_b;
  b.remote_ip_infos.push_back(ip);
  std::vector<Status> rets;
  if (!Ok("LinkLlmClusters", llm_datadist.LinkLlmClusters({b}, rets, 5000))) return 1;
  // B's entries in reverse order.
  Expected expect;
  for (uint32_t i = 0; i < static_cast<uint32_t>(kRows); ++i) {
    CacheIndex index{};
    index.cluster_id = kClusterB;
    index.cache_id = ids[0];
    index.batch_index = i;
    if (!Ok("PullKvCache", llm_datadist.PullKvCache(index, dst_cache, static_cast<uint32_t>(kRows) - 1U - i))) {
      return 1;
    }
    for (uint32_t t = 0; t < kNumTensors; ++t) expect.Row(kClusterB, t, i, kRows - 1 - i);
  }
  const bool ok = expect.Check("a: pulled from b after both switched", Pointers(dst));
  if (!Ok("UnlinkLlmClusters", llm_datadist.UnlinkLlmClusters({b}, rets, 5000))) return 1;
  llm_datadist.Finalize();
  return ok ? 0 : 1;
}
}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::printf("usage: switch_role_a <port_a> <port_b>\n");
    return 2;
  }
  const int rc = Run(argv[1], static_cast<uint16_t>(std::atoi(argv[2])));
  Signal("a_done", {rc});
  std::printf("[INFO] switch_role_a %s\n", rc == 0 ? "success" : "FAILED");
  return rc;
}
