// The HIXL quickstart as a new user writes it from the vendor's documentation:
// a server fills 1 MiB of device memory (aclrtMalloc) and registers it, a
// client READs it into its own device memory and checks every byte.
//   hixl_quickstart_read --role=server|client --port=P
// Engines on 127.0.0.1:P (server) and 127.0.0.1:P+1 (client); the address
// travels over TCP port P+2.  Exit status 0: every byte arrived.
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

constexpr size_t kBufSize = 1024 * 1024;
constexpr int32_t kTimeoutMs = 5000;

uint8_t Expected(size_t i) { return static_cast<uint8_t>(i * 7 + (i >> 12)); }

const char *ErrMsg() {
  const char *m = aclGetRecentErrMsg();
  return m == nullptr ? "no error" : m;
}

#define CHECK_HIXL(expr)                                                              \
  do {                                                                                \
    Status s_ = (expr);                                                               \
    if (s_ != SUCCESS) {                                                              \
      printf("[ERROR] %s failed: %u, errmsg=%s\n", #expr, s_, ErrMsg());              \
      return EXIT_FAILURE;                                                            \
    }                                                                                 \
  } while (0)

#define CHECK_ACL(expr)                                                              \
  do {                                                                               \
    if ((expr) != ACL_ERROR_NONE) {                                                  \
      printf("[ERROR] %s failed, errmsg=%s\n", #expr, ErrMsg());                     \
      return EXIT_FAILURE;                                                           \
    }                                                                                \
  } while (0)

int Init(Hixl &engine, int32_t device, const std::string &name) {
  CHECK_ACL(aclrtSetDevice(device));
  std::map<AscendString, AscendString> options;
  options[OPTION_GLOBAL_RESOURCE_CONFIG] = R"({"comm_resource_config.protocol_desc": ["hccs:device"]})";
  CHECK_HIXL(engine.Initialize(name.c_str(), options));
  return EXIT_SUCCESS;
}

int RunServer(int port) {
  Hixl engine;
  if (Init(engine, 2, "127.0.0.1:" + std::to_string(port)) != EXIT_SUCCESS) return EXIT_FAILURE;
  void *buf = nullptr;
  CHECK_ACL(aclrtMalloc(&buf, kBufSize, ACL_MEM_MALLOC_HUGE_ONLY));
  std::vector<uint8_t> fill(kBufSize);
  for (size_t i = 0; i < kBufSize; ++i) fill[i] = Expected(i);
  CHECK_ACL(aclrtMemcpy(buf, kBufSize, fill.data(), kBufSize, ACL_MEMCPY_HOST_TO_DEVICE));
  MemDesc desc{};
  desc.addr = reinterpret_cast<uintptr_t>(buf);
  desc.len = kBufSize;
  MemHandle handle = nullptr;
  CHECK_HIXL(engine.RegisterMem(desc, MEM_DEVICE, handle));
  int fd = sync_socket::ServeAddress(port + 2, desc.addr);
  char done = 0;
  const bool ok = fd >= 0 && sync_socket::RecvByte(fd, &done) && done == 'd';
  if (fd >= 0) close(fd);
  CHECK_HIXL(engine.DeregisterMem(handle));
  CHECK_ACL(aclrtFree(buf));
  engine.Finalize();
  CHECK_ACL(aclrtResetDevice(2));
  printf("[INFO] server %s\n", ok ? "done" : "lost its client");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

int RunClient(int port) {
  Hixl engine;
  if (Init(engine, 0, "127.0.0.1:" + std::to_string(port + 1)) != EXIT_SUCCESS) return EXIT_FAILURE;
  void *buf = nullptr;
  CHECK_ACL(aclrtMalloc(&buf, kBufSize, ACL_MEM_MALLOC_HUGE_ONLY));
  CHECK_ACL(aclrtMemset(buf, kBufSize, 0, kBufSize));
  MemDesc desc{};
  desc.addr = reinterpret_cast<uintptr_t>(buf);
  desc.len = kBufSize;
  MemHandle handle = nullptr;
  CHECK_HIXL(engine.RegisterMem(desc, MEM_DEVICE, handle));
  uintptr_t remote_addr = 0;
  int fd = sync_socket::FetchAddress(port + 2, &remote_addr);
  if (fd < 0) return EXIT_FAILURE;
  const std::string server = "127.0.0.1:" + std::to_string(port);
  CHECK_HIXL(engine.Connect(server.c_str(), kTimeoutMs));
  TransferOpDesc op{};
  op.local_addr = desc.addr;
  op.remote_addr = remote_addr;
  op.len = kBufSize;
  CHECK_HIXL(engine.TransferSync(server.c_str(), READ, {op}, kTimeoutMs));
  std::vector<uint8_t> host(kBufSize);
  CHECK_ACL(aclrtMemcpy(host.data(), kBufSize, buf, kBufSize, ACL_MEMCPY_DEVICE_TO_HOST));
  size_t bad = 0;
  for (size_t i = 0; i < kBufSize; ++i) bad += host[i] != Expected(i) ? 1 : 0;
  sync_socket::SendByte(fd, 'd');
  close(fd);
  CHECK_HIXL(engine.Disconnect(server.c_str(), kTimeoutMs));
  CHECK_HIXL(engine.DeregisterMem(handle));
  CHECK_ACL(aclrtFree(buf));
  engine.Finalize();
  CHECK_ACL(aclrtResetDevice(0));
  if (bad != 0) {
    printf("[ERROR] READ: %zu of %zu bytes differ\n", bad, kBufSize);
    return EXIT_FAILURE;
  }
  printf("[INFO] READ of %zu bytes of device memory verified\n", kBufSize);
  return EXIT_SUCCESS;
}

}  // namespace

int main(int argc, char **argv) {
  std::string role;
  int port = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--role=", 0) == 0) role = arg.substr(7);
    if (arg.rfind("--port=", 0) == 0) port = std::atoi(arg.substr(7).c_str());
  }
  if ((role != "server" && role != "client") || port <= 0) {
    printf("Usage: %s --role=client|server --port=P\n", argv[0]);
    return EXIT_FAILURE;
  }
  return role == "server" ? RunServer(port) : RunClient(port);
}
