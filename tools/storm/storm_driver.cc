// The driver side of adxl-storm (storm.h): starting peer processes and
// reading their reports.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "storm.h"

namespace storm {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

std::map<adxl::AscendString, adxl::AscendString> EngineOptions(bool rdma) {
  std::map<adxl::AscendString, adxl::AscendString> opts{{"adxl.BufferPool", "0:0"}};
  if (rdma) opts["GlobalResourceConfig"] = R"({"comm_resource_config.protocol_desc":"roce:host"})";
  return opts;
}

bool StartTarget(adxl::AdxlEngine &engine, const std::string &name, bool rdma, void *region, size_t len,
                 adxl::MemHandle *handle) {
  if (engine.Initialize(name.c_str(), EngineOptions(rdma)) != adxl::SUCCESS ||
      engine.RegisterMem({reinterpret_cast<uintptr_t>(region), len}, adxl::MEM_HOST, *handle) != adxl::SUCCESS) {
    fprintf(stderr, "storm: the target engine did not start\n");
    return false;
  }
  return true;
}

bool FreePort(uint16_t *port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0;
  if (fd >= 0) close(fd);
  *port = ntohs(a.sin_port);
  return ok;
}

// Starts peer `index` (this executable with --peer); false on failure.
bool Spawn(const std::string &self, const PeerArgs &a, Peer *p) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return false;
  fcntl(sv[0], F_SETFD, FD_CLOEXEC);
  std::vector<std::string> args{self,          "--peer",        std::to_string(sv[1]),   std::to_string(a.index),
                                a.target,      std::to_string(a.region), a.rdma ? "rdma" : "hccs",
                                std::to_string(a.timeout_ms), a.name};
  // In another network namespace: through `ip netns exec`, which also
  // mounts that namespace's /sys, where UCX finds its interfaces.
  if (!a.netns.empty()) args.insert(args.begin(), {"ip", "netns", "exec", a.netns});
  std::vector<char *> argv;
  for (std::string &s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    // Diagnosis: ADXL_STORM_TRACE_PEER=i gives peer i UCX's debug log.
    const char *trace = getenv("ADXL_STORM_TRACE_PEER");
    if (trace != nullptr && atoi(trace) == a.index) setenv("UCX_LOG_LEVEL", "debug", 1);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return false;
  }
  p->pid = pid;
  p->fd = sv[0];
  return true;
}

// Reads one line from every peer in `which` until each answered or the
// deadline passed; a peer that closed or timed out gets "lost".
void Collect(std::vector<Peer> &peers, const std::vector<int> &which, int timeout_ms) {
  const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<int> left = which;
  for (int i : which) peers[i].report.clear();
  while (!left.empty()) {
    const long ms = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    if (ms <= 0) break;
    std::vector<pollfd> fds;
    for (int i : left) fds.push_back({peers[i].fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), static_cast<int>(std::min(ms, 1000L))) <= 0) continue;
    std::vector<int> still;
    for (size_t k = 0; k < left.size(); ++k) {
      Peer &p = peers[left[k]];
      if (fds[k].revents == 0) {
        still.push_back(left[k]);
        continue;
      }
      std::string line;
      if (ReadLine(p.fd, &p.buffer, &line, 0)) {
        p.report = line;
      } else if (p.buffer.find('\n') == std::string::npos && (fds[k].revents & (POLLHUP | POLLERR))) {
        p.report = "lost";
      } else {
        still.push_back(left[k]);
      }
    }
    left.swap(still);
  }
  for (int i : left) peers[i].report = "lost (no answer in time)";
}

}  // namespace storm
