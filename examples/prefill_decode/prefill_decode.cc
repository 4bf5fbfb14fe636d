// prefill_decode: KV-cache hand-over between a prefill and a decode process
// with the vendor's C++ LLM-DataDist API (include/llm_datadist/llm_datadist.h).
//
//   prefill_decode pull [port]   the prefill process (Prompt, listening on
//                                port) registers a KV cache; the decode process
//                                links to it and pulls the request's blocks
//                                layer by layer, then verifies them.
//   prefill_decode push [port]   the decode process (Decoder, listening on
//                                port) registers its cache; the prefill process
//                                (Prompt, listening on port + 100) links to it
//                                and pushes the request's blocks layer by
//                                layer; decode verifies.
//
// Addresses and shapes travel through the engine (the cache layer's table,
// published as engine metadata); caches are named by cluster and cache id
// (ids start at 1 in each process); the pipe between the processes only says
// "ready" and "done".
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "llm_datadist/llm_datadist.h"

namespace {

using namespace llm_datadist;

constexpr uint64_t kPrefillCluster = 1, kDecodeCluster = 2;
constexpr uint32_t kLayers = 4, kTensors = kLayers * 2;  // K and V per layer
constexpr int64_t kBlocks = 16, kBlockTokens = 16, kHeadDim = 64;
constexpr size_t kBlockBytes = kBlockTokens * kHeadDim * 2;  // fp16
const std::vector<uint64_t> kPrefillBlocks = {3, 4, 9};       // the request's blocks at prefill
const std::vector<uint64_t> kDecodeBlocks = {0, 1, 2};        // where decode wants them

CacheDesc KvDesc() {
  CacheDesc d{};
  d.num_tensors = kTensors;
  d.shape = {kBlocks, kBlockTokens, kHeadDim};
  d.data_type = DT_FLOAT16;
  d.placement = CachePlacement::kHost;
  return d;
}

std::map<AscendString, AscendString> ListenOn(const std::string &name) {
  return {{OPTION_LISTEN_IP_INFO, name.c_str()}};
}

ClusterInfo Remote(uint64_t cluster, uint16_t port) {
  ClusterInfo c{};
  c.remote_cluster_id = cluster;
  IpInfo ip{};
  ip.ip = "127.0.0.1";
  ip.port = port;
  c.remote_ip_infos.push_back(ip);
  return c;
}

uint8_t Value(uint32_t tensor, uint64_t block, size_t i) { return static_cast<uint8_t>(tensor * 13 + block * 7 + i); }

// The KV cache memory: one buffer per tensor (K0, V0, K1, V1, ...).
struct KvCache {
  std::vector<std::vector<uint8_t>> tensors{kTensors, std::vector<uint8_t>(kBlocks * kBlockBytes)};
  std::vector<uint64_t> Addrs() {
    std::vector<uint64_t> a;
    for (auto &t : tensors) a.push_back(reinterpret_cast<uint64_t>(t.data()));
    return a;
  }
  void FillRequest() {  // what prefill computed for the request
    for (uint32_t t = 0; t < kTensors; ++t)
      for (uint64_t b : kPrefillBlocks)
        for (size_t i = 0; i < kBlockBytes; ++i) tensors[t][b * kBlockBytes + i] = Value(t, b, i);
  }
  bool CheckRequest() const {  // decode's blocks hold prefill's
    for (uint32_t t = 0; t < kTensors; ++t)
      for (size_t k = 0; k < kDecodeBlocks.size(); ++k)
        for (size_t i = 0; i < kBlockBytes; ++i)
          if (tensors[t][kDecodeBlocks[k] * kBlockBytes + i] != Value(t, kPrefillBlocks[k], i)) return false;
    return true;
  }
};

bool Check(const char *who, const char *what, Status s) {
  if (s == LLM_SUCCESS) return true;
  fprintf(stderr, "%s: %s failed: status 0x%X\n", who, what, s);
  return false;
}

// The process whose cache is registered first and waits: prefill (pull) or decode (push).
int RunHolder(bool push, uint16_t port, int up, int down) {
  const char *who = push ? "decode" : "prefill";
  LlmDataDist dd(push ? kDecodeCluster : kPrefillCluster, push ? LlmRole::kDecoder : LlmRole::kPrompt);
  KvCache kv;
  if (!push) kv.FillRequest();
  int64_t cache_id = -1;
  if (!Check(who, "Initialize", dd.Initialize(ListenOn("127.0.0.1:" + std::to_string(port)))) ||
      !Check(who, "RegisterKvCache", dd.RegisterKvCache(KvDesc(), kv.Addrs(), {}, cache_id))) {
    return 1;
  }
  char c = 1;
  if (write(up, &c, 1) != 1 || read(down, &c, 1) != 1) return 1;  // ready ... done
  if (push) {
    bool ok = kv.CheckRequest();
    printf("decode: %zu blocks x %u tensors pushed by prefill %s\n", kDecodeBlocks.size(), kTensors,
           ok ? "verified" : "WRONG");
    fflush(stdout);
    return ok ? 0 : 1;
  }
  return 0;
}

// The process that links and moves the blocks layer by layer.
int RunMover(bool push, uint16_t port) {
  const char *who = push ? "prefill" : "decode";
  const uint64_t holder_cluster = push ? kDecodeCluster : kPrefillCluster;
  LlmDataDist dd(push ? kPrefillCluster : kDecodeCluster, push ? LlmRole::kPrompt : LlmRole::kDecoder);
  KvCache kv;
  if (push) kv.FillRequest();
  int64_t cache_id = -1;
  std::vector<Status> rets;
  const auto options =
      push ? ListenOn("127.0.0.1:" + std::to_string(port + 100)) : std::map<AscendString, AscendString>{};
  if (!Check(who, "Initialize", dd.Initialize(options)) ||
      !Check(who, "RegisterKvCache", dd.RegisterKvCache(KvDesc(), kv.Addrs(), {}, cache_id)) ||
      !Check(who, "LinkLlmClusters", dd.LinkLlmClusters({Remote(holder_cluster, port)}, rets, 5000))) {
    return 1;
  }
  Cache cache{};
  cache.cache_id = cache_id;
  CacheIndex holder{};
  holder.cluster_id = holder_cluster;
  holder.cache_id = 1;  // the holder's first (and only) cache
  for (uint32_t layer = 0; layer < kLayers; ++layer) {
    KvCacheExtParam one{};
    one.src_layer_range = {static_cast<int32_t>(layer), static_cast<int32_t>(layer)};  // inclusive
    one.dst_layer_range = one.src_layer_range;
    Status s = push ? dd.PushKvBlocks(cache, holder, kPrefillBlocks, kDecodeBlocks, one)
                    : dd.PullKvBlocks(holder, cache, kPrefillBlocks, kDecodeBlocks, one);
    if (!Check(who, push ? "PushKvBlocks" : "PullKvBlocks", s)) return 1;
  }
  if (!Check(who, "UnlinkLlmClusters", dd.UnlinkLlmClusters({Remote(holder_cluster, port)}, rets))) return 1;
  if (!push) {
    bool ok = kv.CheckRequest();
    printf("decode: pulled %zu blocks x %u layers from prefill, %s\n", kDecodeBlocks.size(), kLayers,
           ok ? "verified" : "WRONG");
    return ok ? 0 : 1;
  }
  printf("prefill: pushed %zu blocks x %u layers to decode\n", kDecodeBlocks.size(), kLayers);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "pull";
  if (mode != "pull" && mode != "push") {
    fprintf(stderr, "usage: prefill_decode pull|push [port]\n");
    return 2;
  }
  const bool push = mode == "push";
  const uint16_t port = static_cast<uint16_t>(std::stoi(argc > 2 ? argv[2] : "26200"));
  int up[2], down[2];
  if (pipe(up) != 0 || pipe(down) != 0) return 1;
  pid_t child = fork();
  if (child == 0) {
    close(up[0]);
    close(down[1]);
    _exit(RunHolder(push, port, up[1], down[0]));
  }
  close(up[1]);
  close(down[0]);
  char c = 0;
  int rc = read(up[0], &c, 1) == 1 ? RunMover(push, port) : 1;
  if (write(down[1], &c, 1) != 1) rc = 1;
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  printf("prefill_decode %s: %s\n", mode.c_str(), rc == 0 ? "OK" : "FAILED");
  return rc;
}
