// adxl_test_peer: an engine in its own process, driven line by line on stdin
// by a test (tests/support/peer_process.h).  Every command prints exactly one
// answer line on stdout: "ok ..." or "status <n>" or "err <why>".
//
//   init <name> [key=value ...]      Initialize
//   alloc <bytes>                    aligned buffer, prints "ok <index> <addr>"
//   malloc <bytes>                   AdxlEngine::MallocMem(host) buffer, "ok <index> <addr>"
//   memfd <bytes>                    memfd_create + MAP_SHARED buffer, "ok <index> <addr>"
//   shm <bytes>                      /dev/shm file (shm_open, unlinked once mapped) + MAP_SHARED,
//                                    "ok <index> <addr>"
//   reg <index> [offset len]         RegisterMem(host) of a buffer (or part); "ok <handle>"
//   dereg <handle>                   DeregisterMem
//   fill <index> <seed>              pattern fill of a whole buffer
//   hash <index> <offset> <len>      "ok <fnv64>"
//   byte <index> <offset>            "ok <value>"
//   connect <remote> <timeout_ms>    Connect
//   disconnect <remote> <timeout_ms> Disconnect
//   write|read <remote> <timeout_ms> <local_index> <local_off> <remote_addr> <len> [piece]
//                                    one TransferSync; with <piece>, a batch of descriptors of
//                                    <piece> bytes each (the last one shorter) covering <len>
//   notify <remote> <name> <msg> <timeout_ms>
//   notifies                         "ok <count> name=msg ..."
//   lane <remote>                    "ok <lane> <transports>" of the link (adxl_ext.h)
//   regions <remote>                 "ok <count> <addr>:<len>:<path> ..." (adxl_ext.h GetLinkRegions)
//   finalize                         Finalize
//   holdfds <ms>                     forks a child that keeps this process's sockets open for <ms> ms
//                                    (stdio closed): once this process is killed, its peers see no
//                                    closed connection and learn of the death only from the transport
//   exit                             exit(0) without Finalize (like a crash, but clean stdout)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"
#include "pattern.h"

namespace {

struct Buffer {
  void *ptr = nullptr;
  size_t len = 0;
};

int g_reply_fd = 1;

// Answers go to the original stdout; everything else the process prints
// (UCX logs to stdout by default) is moved to stderr in main().
void Reply(const std::string &s) {
  std::string l = s + "\n";
  ssize_t n = write(g_reply_fd, l.data(), l.size());
  (void)n;
}

void ReplyStatus(adxl::Status st) { Reply(st == adxl::SUCCESS ? "ok" : "status " + std::to_string(st)); }

}  // namespace

int main() {
  g_reply_fd = dup(1);
  dup2(2, 1);
  adxl::AdxlEngine engine;
  std::vector<Buffer> buffers;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "init") {
      std::string name, kv;
      in >> name;
      std::map<adxl::AscendString, adxl::AscendString> opts;
      while (in >> kv) {
        size_t eq = kv.find('=');
        opts[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
      }
      ReplyStatus(engine.Initialize(name.c_str(), opts));
    } else if (cmd == "alloc") {
      size_t len = 0;
      in >> len;
      void *p = nullptr;
      if (posix_memalign(&p, 4096, len) != 0) {
        Reply("err alloc");
        continue;
      }
      buffers.push_back({p, len});
      Reply("ok " + std::to_string(buffers.size() - 1) + " " + std::to_string(reinterpret_cast<uintptr_t>(p)));
    } else if (cmd == "memfd") {
      // A shared file mapping (memfd_create, MAP_SHARED), which the engine
      // finds out by itself: same-node peers map it directly.  The
      // descriptor stays open for the peer's life.
      size_t len = 0;
      in >> len;
      const int fd = memfd_create("adxl-peer", MFD_CLOEXEC);
      void *p = fd >= 0 && ftruncate(fd, static_cast<off_t>(len)) == 0
                    ? mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                    : MAP_FAILED;
      if (p == MAP_FAILED) {
        Reply("err memfd");
        continue;
      }
      buffers.push_back({p, len});
      Reply("ok " + std::to_string(buffers.size() - 1) + " " + std::to_string(reinterpret_cast<uintptr_t>(p)));
    } else if (cmd == "shm") {
      // A /dev/shm file, mapped shared; its name goes at once (the mapping
      // and the descriptor, kept for the peer's life, hold the pages), so
      // nothing is left behind in /dev/shm however the peer ends.
      size_t len = 0;
      in >> len;
      static int serial = 0;
      const std::string name = "/adxl-peer-" + std::to_string(getpid()) + "-" + std::to_string(serial++);
      const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      void *p = fd >= 0 && ftruncate(fd, static_cast<off_t>(len)) == 0
                    ? mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                    : MAP_FAILED;
      if (fd >= 0) shm_unlink(name.c_str());
      if (p == MAP_FAILED) {
        Reply("err shm");
        continue;
      }
      buffers.push_back({p, len});
      Reply("ok " + std::to_string(buffers.size() - 1) + " " + std::to_string(reinterpret_cast<uintptr_t>(p)));
    } else if (cmd == "malloc") {
      size_t len = 0;
      in >> len;
      void *p = nullptr;
      adxl::Status st = adxl::AdxlEngine::MallocMem(adxl::MEM_HOST, len, &p);
      if (st != adxl::SUCCESS) {
        ReplyStatus(st);
        continue;
      }
      buffers.push_back({p, len});
      Reply("ok " + std::to_string(buffers.size() - 1) + " " + std::to_string(reinterpret_cast<uintptr_t>(p)));
    } else if (cmd == "reg" || cmd == "reglocal") {  // reglocal: MemDesc::local_only
      size_t idx = 0, off = 0, len = 0;
      in >> idx;
      if (idx >= buffers.size()) {
        Reply("err index");
        continue;
      }
      len = buffers[idx].len;
      in >> off >> len;
      adxl::MemDesc d{};
      d.addr = reinterpret_cast<uintptr_t>(buffers[idx].ptr) + off;
      d.len = len;
      d.local_only = cmd == "reglocal";
      adxl::MemHandle h = nullptr;
      adxl::Status st = engine.RegisterMem(d, adxl::MEM_HOST, h);
      if (st == adxl::SUCCESS) {
        Reply("ok " + std::to_string(reinterpret_cast<uintptr_t>(h)));
      } else {
        ReplyStatus(st);
      }
    } else if (cmd == "dereg") {
      uintptr_t h = 0;
      in >> h;
      ReplyStatus(engine.DeregisterMem(reinterpret_cast<adxl::MemHandle>(h)));
    } else if (cmd == "fill") {
      size_t idx = 0;
      uint64_t seed = 0;
      in >> idx >> seed;
      if (idx >= buffers.size()) {
        Reply("err index");
        continue;
      }
      adxl_test::FillPattern(buffers[idx].ptr, buffers[idx].len, seed);
      Reply("ok");
    } else if (cmd == "hash" || cmd == "byte") {
      size_t idx = 0, off = 0, len = 1;
      in >> idx >> off;
      if (cmd == "hash") in >> len;
      if (idx >= buffers.size() || off + len > buffers[idx].len) {
        Reply("err range");
        continue;
      }
      const uint8_t *p = static_cast<const uint8_t *>(buffers[idx].ptr) + off;
      Reply("ok " + std::to_string(cmd == "hash" ? adxl_test::Hash(p, len) : p[0]));
    } else if (cmd == "connect" || cmd == "disconnect") {
      std::string remote;
      int32_t timeout = 0;
      in >> remote >> timeout;
      ReplyStatus(cmd == "connect" ? engine.Connect(remote.c_str(), timeout)
                                   : engine.Disconnect(remote.c_str(), timeout));
    } else if (cmd == "write" || cmd == "read") {
      std::string remote;
      int32_t timeout = 0;
      size_t idx = 0, off = 0, len = 0;
      uintptr_t raddr = 0;
      in >> remote >> timeout >> idx >> off >> raddr >> len;
      size_t piece = len;
      if (!(in >> piece)) piece = len;  // absent: one descriptor
      if (idx >= buffers.size()) {
        Reply("err index");
        continue;
      }
      if (piece == 0 && len > 0) {
        Reply("err piece");
        continue;
      }
      const uintptr_t local = reinterpret_cast<uintptr_t>(buffers[idx].ptr) + off;
      std::vector<adxl::TransferOpDesc> batch;
      if (len == 0) batch.push_back({local, raddr, 0});  // as the engine gets it, for its checks
      for (size_t done = 0; done < len; done += piece) {
        batch.push_back({local + done, raddr + done, std::min(piece, len - done)});
      }
      ReplyStatus(engine.TransferSync(remote.c_str(), cmd == "write" ? adxl::WRITE : adxl::READ, batch, timeout));
    } else if (cmd == "notify") {
      std::string remote, name, msg;
      int32_t timeout = 0;
      in >> remote >> name >> msg >> timeout;
      adxl::NotifyDesc n{name.c_str(), msg.c_str()};
      ReplyStatus(engine.SendNotify(remote.c_str(), n, timeout));
    } else if (cmd == "notifies") {
      std::vector<adxl::NotifyDesc> got;
      adxl::Status st = engine.GetNotifies(got);
      if (st != adxl::SUCCESS) {
        ReplyStatus(st);
        continue;
      }
      std::string out = "ok " + std::to_string(got.size());
      for (const auto &n : got) out += std::string(" ") + n.name.GetString() + "=" + n.notify_msg.GetString();
      Reply(out);
    } else if (cmd == "regions") {
      std::string remote;
      in >> remote;
      std::vector<adxl::ext::LinkRegion> regions;
      adxl::Status st = adxl::ext::GetLinkRegions(engine, remote.c_str(), regions);
      if (st != adxl::SUCCESS) {
        ReplyStatus(st);
        continue;
      }
      std::string out = "ok " + std::to_string(regions.size());
      for (const auto &r : regions) {
        out += " " + std::to_string(r.addr) + ":" + std::to_string(r.len) + ":" + r.path;
      }
      Reply(out);
    } else if (cmd == "lane") {
      std::string remote;
      in >> remote;
      adxl::ext::LinkInfo info;
      adxl::Status st = adxl::ext::GetLinkInfo(engine, remote.c_str(), info);
      if (st == adxl::SUCCESS) {
        Reply("ok " + info.lane + " " + info.transports);
      } else {
        ReplyStatus(st);
      }
    } else if (cmd == "holdfds") {
      int ms = 0;
      in >> ms;
      const pid_t child = ms > 0 ? fork() : -1;
      if (child == 0) {
        // Only async-signal-safe calls in the child of a threaded process.
        close(0);
        close(1);
        close(2);
        close(g_reply_fd);
        timespec ts{ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, nullptr);
        _exit(0);
      }
      Reply(child > 0 ? "ok" : "err holdfds needs a time > 0 and a fork that works");
    } else if (cmd == "finalize") {
      engine.Finalize();
      Reply("ok");
    } else if (cmd == "exit") {
      Reply("ok");
      _exit(0);
    } else {
      Reply("err unknown command '" + cmd + "'");
    }
  }
  return 0;
}
