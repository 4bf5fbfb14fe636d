// Prompt side of a pull: listens, registers one cache of its own memory and
// allocates a second with AllocateCache (kDevice); both on the device, fills both with its pattern,
// says "prompt_ready" (with both cache ids) and serves until the decoder
// says "decoder_done".
//   prompt_pull <listen_port>
#include <cstring>
#include <string>

#include "llm_datadist/llm_datadist.h"
#include "vendor_test_util.h"

using namespace llm_datadist;
using namespace vendor_test;

namespace {
constexpr uint64_t kPromptClusterId = 1U;

CacheDesc KvDesc() {
  CacheDesc desc{};
  desc.placement = CachePlacement::kDevice;
  desc.num_tensors = kNumTensors;
  desc.data_type = DT_INT32;
  desc.shape = {kRows, kRowElems};
  return desc;
}
}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::printf("usage: prompt_pull <listen_port>\n");
    return 2;
  }
  AclSession acl;  // before the engine, torn down after it
  if (!acl.ok) return 1;
  LlmDataDist llm_datadist(kPromptClusterId, LlmRole::kPrompt);
  std::map<AscendString, AscendString> options;
  options[OPTION_LISTEN_IP_INFO] = (std::string("127.0.0.1:") + argv[1]).c_str();
  options[OPTION_DEVICE_ID] = "0";
  Status ret = llm_datadist.Initialize(options);
  if (ret != LLM_SUCCESS) {
    std::printf("[ERROR] Initialize failed, ret = %u\n", ret);
    return 1;
  }
  DeviceTensors registered(kPromptClusterId);
  int64_t registered_id = -1;
  ret = llm_datadist.RegisterKvCache(KvDesc(), registered.Addrs(), {}, registered_id);
  if (ret != LLM_SUCCESS) {
    std::printf("[ERROR] RegisterKvCache failed, ret = %u\n", ret);
    return 1;
  }
  Cache allocated{};
  ret = llm_datadist.AllocateCache(KvDesc(), allocated);
  if (ret != LLM_SUCCESS || allocated.tensor_addrs.size() != kNumTensors) {
    std::printf("[ERROR] AllocateCache failed, ret = %u\n", ret);
    return 1;
  }
  // The allocated cache holds the pattern of a "cluster 11", to tell the two apart.
  for (uint32_t t = 0; t < kNumTensors; ++t) {
    if (!FillDevice(allocated.tensor_addrs[t], 11U, t)) return 1;
  }
  Signal("prompt_ready", {registered_id, allocated.cache_id});
  int rc = Wait("decoder_done") ? 0 : 1;
  // The decoder's reads must not have changed a byte here.
  Expected mine;
  for (uint32_t t = 0; t < kNumTensors; ++t) {
    for (int64_t r = 0; r < kRows; ++r) mine.Row(kPromptClusterId, t, r, r);
  }
  if (!mine.Check("prompt cache after the pulls", Pointers(registered))) rc = 1;
  if (llm_datadist.UnregisterKvCache(registered_id) != LLM_SUCCESS ||
      llm_datadist.DeallocateCache(allocated.cache_id) != LLM_SUCCESS) {
    std::printf("[ERROR] UnregisterKvCache / DeallocateCache failed\n");
    rc = 1;
  }
  llm_datadist.Finalize();
  std::printf("[INFO] prompt_pull %s\n", rc == 0 ? "success" : "FAILED");
  return rc;
}
