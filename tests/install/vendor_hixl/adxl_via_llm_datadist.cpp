// The ADXL engine through the LLM-DataDist library alone (the vendor ships
// ADXL inside libllm_datadist): this program uses adxl::AdxlEngine and its
// build links only `llm_datadist`.  Two engines in one process; one READs
// the other's device memory (aclrtMalloc) and checks every byte.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "adxl/adxl_engine.h"

using namespace adxl;

namespace {
constexpr size_t kSize = 256 * 1024;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    printf("Usage: %s <port>\n", argv[0]);
    return EXIT_FAILURE;
  }
  const std::string server = std::string("127.0.0.1:") + argv[1];
  AdxlEngine a, b;
  std::map<AscendString, AscendString> options;
  if (a.Initialize(server.c_str(), options) != SUCCESS || b.Initialize("127.0.0.1", options) != SUCCESS) {
    printf("[ERROR] Initialize: %s\n", aclGetRecentErrMsg());
    return EXIT_FAILURE;
  }
  void *src = nullptr, *dst = nullptr;
  if (aclrtMalloc(&src, kSize, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
      aclrtMalloc(&dst, kSize, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return EXIT_FAILURE;
  }
  std::vector<uint8_t> fill(kSize), back(kSize);
  for (size_t i = 0; i < kSize; ++i) fill[i] = static_cast<uint8_t>(i * 3 + 1);
  aclrtMemcpy(src, kSize, fill.data(), kSize, ACL_MEMCPY_HOST_TO_DEVICE);
  MemHandle ha = nullptr, hb = nullptr;
  if (a.RegisterMem(MemDesc{reinterpret_cast<uintptr_t>(src), kSize, {}}, MEM_DEVICE, ha) != SUCCESS ||
      b.RegisterMem(MemDesc{reinterpret_cast<uintptr_t>(dst), kSize, {}}, MEM_DEVICE, hb) != SUCCESS ||
      b.Connect(server.c_str(), 5000) != SUCCESS ||
      b.TransferSync(server.c_str(), READ, {{reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), kSize}},
                     5000) != SUCCESS) {
    printf("[ERROR] %s\n", aclGetRecentErrMsg());
    return EXIT_FAILURE;
  }
  aclrtMemcpy(back.data(), kSize, dst, kSize, ACL_MEMCPY_DEVICE_TO_HOST);
  b.Disconnect(server.c_str(), 5000);
  b.DeregisterMem(hb);
  a.DeregisterMem(ha);
  b.Finalize();
  a.Finalize();
  aclrtFree(src);
  aclrtFree(dst);
  if (back != fill) {
    printf("[ERROR] READ moved wrong bytes\n");
    return EXIT_FAILURE;
  }
  printf("[INFO] AdxlEngine through libllm_datadist: %zu bytes verified\n", kSize);
  return EXIT_SUCCESS;
}
