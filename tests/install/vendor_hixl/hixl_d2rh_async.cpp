// Device to remote host, asynchronously, as a new user writes it from the
// vendor's documentation: the client WRITEs 8 MiB of device memory
// (aclrtMalloc) into the server's host memory (aclrtMallocHost) with one
// TransferAsync of 512 descriptors, polling GetTransferStatus; connect and
// disconnect are asynchronous too.  The server checks every byte.
//   hixl_d2rh_async --role=server|client --port=P [--protocol=roce:host]
// Engines on 127.0.0.1:P (server) and P+1 (client), addresses over TCP P+2.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "hixl/hixl.h"
#include "sync_socket.h"

using namespace hixl;

namespace {

constexpr size_t kBufferSize = 8 * 1024 * 1024;
constexpr size_t kChunkSize = 16 * 1024;
constexpr int32_t kConnTimeout = 5000;
constexpr int32_t kMaxPolls = 100000;

uint8_t Expected(size_t i) { return static_cast<uint8_t>(0xA5 ^ (i * 13) ^ (i >> 14)); }

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

std::map<AscendString, AscendString> Options(const std::string &protocol) {
  std::map<AscendString, AscendString> options;
  options[OPTION_GLOBAL_RESOURCE_CONFIG] =
      ("{\"comm_resource_config.protocol_desc\": [\"" + protocol + "\"]}").c_str();
  return options;
}

int RunServer(int port, const std::string &protocol) {
  CHECK_ACL(aclrtSetDevice(2));
  Hixl engine;
  CHECK_HIXL(engine.Initialize(("127.0.0.1:" + std::to_string(port)).c_str(), Options(protocol)));
  void *host = nullptr;
  CHECK_ACL(aclrtMallocHost(&host, kBufferSize));
  std::memset(host, 0, kBufferSize);
  MemDesc desc{};
  desc.addr = reinterpret_cast<uintptr_t>(host);
  desc.len = kBufferSize;
  MemHandle handle = nullptr;
  CHECK_HIXL(engine.RegisterMem(desc, MEM_HOST, handle));
  int fd = sync_socket::ServeAddress(port + 2, desc.addr);
  char done = 0;
  const bool told = fd >= 0 && sync_socket::RecvByte(fd, &done) && done == 'd';
  size_t bad = 0;
  const uint8_t *p = static_cast<const uint8_t *>(host);
  for (size_t i = 0; i < kBufferSize; ++i) bad += p[i] != Expected(i) ? 1 : 0;
  sync_socket::SendByte(fd, bad == 0 ? 'y' : 'n');
  if (fd >= 0) close(fd);
  CHECK_HIXL(engine.DeregisterMem(handle));
  CHECK_ACL(aclrtFreeHost(host));
  engine.Finalize();
  CHECK_ACL(aclrtResetDevice(2));
  if (!told || bad != 0) {
    printf("[ERROR] server: %s; %zu of %zu bytes differ\n", told ? "client done" : "client lost", bad, kBufferSize);
    return EXIT_FAILURE;
  }
  printf("[INFO] server: %zu bytes from remote device memory verified\n", kBufferSize);
  return EXIT_SUCCESS;
}

// Polls the async connect state of `remote` until it is `want` (or failed).
int WaitConnectState(Hixl &engine, const std::string &remote, AsyncConnectStatus want) {
  AsyncConnectStatus st = AsyncConnectStatus::CONNECT_PENDING;
  for (int i = 0; i < kMaxPolls; ++i) {
    CHECK_HIXL(engine.GetAsyncConnectStatus(remote.c_str(), st));
    if (st == want) return EXIT_SUCCESS;
    if (st == AsyncConnectStatus::CONNECT_FAILED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  printf("[ERROR] async connect state %d, wanted %d, errmsg=%s\n", static_cast<int>(st), static_cast<int>(want),
         ErrMsg());
  return EXIT_FAILURE;
}

int RunClient(int port, const std::string &protocol) {
  CHECK_ACL(aclrtSetDevice(0));
  Hixl engine;
  CHECK_HIXL(engine.Initialize(("127.0.0.1:" + std::to_string(port + 1)).c_str(), Options(protocol)));
  void *dev = nullptr;
  CHECK_ACL(aclrtMalloc(&dev, kBufferSize, ACL_MEM_MALLOC_HUGE_FIRST));
  std::vector<uint8_t> fill(kBufferSize);
  for (size_t i = 0; i < kBufferSize; ++i) fill[i] = Expected(i);
  CHECK_ACL(aclrtMemcpy(dev, kBufferSize, fill.data(), kBufferSize, ACL_MEMCPY_HOST_TO_DEVICE));
  MemDesc desc{};
  desc.addr = reinterpret_cast<uintptr_t>(dev);
  desc.len = kBufferSize;
  MemHandle handle = nullptr;
  CHECK_HIXL(engine.RegisterMem(desc, MEM_DEVICE, handle));
  uintptr_t remote_host = 0;
  int fd = sync_socket::FetchAddress(port + 2, &remote_host);
  if (fd < 0) return EXIT_FAILURE;
  const std::string server = "127.0.0.1:" + std::to_string(port);
  CHECK_HIXL(engine.ConnectAsync(server.c_str(), kConnTimeout));
  if (WaitConnectState(engine, server, AsyncConnectStatus::CONNECTED) != EXIT_SUCCESS) return EXIT_FAILURE;

  std::vector<TransferOpDesc> descs;
  for (size_t off = 0; off < kBufferSize; off += kChunkSize) {
    TransferOpDesc d{};
    d.local_addr = desc.addr + off;
    d.remote_addr = remote_host + off;
    d.len = kChunkSize;
    descs.push_back(d);
  }
  TransferArgs args{};
  TransferReq req = nullptr;
  CHECK_HIXL(engine.TransferAsync(server.c_str(), WRITE, descs, args, req));
  TransferStatus st = TransferStatus::WAITING;
  int polls = 0;
  while (st == TransferStatus::WAITING && polls++ < kMaxPolls) {
    CHECK_HIXL(engine.GetTransferStatus(req, st));
    if (st == TransferStatus::WAITING) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (st != TransferStatus::COMPLETED) {
    printf("[ERROR] TransferAsync ended %d after %d polls, errmsg=%s\n", static_cast<int>(st), polls, ErrMsg());
    return EXIT_FAILURE;
  }
  printf("[INFO] TransferAsync WRITE of %zu descriptors completed after %d polls\n", descs.size(), polls);
  char verdict = 0;
  const bool ok = sync_socket::SendByte(fd, 'd') && sync_socket::RecvByte(fd, &verdict) && verdict == 'y';
  close(fd);
  CHECK_HIXL(engine.DisconnectAsync(server.c_str(), kConnTimeout));
  if (WaitConnectState(engine, server, AsyncConnectStatus::NOT_CONNECT) != EXIT_SUCCESS) return EXIT_FAILURE;
  CHECK_HIXL(engine.DeregisterMem(handle));
  CHECK_ACL(aclrtFree(dev));
  engine.Finalize();
  CHECK_ACL(aclrtResetDevice(0));
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

}  // namespace

int main(int argc, char **argv) {
  std::string role;
  std::string protocol = "roce:host";
  int port = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--role=", 0) == 0) role = arg.substr(7);
    if (arg.rfind("--port=", 0) == 0) port = std::atoi(arg.substr(7).c_str());
    if (arg.rfind("--protocol=", 0) == 0) protocol = arg.substr(11);
  }
  if ((role != "server" && role != "client") || port <= 0) {
    printf("Usage: %s --role=client|server --port=P [--protocol=roce:host]\n", argv[0]);
    return EXIT_FAILURE;
  }
  return role == "server" ? RunServer(port, protocol) : RunClient(port, protocol);
}
