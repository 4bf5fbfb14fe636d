// Helpers of the two-process programs in this directory, standard C++ only,
// so each program needs nothing but <llm_datadist/llm_datadist.h>: hand-over
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

// Host tensors of one cache: kNumTensors buffers of kTensorElems int32.
struct HostTensors {
  explicit HostTensors(int64_t fill_cluster) : data(kNumTensors, std::vector<int32_t>(kTensorElems, 0)) {
    for (uint32_t t = 0; fill_cluster != 0 && t < kNumTensors; ++t) {
      for (size_t i = 0; i < kTensorElems; ++i) data[t][i] = Pattern(static_cast<uint64_t>(fill_cluster), t, i);
    }
  }
  std::vector<uint64_t> Addrs() {
    std::vector<uint64_t> a;
    for (auto &d : data) a.push_back(reinterpret_cast<uint64_t>(d.data()));
    return a;
  }
  std::vector<std::vector<int32_t>> data;
};

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

inline std::vector<const int32_t *> Pointers(const HostTensors &h) {
  std::vector<const int32_t *> p;
  for (const auto &d : h.data) p.push_back(d.data());
  return p;
}

}  // namespace vendor_test

#endif  // VENDOR_LLM_VENDOR_TEST_UTIL_H_
