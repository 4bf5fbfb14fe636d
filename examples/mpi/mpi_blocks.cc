// mpi_blocks: an MPI program whose ranks move KV blocks through the engine.
//
// Each rank owns an LlmDataDist (the vendor's C++ API; cluster id = rank + 1,
// listening on base_port + rank) with a KV cache filled with a rank pattern,
// then the ranks exchange their listen ports with MPI_Allgather.  Every rank links
// to the next rank, pulls blocks {1, 2} of every layer into its blocks
// {4, 5}, pushes its block 0 into the next rank's block 7, and verifies; an
// MPI_Allreduce combines the verdicts.  MPI itself may run on UCX in the
// same process (mpirun --mca pml ucx): both use UCX side by side.
//
//   mpirun -np 2 mpi_blocks [base_port]     (default 26220)
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "llm_datadist/llm_datadist.h"

using namespace llm_datadist;

namespace {

constexpr uint32_t kLayers = 2, kTensors = kLayers * 2;
constexpr int64_t kBlocks = 8, kBlockElems = 512;
constexpr size_t kBlockBytes = kBlockElems * 2;

uint8_t Value(int rank, uint32_t tensor, size_t byte) { return static_cast<uint8_t>(rank * 101 + tensor * 7 + byte); }

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int base = argc > 1 ? atoi(argv[1]) : 26220;
  const std::string me = "127.0.0.1:" + std::to_string(base + rank);

  std::vector<std::vector<uint8_t>> kv(kTensors, std::vector<uint8_t>(kBlocks * kBlockBytes));
  std::vector<uint64_t> addrs;
  for (uint32_t t = 0; t < kTensors; ++t) {
    for (size_t i = 0; i < kv[t].size(); ++i) kv[t][i] = Value(rank, t, i);
    addrs.push_back(reinterpret_cast<uint64_t>(kv[t].data()));
  }
  CacheDesc desc{};
  desc.num_tensors = kTensors;
  desc.shape = {kBlocks, kBlockElems};
  desc.data_type = DT_BF16;
  desc.placement = CachePlacement::kHost;

  int ok = 1;
  LlmDataDist dd(rank + 1, LlmRole::kMix);
  Cache cache{};
  if (dd.Initialize({{OPTION_LISTEN_IP_INFO, me.c_str()}}) != LLM_SUCCESS ||
      dd.RegisterKvCache(desc, addrs, {}, cache.cache_id) != LLM_SUCCESS) {
    ok = 0;
  }
  // Listen ports and cache ids of all ranks.
  const int mine[2] = {base + rank, static_cast<int>(cache.cache_id)};
  std::vector<int> all(2 * size);
  MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);  // every cache is registered

  const int next = (rank + 1) % size;
  ClusterInfo peer{};
  peer.remote_cluster_id = next + 1;
  IpInfo ip{};
  ip.ip = "127.0.0.1";
  ip.port = static_cast<uint16_t>(all[2 * next]);
  peer.remote_ip_infos.push_back(ip);
  CacheIndex theirs{};
  theirs.cluster_id = next + 1;
  theirs.cache_id = all[2 * next + 1];
  if (ok && size > 1) {
    std::vector<Status> rets;
    ok = dd.LinkLlmClusters({peer}, rets, 5000) == LLM_SUCCESS;
    ok = ok && dd.PullKvBlocks(theirs, cache, {1, 2}, {4, 5}) == LLM_SUCCESS;
    for (uint32_t t = 0; ok && t < kTensors; ++t)
      for (size_t i = 0; i < 2 * kBlockBytes; ++i)
        if (kv[t][4 * kBlockBytes + i] != Value(next, t, kBlockBytes + i)) ok = 0;
    ok = ok && dd.PushKvBlocks(cache, theirs, {0}, {7}) == LLM_SUCCESS;
  }
  MPI_Barrier(MPI_COMM_WORLD);  // every push has landed
  const int prev = (rank + size - 1) % size;
  for (uint32_t t = 0; ok && size > 1 && t < kTensors; ++t)
    for (size_t i = 0; i < kBlockBytes; ++i)
      if (kv[t][7 * kBlockBytes + i] != Value(prev, t, i)) ok = 0;
  MPI_Barrier(MPI_COMM_WORLD);  // nobody leaves while a peer still links to it
  dd.Finalize();
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) printf("mpi_blocks: %d ranks, pulled and pushed blocks through the engine: %s\n", size,
                        all_ok ? "OK" : "FAILED");
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
