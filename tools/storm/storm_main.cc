// adxl-storm: N peer processes connect at once to one target engine, which
// this process owns (storm.h); it reports what the connect-storm targets name (docs/performance.md, "Scale: a connect storm").
//
//   adxl-storm --peers N [--lane hccs|rdma] [--timeout-ms T] [--idle-ms I] [--no-kill]
//              [--peer-netns NS --target-host ADDR --peer-host ADDR]
//   adxl-storm --kill-rounds R --peers N [--lane hccs|rdma] [--kill-window-ms W]
//
// --peer-netns runs the peers in network namespace NS (ip netns),
// --target-host names the target at ADDR, an address of this process's
// namespace that NS reaches, and --peer-host names each peer (client only)
// at an address of NS (scripts/netns_storm.sh: the storm's bytes cross
// veth pairs, whose counters say which paths carried them).
//
// The second form is the kill storm (storm.h, kill_storm.cc): peers killed
// while they start and connect, then fresh peers link and verify.
//
// Measures, on the target: time from "go" until the last peer reported
// (link time), failures and peer processes that died by a signal (aborts),
// RSS / descriptors / threads added per link, the target's CPU while N links
// sit idle, RegisterMem / DeregisterMem latency with N linked, and whether
// the peers left alive still READ correctly after half of them were killed.
// Exit status 0 only when every peer linked, every byte was verified, no
// process aborted and every survivor verified again.  Timings are reported,
// never asserted.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <dirent.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "adxl/adxl_engine.h"
#include "pattern.h"
#include "storm.h"

namespace {

using Clock = std::chrono::steady_clock;
using storm::Peer;

struct Usage {
  long rss_kib = 0;
  long threads = 0;
  long fds = 0;
  double cpu_s = 0;
};

Usage Measure() {
  Usage u;
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") status >> u.rss_kib;
    if (key == "Threads:") status >> u.threads;
  }
  if (DIR *d = opendir("/proc/self/fd")) {
    while (dirent *e = readdir(d)) u.fds += e->d_name[0] != '.';
    closedir(d);
    --u.fds;  // the directory's own descriptor
  }
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  u.cpu_s = static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
            static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  return u;
}

// CPU seconds process `pid` used so far (/proc/<pid>/stat utime + stime).
double ProcessCpu(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  unsigned long ut = 0, st = 0;
  if (sscanf(text.c_str() + paren + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return 0;
  return static_cast<double>(ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double PeersCpu(const std::vector<Peer> &peers) {
  double sum = 0;
  for (const Peer &p : peers) sum += ProcessCpu(p.pid);
  return sum;
}

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

int PrintUsage(const char *argv0) {
  fprintf(stderr,
          "usage: %s --peers N [--lane hccs|rdma] [--timeout-ms T] [--idle-ms I] [--no-kill]\n"
          "          [--peer-netns NS --target-host ADDR --peer-host ADDR]\n"
          "       %s --kill-rounds R --peers N [--lane hccs|rdma] [--timeout-ms T] [--kill-window-ms W]\n",
          argv0, argv0);
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 9 && strcmp(argv[1], "--peer") == 0) {
    storm::PeerArgs a;
    a.fd = atoi(argv[2]);
    a.index = atoi(argv[3]);
    a.target = argv[4];
    a.region = strtoull(argv[5], nullptr, 10);
    a.rdma = strcmp(argv[6], "rdma") == 0;
    a.timeout_ms = atoi(argv[7]);
    a.name = argv[8];
    return storm::RunPeer(a);
  }
  int n = 0, timeout_ms = 60000, idle_ms = 3000, kill_rounds = 0, kill_window_ms = 0;
  bool rdma = false, kill_half = true;
  std::string peer_netns, target_host = "127.0.0.1", peer_host = "127.0.0.1";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--peers" && v) n = atoi(argv[++i]);
    else if (a == "--lane" && v) rdma = strcmp(argv[++i], "rdma") == 0;
    else if (a == "--timeout-ms" && v) timeout_ms = atoi(argv[++i]);
    else if (a == "--idle-ms" && v) idle_ms = atoi(argv[++i]);
    else if (a == "--no-kill") kill_half = false;
    else if (a == "--peer-netns" && v) peer_netns = argv[++i];
    else if (a == "--target-host" && v) target_host = argv[++i];
    else if (a == "--peer-host" && v) peer_host = argv[++i];
    else if (a == "--kill-rounds" && v) kill_rounds = atoi(argv[++i]);
    else if (a == "--kill-window-ms" && v) kill_window_ms = atoi(argv[++i]);
    else return PrintUsage(argv[0]);
  }
  if (n <= 0 || n > 4096 || timeout_ms <= 0 || idle_ms < 0 || kill_rounds < 0 || kill_window_ms < 0) {
    return PrintUsage(argv[0]);
  }
  signal(SIGPIPE, SIG_IGN);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  char self[PATH_MAX] = {};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0) return 1;
  if (kill_rounds > 0) return storm::RunKillStorm(self, kill_rounds, n, rdma, kill_window_ms, timeout_ms);
  const char *lane = rdma ? "rdma" : "hccs";

  // The peers first: forked before this process starts any engine thread.
  uint16_t port = 0;
  if (!storm::FreePort(&port)) return 1;
  const std::string target = target_host + ":" + std::to_string(port);
  const size_t region_len = storm::kReadBytes + static_cast<size_t>(n) * storm::kWriteBytes;
  void *mem = nullptr;
  if (posix_memalign(&mem, 4096, region_len) != 0) return 1;
  // Declared before the engine, so freed after it (the engine holds it registered).
  const std::unique_ptr<void, decltype(&free)> owned_region(mem, &free);
  auto *region = static_cast<uint8_t *>(mem);
  adxl_test::FillPattern(region, storm::kReadBytes, storm::kReadSeed);
  memset(region + storm::kReadBytes, 0, region_len - storm::kReadBytes);
  std::vector<Peer> peers(n);
  std::vector<int> all;
  const auto init_start = Clock::now();
  for (int i = 0; i < n; ++i) {
    storm::PeerArgs a;
    a.index = i;
    a.target = target;
    a.region = reinterpret_cast<uintptr_t>(region);
    a.rdma = rdma;
    a.timeout_ms = timeout_ms;
    a.netns = peer_netns;
    a.name = peer_host;
    if (!storm::Spawn(self, a, &peers[i])) {
      fprintf(stderr, "storm: cannot start peer %d: %s\n", i, strerror(errno));
      return 1;
    }
    all.push_back(i);
  }
  adxl::AdxlEngine engine;
  adxl::MemHandle h = nullptr;
  if (!storm::StartTarget(engine, target, rdma, region, region_len, &h)) return 1;
  storm::Collect(peers, all, 600000);
  int not_ready = 0;
  for (Peer &p : peers) not_ready += p.report != "ready";
  printf("storm: %d peers on the %s lane started in %.1f s (%d not ready)\n", n, lane, MsSince(init_start) / 1e3,
         not_ready);
  const Usage before = Measure();

  // The storm.
  const double peers_cpu_before = PeersCpu(peers);
  const auto go = Clock::now();
  for (Peer &p : peers) storm::WriteLine(p.fd, "go");
  storm::Collect(peers, all, timeout_ms * 3 + 10000);
  const double link_ms = MsSince(go);
  int failures = 0;
  std::vector<long> connect_ms;
  std::map<std::string, int> why;
  for (int i = 0; i < n; ++i) {
    Peer &p = peers[i];
    if (p.report.rfind("ok ", 0) == 0) {
      connect_ms.push_back(atol(p.report.c_str() + 3));
      const uint8_t *slot = region + storm::kReadBytes + static_cast<size_t>(i) * storm::kWriteBytes;
      for (size_t b = 0; b < storm::kWriteBytes; ++b) {
        if (slot[b] != adxl_test::PatternByte(storm::WriteSeed(i), b)) {
          p.report = "fail target-verify";
          break;
        }
      }
    }
    if (p.report.rfind("ok ", 0) != 0) {
      ++failures;
      ++why[p.report];
    }
  }
  std::vector<bool> ok(n);
  for (int i = 0; i < n; ++i) ok[i] = peers[i].report.rfind("ok ", 0) == 0;
  std::sort(connect_ms.begin(), connect_ms.end());
  const int linked = n - failures;
  const Usage after_storm = Measure();
  const double peers_cpu = PeersCpu(peers) - peers_cpu_before;
  printf("storm: linked and verified %d/%d in %.2f s (Connect median %ld ms, max %ld ms), failures %d; the target "
         "used %.2f s of CPU meanwhile, the peers %.2f s\n",
         linked, n, link_ms / 1e3, connect_ms.empty() ? 0 : connect_ms[connect_ms.size() / 2],
         connect_ms.empty() ? 0 : connect_ms.back(), failures, after_storm.cpu_s - before.cpu_s, peers_cpu);
  for (const auto &w : why) printf("storm:   %d x %s\n", w.second, w.first.c_str());

  // Idle with N links.
  const Usage linked_usage = Measure();
  std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
  const Usage idle = Measure();
  const double idle_pct = idle_ms > 0 ? 100.0 * (idle.cpu_s - linked_usage.cpu_s) / (idle_ms / 1e3) : 0;
  const double per = linked > 0 ? linked : 1;
  printf("storm: per link on the target: %.1f KiB RSS, %.2f fds, %.2f threads (%ld threads in all)\n",
         (linked_usage.rss_kib - before.rss_kib) / per, (linked_usage.fds - before.fds) / per,
         (linked_usage.threads - before.threads) / per, linked_usage.threads);
  printf("storm: idle CPU of the target with %d links: %.2f %% of a core over %d ms\n", linked, idle_pct, idle_ms);

  // RegisterMem / DeregisterMem with N linked.
  std::vector<double> reg_ms, dereg_ms;
  std::vector<uint8_t> extra(4 << 20, 7);
  for (int r = 0; r < 5; ++r) {
    adxl::MemHandle eh = nullptr;
    auto t = Clock::now();
    const bool ok = engine.RegisterMem({reinterpret_cast<uintptr_t>(extra.data()), extra.size()}, adxl::MEM_HOST,
                                       eh) == adxl::SUCCESS;
    reg_ms.push_back(MsSince(t));
    t = Clock::now();
    if (ok) engine.DeregisterMem(eh);
    dereg_ms.push_back(MsSince(t));
  }
  std::sort(reg_ms.begin(), reg_ms.end());
  std::sort(dereg_ms.begin(), dereg_ms.end());
  printf("storm: RegisterMem with %d linked: median %.2f ms, max %.2f ms; DeregisterMem median %.2f ms\n", linked,
         reg_ms[2], reg_ms[4], dereg_ms[2]);

  // Kill half, then the rest must still READ correctly.
  int survivors_ok = 0, survivors = 0;
  if (kill_half) {
    for (int i = 0; i < n; i += 2) {
      kill(peers[i].pid, SIGKILL);
      peers[i].killed = true;
    }
    std::vector<int> alive;
    for (int i = 1; i < n; i += 2) {
      if (ok[i]) alive.push_back(i);  // a peer that failed left already
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (int i : alive) storm::WriteLine(peers[i].fd, "verify");
    storm::Collect(peers, alive, timeout_ms + 10000);
    survivors = static_cast<int>(alive.size());
    for (int i : alive) survivors_ok += peers[i].report == "ok";
    printf("storm: killed %d peers; %d/%d linked survivors READ and verified again\n", (n + 1) / 2, survivors_ok,
           survivors);
  }

  // The end: every peer finalizes; a peer that died by a signal we did not
  // send is an abort.
  for (Peer &p : peers) close(p.fd);
  int aborts = 0;
  for (int i = 0; i < n; ++i) {
    int status = 0;
    if (waitpid(peers[i].pid, &status, 0) < 0) continue;
    if (!peers[i].killed && (WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0))) {
      ++aborts;
      printf("storm: peer %d ended badly (%s %d)\n", i, WIFSIGNALED(status) ? "signal" : "exit",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
  }
  engine.DeregisterMem(h);
  engine.Finalize();
  const bool pass = failures == 0 && aborts == 0 && not_ready == 0 && survivors_ok == survivors;
  printf("storm: RESULT lane=%s peers=%d linked=%d failures=%d aborts=%d link_s=%.2f rss_kib_per_link=%.1f "
         "fds_per_link=%.2f threads=%ld idle_cpu_pct=%.2f register_ms=%.2f survivors=%d/%d %s\n",
         lane, n, linked, failures, aborts, link_ms / 1e3, (linked_usage.rss_kib - before.rss_kib) / per,
         (linked_usage.fds - before.fds) / per, linked_usage.threads, idle_pct, reg_ms[4], survivors_ok, survivors,
         pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
