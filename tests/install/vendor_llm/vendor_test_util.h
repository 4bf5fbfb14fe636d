// Helpers of the two-process programs in this directory, which need nothing
// but <llm_datadist/llm_datadist.h>, <acl/acl.h> and standard C++, as the
// vendor's examples: the device runtime's set-up, KV tensors on the device
// (aclrtMalloc; bytes checked by aclrtMemcpy back to host), hand-over
// through files in $VENDOR_SYNC_DIR (one process writes "name" with a line of
// numbers, the other waits for it), the byte pattern each cluster writes, and
// the KV cache shape every program uses.
#ifndef VENDOR_LLM_VENDOR_TEST_UTIL_H_
#define VENDOR_LLM_VENDOR_TEST_UTIL_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "llm_datadist/llm_datadist.h"

namespace vendor_test {

// 4 tensors (2 layers of K, V), 8 rows of 16 int32 each.
constexpr uint32_t kNumTensors = 4U;
constexpr int64_t kRows = 8;
constexpr int64_t kRowElems = 16;
constexpr size_t kTensorElems = static_cast<size_t>(kRows * kRowElems);
constexpr size_t kTensorBytes = kTensorElems * sizeof(int32_t);

inline int32_t Pattern(uint64_t cluster, uint32_t tensor, size_t elem) {
  return static_cast<int32_t>(cluster * 1000000U + tensor * 10000U + elem);
}

inline std::string SyncPath(const std::string &name) {
  const char *dir = std::getenv("VENDOR_SYNC_DIR");
  return std::string(dir != nullptr ? dir : ".") + "/" + name;
}

// Writes `values` to the file `name` (atomically: a reader sees all or nothing).
inline void Signal(const std::string &name, const std::vector<int64_t> &values = {}) {
  const std::string tmp = SyncPath(name + ".tmp");
  {
    std::ofstream out(tmp);
    for (int64_t v : values) out << v << "\n";
  }
  std::rename(tmp.c_str(), SyncPath(name).c_str());
}

// Waits up to timeout_s for `name`; false when it does not come.
inline bool Wait(const std::string &name, std::vector<int64_t> *values = nullptr, int timeout_s = 30) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(SyncPath(name));
    if (in) {
      int64_t v = 0;
      while (values != nullptr && in >> v) values->push_back(v);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::printf("[ERROR] timed out waiting for %s\n", name.c_str());
  return false;
}

// The device runtime for the life of a program, as the vendor's examples set
// it up (aclInit, aclrtSetDevice) and tear it down.
struct AclSession {
  AclSession() {
    ok = aclInit(nullptr) == ACL_SUCCESS && aclrtSetDevice(0) == ACL_SUCCESS;
    if (!ok) std::printf("[ERROR] aclInit / aclrtSetDevice failed: %s\n", aclGetRecentErrMsg());
  }
  ~AclSession() {
    (void)aclrtResetDevice(0);
    (void)aclFinalize();
  }
  AclSession(const AclSession &) = delete;
  AclSession &operator=(const AclSession &) = delete;
  bool ok = false;
};

// Writes kTensorElems int32 of `cluster`'s pattern for tensor t to device memory (aclrtMemcpy).
inline bool FillDevice(uint64_t dev, uint64_t cluster, uint32_t t) {
  std::vector<int32_t> host(kTensorElems, 0);
  for (size_t i = 0; cluster != 0 && i < kTensorElems; ++i) host[i] = Pattern(cluster, t, i);
  const aclError e = aclrtMemcpy(reinterpret_cast<void *>(dev), kTensorBytes, host.data(), kTensorBytes,
                                 ACL_MEMCPY_HOST_TO_DEVICE);
  if (e != ACL_SUCCESS) std::printf("[ERROR] aclrtMemcpy to device failed: %d\n", e);
  return e == ACL_SUCCESS;
}

// Device tensors of one cache: kNumTensors blocks of kTensorElems int32 from
// aclrtMalloc, holding `fill_cluster`'s pattern (0: zeros).
struct DeviceTensors {
  explicit DeviceTensors(int64_t fill_cluster) : dev(kNumTensors, nullptr), host(kNumTensors) {
    for (uint32_t t = 0; t < kNumTensors; ++t) {
      if (aclrtMalloc(&dev[t], kTensorBytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
          !FillDevice(reinterpret_cast<uint64_t>(dev[t]), static_cast<uint64_t>(fill_cluster), t)) {
        std::printf("[ERROR] aclrtMalloc of %zu bytes failed: %s\n", kTensorBytes, aclGetRecentErrMsg());
        std::exit(1);
      }
    }
  }
  ~DeviceTensors() {
    for (void *p : dev) (void)aclrtFree(p);
  }
  DeviceTensors(const DeviceTensors &) = delete;
  DeviceTensors &operator=(const DeviceTensors &) = delete;
  std::vector<uint64_t> Addrs() const {
    std::vector<uint64_t> a;
    for (void *p : dev) a.push_back(reinterpret_cast<uint64_t>(p));
    return a;
  }
  std::vector<void *> dev;
  std::vector<std::vector<int32_t>> host;  // the last copy back (ToHost)
};

// Copies device tensors `addrs` back to host (aclrtMemcpy) into *host and
// returns pointers to the copies, for Expected::Check.
inline std::vector<const int32_t *> ToHost(const std::vector<uint64_t> &addrs,
                                           std::vector<std::vector<int32_t>> *host) {
  host->assign(addrs.size(), std::vector<int32_t>(kTensorElems, 0));
  std::vector<const int32_t *> p;
  for (size_t t = 0; t < addrs.size(); ++t) {
    if (aclrtMemcpy((*host)[t].data(), kTensorBytes, reinterpret_cast<void *>(addrs[t]), kTensorBytes,
                    ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) {
      std::printf("[ERROR] aclrtMemcpy to host failed: %s\n", aclGetRecentErrMsg());
      std::exit(1);
    }
    p.push_back((*host)[t].data());
  }
  return p;
}

inline std::vector<const int32_t *> Pointers(DeviceTensors &d) { return ToHost(d.Addrs(), &d.host); }

// The cache description every program uses, on the device.
inline llm_datadist::CacheDesc DeviceDesc() {
  llm_datadist::CacheDesc desc{};
  desc.placement = llm_datadist::CachePlacement::kDevice;
  desc.num_tensors = kNumTensors;
  desc.data_type = llm_datadist::DT_INT32;
  desc.shape = {kRows, kRowElems};
  return desc;
}

// Expected contents: starts as zeros, rows copied in as the program moves them.
struct Expected {
  Expected() : data(kNumTensors, std::vector<int32_t>(kTensorElems, 0)) {}
  // Row src_row of `cluster`'s pattern (elements [first, first + count)) lands in row dst_row of tensor t.
  void Row(uint64_t cluster, uint32_t t, int64_t src_row, int64_t dst_row, size_t first = 0,
           size_t count = static_cast<size_t>(kRowElems)) {
    for (size_t e = first; e < first + count; ++e) {
      data[t][static_cast<size_t>(dst_row * kRowElems) + e] =
          Pattern(cluster, t, static_cast<size_t>(src_row * kRowElems) + e);
    }
  }
  // Every element of every tensor compared; the first difference printed.
  bool Check(const char *what, const std::vector<const int32_t *> &actual) const {
    for (uint32_t t = 0; t < kNumTensors; ++t) {
      for (size_t i = 0; i < kTensorElems; ++i) {
        if (actual[t][i] != data[t][i]) {
          std::printf("[ERROR] %s: tensor %u element %zu is %d, expected %d\n", what, t, i, actual[t][i], data[t][i]);
          return false;
        }
      }
    }
    std::printf("[INFO] %s: all %u tensors, every byte as expected\n", what, kNumTensors);
    return true;
  }
  std::vector<std::vector<int32_t>> data;
};

}  // namespace vendor_test

#endif  // VENDOR_LLM_VENDOR_TEST_UTIL_H_
