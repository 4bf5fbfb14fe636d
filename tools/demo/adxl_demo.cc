// adxl-demo: the main job end to end, in two processes on loopback.
//
// A "prefill" target process holds a KV cache (layers x {K,V} x blocks) and
// registers it; the "decode" initiator registers its own cache, connects,
// WRITEs every block in one batch, READs them all back into a cleared cache,
// verifies every byte, and prints what moved, over which transport, how fast.
//
//   adxl-demo [--layers N] [--blocks N] [--block-kib N] [--port P]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"

namespace {

struct Shape {
  size_t layers = 32;
  size_t blocks = 64;
  size_t block_bytes = 16 << 10;
  size_t bytes() const { return layers * 2 * blocks * block_bytes; }
  size_t descriptors() const { return layers * 2 * blocks; }
};

uint8_t Expected(size_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 13); }

// KV caches come from MallocMem (NUMA-placed, shareable) and the engines run
// with EnableUseFabricMem=1, so that same-node peers copy through a direct
// mapping: the recommended set-up for a node's prefill and decode engines.
const std::map<adxl::AscendString, adxl::AscendString> kOptions = {{"EnableUseFabricMem", "1"}};

void *AllocTouched(size_t n) {
  void *p = nullptr;
  if (adxl::AdxlEngine::MallocMem(adxl::MEM_HOST, n, &p) != adxl::SUCCESS) return nullptr;
  memset(p, 0, n);
  return p;
}

void FreeCache(void *p) {
  if (p != nullptr) adxl::AdxlEngine::FreeMem(p);
}

int Target(const std::string &name, const Shape &shape, int up, int down) {
  adxl::AdxlEngine engine;
  void *cache = AllocTouched(shape.bytes());
  adxl::MemHandle h = nullptr;
  if (cache == nullptr || engine.Initialize(name.c_str(), kOptions) != adxl::SUCCESS ||
      engine.RegisterMem({reinterpret_cast<uintptr_t>(cache), shape.bytes()}, adxl::MEM_HOST, h) != adxl::SUCCESS) {
    uintptr_t zero = 0;
    (void)!write(up, &zero, sizeof(zero));
    return 1;
  }
  uintptr_t addr = reinterpret_cast<uintptr_t>(cache);
  (void)!write(up, &addr, sizeof(addr));
  char done;
  (void)!read(down, &done, 1);  // the initiator has finished; the target called nothing meanwhile
  engine.Finalize();
  FreeCache(cache);
  return 0;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char **argv) {
  Shape shape;
  int port = 26100;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    size_t v = strtoull(argv[i + 1], nullptr, 10);
    if (k == "--layers") shape.layers = v;
    else if (k == "--blocks") shape.blocks = v;
    else if (k == "--block-kib") shape.block_bytes = v << 10;
    else if (k == "--port") port = static_cast<int>(v);
    else {
      fprintf(stderr, "usage: %s [--layers N] [--blocks N] [--block-kib N] [--port P]\n", argv[0]);
      return 2;
    }
  }
  const std::string target = "127.0.0.1:" + std::to_string(port);
  int up[2], down[2];
  if (pipe(up) != 0 || pipe(down) != 0) return 1;
  pid_t child = fork();
  if (child == 0) {
    close(up[0]);
    close(down[1]);  // so that the target sees EOF if the initiator dies
    _exit(Target(target, shape, up[1], down[0]));
  }
  close(up[1]);
  close(down[0]);
  uintptr_t remote = 0;
  if (read(up[0], &remote, sizeof(remote)) != sizeof(remote) || remote == 0) {
    fprintf(stderr, "demo: the target process could not start its engine\n");
    return 1;
  }

  adxl::AdxlEngine engine;
  auto *cache = static_cast<uint8_t *>(AllocTouched(shape.bytes()));
  for (size_t i = 0; cache != nullptr && i < shape.bytes(); ++i) cache[i] = Expected(i);
  adxl::MemHandle h = nullptr;
  int rc = 1;
  std::vector<adxl::TransferOpDesc> descs;
  // Block b of tensor t goes to the mirrored block of the target: the
  // descriptor list a decode engine builds for one request's KV blocks.
  for (size_t d = 0; d < shape.descriptors(); ++d) {
    const size_t off = d * shape.block_bytes;
    descs.push_back({reinterpret_cast<uintptr_t>(cache) + off, remote + off, shape.block_bytes});
  }
  double t_write = 0, t_read = 0;
  adxl::ext::LinkInfo info;
  if (cache != nullptr && engine.Initialize("127.0.0.1", kOptions) == adxl::SUCCESS &&
      engine.RegisterMem({reinterpret_cast<uintptr_t>(cache), shape.bytes()}, adxl::MEM_HOST, h) == adxl::SUCCESS &&
      engine.Connect(target.c_str(), 5000) == adxl::SUCCESS) {
    auto t0 = std::chrono::steady_clock::now();
    adxl::Status w = engine.TransferSync(target.c_str(), adxl::WRITE, descs, 60000);
    t_write = Seconds(t0);
    memset(cache, 0, shape.bytes());
    t0 = std::chrono::steady_clock::now();
    adxl::Status r = engine.TransferSync(target.c_str(), adxl::READ, descs, 60000);
    t_read = Seconds(t0);
    size_t bad = 0;
    for (size_t i = 0; i < shape.bytes(); ++i) bad += cache[i] != Expected(i);
    adxl::ext::GetLinkInfo(engine, target.c_str(), info);
    if (w == adxl::SUCCESS && r == adxl::SUCCESS && bad == 0) rc = 0;
    printf("\nKV cache: %zu layers x {K,V} x %zu blocks of %zu KiB = %.1f MiB in %zu descriptors\n", shape.layers,
           shape.blocks, shape.block_bytes >> 10, shape.bytes() / 1048576.0, shape.descriptors());
    printf("link: %s lane, transports %s\n\n", info.lane.c_str(), info.transports.c_str());
    printf("%-6s %12s %12s %10s %10s %s\n", "op", "descriptors", "bytes", "ms", "GB/s", "status");
    printf("%-6s %12zu %12zu %10.2f %10.2f %s\n", "WRITE", descs.size(), shape.bytes(), t_write * 1e3,
           shape.bytes() / t_write / 1e9, w == adxl::SUCCESS ? "ok" : "FAILED");
    printf("%-6s %12zu %12zu %10.2f %10.2f %s\n", "READ", descs.size(), shape.bytes(), t_read * 1e3,
           shape.bytes() / t_read / 1e9, r == adxl::SUCCESS ? "ok" : "FAILED");
    printf("\nverify: %zu of %zu bytes wrong -> %s\n", bad, shape.bytes(), bad == 0 ? "every byte verified" : "MISMATCH");
  } else {
    fprintf(stderr, "demo: engine set-up failed (see the log above)\n");
  }
  engine.Finalize();
  char done = 1;
  (void)!write(down[1], &done, 1);
  int status = 0;
  waitpid(child, &status, 0);
  FreeCache(cache);
  return rc;
}
