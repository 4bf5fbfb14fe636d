// The vendor's ABI for the public types, checked where it matters: in a
// program compiled as the vendor's build files compile programs.  Built twice
// (tests/abi/CMakeLists.txt), with -D_GLIBCXX_USE_CXX11_ABI=0 and =1: the
// static_asserts hold in both (sizeof, alignof, member offsets and type
// identities of the vendor's headers, hicann/hixl include/ and metadef's
// graph/ascend_string.h), and main() runs ge::AscendString's inline members
// (copy, destroy, std::map and std::unordered_map keys) on objects made by
// libmetadef.so, which is built with the default ABI.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "adxl/adxl_engine.h"
#include "hixl/hixl.h"
#include "llm_datadist/llm_datadist.h"

#ifndef ADXL_ABI_TEST_CXX11_ABI
#error "built by tests/abi/CMakeLists.txt with ADXL_ABI_TEST_CXX11_ABI set"
#endif
static_assert(_GLIBCXX_USE_CXX11_ABI == ADXL_ABI_TEST_CXX11_ABI, "compiled in the C++ ABI this target is for");

#define LAYOUT(T, size, align)                                  \
  static_assert(sizeof(T) == (size), #T ": the vendor's size"); \
  static_assert(alignof(T) == (align), #T ": the vendor's alignment")
#define AT(T, member, offset) static_assert(offsetof(T, member) == (offset), #T "::" #member ": the vendor's offset")

// ge::AscendString: one std::shared_ptr<std::string>.
LAYOUT(ge::AscendString, 16, 8);
static_assert(std::is_same<adxl::AscendString, ge::AscendString>::value, "adxl::AscendString is ge::AscendString");
static_assert(std::is_same<hixl::AscendString, ge::AscendString>::value, "hixl::AscendString is ge::AscendString");

// adxl_types.h
static_assert(std::is_same<adxl::Status, uint32_t>::value, "adxl::Status");
static_assert(std::is_same<adxl::TransferReq, void *>::value && std::is_same<adxl::MemHandle, void *>::value, "handles");
static_assert(std::is_same<adxl::ShareableHandle, aclrtMemFabricHandle>::value, "ShareableHandle is aclrtMemFabricHandle");
LAYOUT(aclrtMemFabricHandle, 128, 1);
AT(aclrtMemFabricHandle, data, 0);
LAYOUT(adxl::MemType, 4, 4);
LAYOUT(adxl::TransferOp, 4, 4);
LAYOUT(adxl::FeatureType, 4, 4);
LAYOUT(adxl::TransferStatus, 4, 4);
LAYOUT(adxl::MemDesc, 144, 8);
AT(adxl::MemDesc, addr, 0);
AT(adxl::MemDesc, len, 8);
AT(adxl::MemDesc, local_only, 16);
AT(adxl::MemDesc, reserved, 17);
LAYOUT(adxl::TransferOpDesc, 24, 8);
AT(adxl::TransferOpDesc, local_addr, 0);
AT(adxl::TransferOpDesc, remote_addr, 8);
AT(adxl::TransferOpDesc, len, 16);
LAYOUT(adxl::TransferArgs, 128, 1);
LAYOUT(adxl::NotifyDesc, 32, 8);
AT(adxl::NotifyDesc, name, 0);
AT(adxl::NotifyDesc, notify_msg, 16);
LAYOUT(adxl::AdxlEngine, 8, 8);  // one std::unique_ptr

// hixl_types.h: the vendor's own types, distinct from adxl's.
static_assert(!std::is_same<hixl::MemType, adxl::MemType>::value, "hixl::MemType is its own type");
static_assert(!std::is_same<hixl::TransferOp, adxl::TransferOp>::value, "hixl::TransferOp is its own type");
static_assert(!std::is_same<hixl::FeatureType, adxl::FeatureType>::value, "hixl::FeatureType is its own type");
static_assert(!std::is_same<hixl::TransferStatus, adxl::TransferStatus>::value, "hixl::TransferStatus");
static_assert(!std::is_same<hixl::MemDesc, adxl::MemDesc>::value, "hixl::MemDesc is its own type");
static_assert(!std::is_same<hixl::TransferOpDesc, adxl::TransferOpDesc>::value, "hixl::TransferOpDesc");
static_assert(!std::is_same<hixl::NotifyDesc, adxl::NotifyDesc>::value, "hixl::NotifyDesc is its own type");
static_assert(!std::is_same<hixl::TransferArgs, adxl::TransferArgs>::value, "hixl::TransferArgs is its own type");
static_assert(std::is_same<hixl::Status, uint32_t>::value, "hixl::Status");
LAYOUT(hixl::MemType, 4, 4);
LAYOUT(hixl::TransferOp, 4, 4);
LAYOUT(hixl::FeatureType, 4, 4);
LAYOUT(hixl::TransferStatus, 4, 4);
LAYOUT(hixl::AsyncConnectStatus, 4, 4);
LAYOUT(hixl::MemDesc, 144, 8);
AT(hixl::MemDesc, addr, 0);
AT(hixl::MemDesc, len, 8);
AT(hixl::MemDesc, local_only, 16);
AT(hixl::MemDesc, reserved, 17);
LAYOUT(hixl::TransferOpDesc, 24, 8);
AT(hixl::TransferOpDesc, local_addr, 0);
AT(hixl::TransferOpDesc, remote_addr, 8);
AT(hixl::TransferOpDesc, len, 16);
LAYOUT(hixl::TransferArgs, 128, 8);
AT(hixl::TransferArgs, user_data, 0);
AT(hixl::TransferArgs, reserved, 8);
LAYOUT(hixl::GetTransferStatusArgs, 128, 4);
AT(hixl::GetTransferStatusArgs, max_query_count, 0);
AT(hixl::GetTransferStatusArgs, skip_waiting, 4);
AT(hixl::GetTransferStatusArgs, reserved, 5);
LAYOUT(hixl::TransferResult, 128, 8);
AT(hixl::TransferResult, req, 0);
AT(hixl::TransferResult, user_data, 8);
AT(hixl::TransferResult, status, 16);
AT(hixl::TransferResult, reserved, 20);
LAYOUT(hixl::NotifyDesc, 32, 8);
AT(hixl::NotifyDesc, name, 0);
AT(hixl::NotifyDesc, notify_msg, 16);
LAYOUT(hixl::Hixl, 8, 8);  // one std::unique_ptr

// llm_datadist.h
static_assert(std::is_same<llm_datadist::AscendString, ge::AscendString>::value, "llm_datadist::AscendString");
static_assert(std::is_same<llm_datadist::Status, uint32_t>::value, "llm_datadist::Status");
LAYOUT(llm_datadist::LlmRole, 4, 4);
LAYOUT(llm_datadist::CachePlacement, 4, 4);
LAYOUT(llm_datadist::IpInfo, 152, 8);
AT(llm_datadist::IpInfo, ip, 0);
AT(llm_datadist::IpInfo, port, 16);
AT(llm_datadist::IpInfo, reserved, 18);
LAYOUT(llm_datadist::ClusterInfo, 192, 8);
AT(llm_datadist::ClusterInfo, remote_cluster_id, 0);
AT(llm_datadist::ClusterInfo, remote_role_type, 8);
AT(llm_datadist::ClusterInfo, local_ip_infos, 16);
AT(llm_datadist::ClusterInfo, remote_ip_infos, 40);
AT(llm_datadist::ClusterInfo, reserved, 64);
LAYOUT(llm_datadist::CacheIndex, 152, 8);
AT(llm_datadist::CacheIndex, cluster_id, 0);
AT(llm_datadist::CacheIndex, cache_id, 8);
AT(llm_datadist::CacheIndex, batch_index, 16);
AT(llm_datadist::CacheIndex, reserved, 20);
LAYOUT(llm_datadist::CacheDesc, 168, 8);
AT(llm_datadist::CacheDesc, placement, 0);
AT(llm_datadist::CacheDesc, num_tensors, 4);
AT(llm_datadist::CacheDesc, data_type, 8);
AT(llm_datadist::CacheDesc, shape, 16);
AT(llm_datadist::CacheDesc, reserved, 40);
LAYOUT(llm_datadist::Cache, 328, 8);
AT(llm_datadist::Cache, cache_id, 0);
AT(llm_datadist::Cache, tensor_addrs, 8);
AT(llm_datadist::Cache, cache_desc, 32);
AT(llm_datadist::Cache, reserved, 200);
LAYOUT(llm_datadist::KvCacheExtParam, 144, 4);
AT(llm_datadist::KvCacheExtParam, src_layer_range, 0);
AT(llm_datadist::KvCacheExtParam, dst_layer_range, 8);
AT(llm_datadist::KvCacheExtParam, tensor_num_per_layer, 16);
AT(llm_datadist::KvCacheExtParam, reserved, 17);
LAYOUT(llm_datadist::RegisterCfg, 128, 1);
LAYOUT(llm_datadist::LlmDataDist, 8, 8);  // one std::unique_ptr

// Values are the vendor's.
static_assert(adxl::MEM_DEVICE == 0 && adxl::MEM_HOST == 1 && hixl::MEM_DEVICE == 0 && hixl::MEM_HOST == 1, "MemType");
static_assert(adxl::READ == 0 && adxl::WRITE == 1 && hixl::READ == 0 && hixl::WRITE == 1, "TransferOp");
static_assert(static_cast<int>(hixl::AsyncConnectStatus::DISCONNECTING) == 6, "AsyncConnectStatus");
static_assert(hixl::FAILED == 503900U && adxl::RESOURCE_EXHAUSTED == 203900U, "statuses");

namespace {
int g_failures = 0;
void Check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED (C++ ABI %d): %s\n", ADXL_ABI_TEST_CXX11_ABI, what);
    ++g_failures;
  }
}
}  // namespace

int main() {
  // Made in libmetadef.so, copied and destroyed here (the inline members).
  ge::AscendString a("kv_cache");
  ge::AscendString b(std::string("kv_cache"));
  ge::AscendString bin("a\0b", 3);
  ge::AscendString empty;
  ge::AscendString null_str(static_cast<const char *>(nullptr));
  Check(std::strcmp(a.GetString(), "kv_cache") == 0 && a.GetLength() == 8, "GetString / GetLength");
  Check(a == b && !(a != b) && a == "kv_cache" && a != "kv", "equality");
  Check(bin.GetLength() == 3 && std::memcmp(bin.GetString(), "a\0b", 3) == 0, "embedded NUL kept");
  Check(std::strcmp(empty.GetString(), "") == 0 && empty.GetLength() == 0, "default is empty");
  Check(std::strcmp(null_str.GetString(), "") == 0 && null_str == empty, "null is empty");
  Check(ge::AscendString("abc") < ge::AscendString("abd") && ge::AscendString("b") > ge::AscendString("abc"), "order");
  Check(a.Find("cache") == 3 && a.Find("zz") == std::string::npos, "Find");
  Check(std::hash<ge::AscendString>()(a) == a.Hash() && a.Hash() == b.Hash(), "Hash");
  {
    std::vector<ge::AscendString> copies(100, a);  // copies share the string
    ge::AscendString moved = std::move(copies.back());
    copies.pop_back();
    Check(moved == a && copies.front() == a, "copies and moves");
  }
  std::map<ge::AscendString, ge::AscendString> options;
  for (int i = 0; i < 64; ++i) {
    const std::string k = "key" + std::to_string(i);
    options[ge::AscendString(k.c_str())] = ge::AscendString(("value" + std::to_string(i)).c_str());
  }
  Check(options.size() == 64 && std::strcmp(options[ge::AscendString("key17")].GetString(), "value17") == 0,
        "std::map<AscendString, AscendString>");
  std::unordered_map<ge::AscendString, int> by_name{{a, 1}, {ge::AscendString("other"), 2}};
  Check(by_name.at(b) == 1 && by_name.count(ge::AscendString("missing")) == 0, "std::unordered_map key");
  // A NotifyDesc as the vendor's programs build it.
  hixl::NotifyDesc n{ge::AscendString("name"), ge::AscendString("msg")};
  hixl::NotifyDesc n2 = n;
  Check(n2.name == "name" && n2.notify_msg == "msg", "NotifyDesc copy");
  if (g_failures != 0) return 1;
  std::printf("vendor ABI layout (C++ ABI %d): ok\n", ADXL_ABI_TEST_CXX11_ABI);
  return 0;
}
