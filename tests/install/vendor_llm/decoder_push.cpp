// Decoder side of a push: listens (the prompt links to it), registers a
// zeroed device cache (aclrtMalloc), says "decoder_ready" (with its cache id) and, once the
// prompt says "prompt_done", checks every byte of what was pushed into it.
//   decoder_push <listen_port>
#include <string>

#include "llm_datadist/llm_datadist.h"
#include "vendor_test_util.h"

using namespace llm_datadist;
using namespace vendor_test;

namespace {
constexpr uint64_t kPromptClusterId = 1U;
constexpr uint64_t kDecoderClusterId = 2U;

// What prompt_push pushes (see there), as rows of the prompt's pattern.
Expected Pushed() {
  Expected e;
  for (uint32_t t = 0; t < kNumTensors; ++t) {
    for (int64_t b : {5, 6, 7}) e.Row(kPromptClusterId, t, b, b);  // PushKvBlocks, tensor by tensor
    e.Row(kPromptClusterId, t, 0, 0);                                 // PushKvCache, whole entry 0
    e.Row(kPromptClusterId, t, 4, 3, 0, 4);                           // PushKvCache, 16 bytes of entry 4
  }
  e.Row(kPromptClusterId, 0, 2, 1);  // PushKvCache, layer 0 (K0, V0) of entry 2 -> entry 1
  e.Row(kPromptClusterId, 1, 2, 1);
  return e;
}
}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::printf("usage: decoder_push <listen_port>\n");
    return 2;
  }
  AclSession acl;  // before the engine, torn down after it
  if (!acl.ok) return 1;
  LlmDataDist llm_datadist(kDecoderClusterId, LlmRole::kDecoder);
  std::map<AscendString, AscendString> options;
  options[OPTION_LISTEN_IP_INFO] = (std::string("127.0.0.1:") + argv[1]).c_str();
  Status ret = llm_datadist.Initialize(options);
  if (ret != LLM_SUCCESS) {
    std::printf("[ERROR] Initialize failed, ret = %u\n", ret);
    return 1;
  }
  CacheDesc desc{};
  desc.placement = CachePlacement::kDevice;
  desc.num_tensors = kNumTensors;
  desc.data_type = DT_INT32;
  desc.shape = {kRows, kRowElems};
  DeviceTensors mine(0);
  int64_t cache_id = -1;
  ret = llm_datadist.RegisterKvCache(desc, mine.Addrs(), {}, cache_id);
  if (ret != LLM_SUCCESS) {
    std::printf("[ERROR] RegisterKvCache failed, ret = %u\n", ret);
    return 1;
  }
  Signal("decoder_ready", {cache_id});
  std::vector<int64_t> result;
  int rc = Wait("prompt_done", &result) && result.size() == 1U && result[0] == 0 ? 0 : 1;
  if (rc == 0 && !Pushed().Check("decoder cache after the pushes", Pointers(mine))) rc = 1;
  (void)llm_datadist.UnregisterKvCache(cache_id);
  llm_datadist.Finalize();
  std::printf("[INFO] decoder_push %s\n", rc == 0 ? "success" : "FAILED");
  return rc;
}
