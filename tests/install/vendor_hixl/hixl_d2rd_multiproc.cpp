// Device to remote device in two processes, as a new user writes it from the
// vendor's documentation: the server fills 8 MiB of device memory, the client
// READs it in 512 descriptors of 16 KiB into its own device memory, checks
// every byte (through aclrtMallocHost and a device-to-host copy), then WRITEs
// a second pattern back, which the server checks.
//   hixl_d2rd_multiproc --role=server|client --port=P [--protocol=roce:device]
// Engines on 127.0.0.1:P (server) and P+1 (client), addresses over TCP P+2.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "hixl/hixl.h"
#include "sync_socket.h"

using namespace hixl;

namespace {

constexpr size_t kBufSize = 8 * 1024 * 1024;
constexpr size_t kBlockSize = 16 * 1024;
constexpr int32_t kTimeoutMs = 30000;

uint8_t Pattern(size_t i, uint8_t seed) { return static_cast<uint8_t>(seed + i * 31 + (i >> 16)); }

const char *ErrMsg() {
  const char *m = aclGetRecentErrMsg();
  return m == nullptr ? "no error" : m;
}

#define CHECK_HIXL(expr)                                                 \
  do {                                                                   \
    Status s_ = (expr);                                                  \
    if (s_ != SUCCESS) {                                                 \
      printf("[ERROR] %s failed: %u, errmsg=%s\n", #expr, s_, ErrMsg()); \
      return EXIT_FAILURE;                                               \
    }                                                                    \
  } while (0)

#define CHECK_ACL(expr)                                          \
  do {                                                           \
    if ((expr) != ACL_ERROR_NONE) {                              \
      printf("[ERROR] %s failed, errmsg=%s\n", #expr, ErrMsg()); \
      return EXIT_FAILURE;                                       \
    }                                                            \
  } while (0)

struct Device {
  int32_t id = 0;
  void *buf = nullptr;
  MemHandle handle = nullptr;
};

int Setup(Hixl &engine, Device &dev, const std::string &name, const std::string &protocol) {
  CHECK_ACL(aclrtSetDevice(dev.id));
  std::map<AscendString, AscendString> options;
  options[OPTION_GLOBAL_RESOURCE_CONFIG] =
      ("{\"comm_resource_config.protocol_desc\": [\"" + protocol + "\"]}").c_str();
  CHECK_HIXL(engine.Initialize(name.c_str(), options));
  CHECK_ACL(aclrtMalloc(&dev.buf, kBufSize, ACL_MEM_MALLOC_HUGE_ONLY));
  MemDesc desc{};
  desc.addr = reinterpret_cast<uintptr_t>(dev.buf);
  desc.len = kBufSize;
  CHECK_HIXL(engine.RegisterMem(desc, MEM_DEVICE, dev.handle));
  return EXIT_SUCCESS;
}

// Counts the bytes of device memory that differ from pattern `seed`; -1 on error.
long Mismatches(void *dev_buf, uint8_t seed) {
  void *host = nullptr;
  if (aclrtMallocHost(&host, kBufSize) != ACL_SUCCESS) return -1;
  if (aclrtMemcpy(host, kBufSize, dev_buf, kBufSize, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) return -1;
  long bad = 0;
  const uint8_t *p = static_cast<const uint8_t *>(host);
  for (size_t i = 0; i < kBufSize; ++i) bad += p[i] != Pattern(i, seed) ? 1 : 0;
  aclrtFreeHost(host);
  return bad;
}

int Fill(void *dev_buf, uint8_t seed) {
  std::vector<uint8_t> fill(kBufSize);
  for (size_t i = 0; i < kBufSize; ++i) fill[i] = Pattern(i, seed);
  CHECK_ACL(aclrtMemcpy(dev_buf, kBufSize, fill.data(), kBufSize, ACL_MEMCPY_HOST_TO_DEVICE));
  return EXIT_SUCCESS;
}

int Teardown(Hixl &engine, Device &dev) {
  CHECK_HIXL(engine.DeregisterMem(dev.handle));
  CHECK_ACL(aclrtFree(dev.buf));
  engine.Finalize();
  CHECK_ACL(aclrtResetDevice(dev.id));
  return EXIT_SUCCESS;
}

int RunServer(int port, const std::string &protocol) {
  Hixl engine;
  Device dev;
  dev.id = 2;
  if (Setup(engine, dev, "127.0.0.1:" + std::to_string(port), protocol) != EXIT_SUCCESS) return EXIT_FAILURE;
  if (Fill(dev.buf, 1) != EXIT_SUCCESS) return EXIT_FAILURE;
  int fd = sync_socket::ServeAddress(port + 2, reinterpret_cast<uintptr_t>(dev.buf));
  char done = 0;
  const bool told = fd >= 0 && sync_socket::RecvByte(fd, &done) && done == 'd';
  const long bad = Mismatches(dev.buf, 2);
  sync_socket::SendByte(fd, bad == 0 ? 'y' : 'n');
  if (fd >= 0) close(fd);
  if (Teardown(engine, dev) != EXIT_SUCCESS) return EXIT_FAILURE;
  if (!told || bad != 0) {
    printf("[ERROR] server: WRITE into device memory: %ld of %zu bytes differ\n", bad, kBufSize);
    return EXIT_FAILURE;
  }
  printf("[INFO] server: WRITE of %zu bytes into device memory verified\n", kBufSize);
  return EXIT_SUCCESS;
}

int RunClient(int port, const std::string &protocol) {
  Hixl engine;
  Device dev;
  dev.id = 0;
  if (Setup(engine, dev, "127.0.0.1:" + std::to_string(port + 1), protocol) != EXIT_SUCCESS) return EXIT_FAILURE;
  uintptr_t remote = 0;
  int fd = sync_socket::FetchAddress(port + 2, &remote);
  if (fd < 0) return EXIT_FAILURE;
  const std::string server = "127.0.0.1:" + std::to_string(port);
  CHECK_HIXL(engine.Connect(server.c_str(), 5000));
  std::vector<TransferOpDesc> descs;
  for (size_t off = 0; off < kBufSize; off += kBlockSize) {
    TransferOpDesc d{};
    d.local_addr = reinterpret_cast<uintptr_t>(dev.buf) + off;
    d.remote_addr = remote + off;
    d.len = kBlockSize;
    descs.push_back(d);
  }
  CHECK_HIXL(engine.TransferSync(server.c_str(), READ, descs, kTimeoutMs));
  const long bad = Mismatches(dev.buf, 1);
  if (bad != 0) {
    printf("[ERROR] READ of device memory: %ld of %zu bytes differ\n", bad, kBufSize);
    return EXIT_FAILURE;
  }
  printf("[INFO] READ of %zu bytes of remote device memory verified\n", kBufSize);
  if (Fill(dev.buf, 2) != EXIT_SUCCESS) return EXIT_FAILURE;
  CHECK_HIXL(engine.TransferSync(server.c_str(), WRITE, descs, kTimeoutMs));
  char verdict = 0;
  const bool ok = sync_socket::SendByte(fd, 'd') && sync_socket::RecvByte(fd, &verdict) && verdict == 'y';
  close(fd);
  CHECK_HIXL(engine.Disconnect(server.c_str(), 5000));
  if (Teardown(engine, dev) != EXIT_SUCCESS) return EXIT_FAILURE;
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

}  // namespace

int main(int argc, char **argv) {
  std::string role;
  std::string protocol = "roce:device";
  int port = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--role=", 0) == 0) role = arg.substr(7);
    if (arg.rfind("--port=", 0) == 0) port = std::atoi(arg.substr(7).c_str());
    if (arg.rfind("--protocol=", 0) == 0) protocol = arg.substr(11);
  }
  if ((role != "server" && role != "client") || port <= 0) {
    printf("Usage: %s --role=client|server --port=P [--protocol=roce:device]\n", argv[0]);
    return EXIT_FAILURE;
  }
  return role == "server" ? RunServer(port, protocol) : RunClient(port, protocol);
}
