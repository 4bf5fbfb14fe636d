// The kill storm (storm.h): peers that die while they start and connect.
//
// In a serving cluster workers are OOM-killed, preempted and restarted, often
// while they are still connecting.  Each round starts `peers` peer processes
// at once and tells them to connect at once ("go stages"); each is SIGKILLed
// at a uniformly random moment of its first `window_ms` (by default 1.5x
// the time an unkilled peer takes here to link: CalibrateWindow), so the
// kills fall into every stage of a peer's life: engine start-up, the control
// handshake, the transport wire-up, the first transfers, and an idle link.  The stage a
// peer had reached is the last line it reported ("ready": initialized;
// "connected": Connect returned; "ok": READ verified and WRITE done).
// After the rounds, `peers` fresh peers must link, READ and WRITE with every
// byte verified, and the target must finalize: a target that aborted (a
// signal kills this process), hung (the caller's time limit) or refuses new
// peers fails the run.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "adxl/adxl_engine.h"
#include "pattern.h"
#include "storm.h"

namespace storm {

namespace {

using Clock = std::chrono::steady_clock;

// The stage a peer had reached when it was killed: the last line it wrote.
const char *StageOf(const std::string &last) {
  if (last.empty()) return "start-up";
  if (last == "ready") return "handshake/wire-up";
  if (last == "connected") return "transfer";
  if (last.rfind("ok", 0) == 0) return "linked";
  return "failed";  // it reported a failure and left before its kill
}

// Reads whatever lines peer `p` wrote so far; keeps the last in p->report.
void Drain(Peer *p) {
  std::string line;
  while (ReadLine(p->fd, &p->buffer, &line, 0)) p->report = line;
}

// The kill window when none is given: how long a peer takes here, now, from
// its start to a verified link, measured on a round of `n` peers that are
// not killed (spawned and told to go at once, as the storm's are), times
// 1.5, so that the kills spread over every stage of a peer's life however
// loaded the machine is.  0 when a peer of that round did not link.
int CalibrateWindow(const std::string &self, PeerArgs args, int n, int timeout_ms) {
  std::vector<Peer> peers(n);
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) {
    args.index = i;
    if (!Spawn(self, args, &peers[i])) return 0;
    WriteLine(peers[i].fd, "go stages");
  }
  std::vector<double> linked_ms;
  std::vector<pollfd> fds(n);
  const auto end = start + std::chrono::milliseconds(timeout_ms * 3 + 10000);
  int left = n;
  while (left > 0 && Clock::now() < end) {
    for (int i = 0; i < n; ++i) fds[i] = {peers[i].report.rfind("ok", 0) == 0 ? -1 : peers[i].fd, POLLIN, 0};
    if (poll(fds.data(), fds.size(), 200) <= 0) continue;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      Drain(&peers[i]);
      if (peers[i].report.rfind("ok", 0) == 0) {
        linked_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        --left;
      } else if (peers[i].report.rfind("fail", 0) == 0 || (fds[i].revents & (POLLHUP | POLLERR))) {
        left = -1;  // a peer that failed: the target is not well
        break;
      }
    }
  }
  for (Peer &p : peers) close(p.fd);  // the peers finalize and exit
  for (Peer &p : peers) waitpid(p.pid, nullptr, 0);
  if (left != 0) return 0;
  std::sort(linked_ms.begin(), linked_ms.end());
  return static_cast<int>(1.5 * linked_ms.back()) + 1;
}

}  // namespace

int RunKillStorm(const std::string &self, int rounds, int n, bool rdma, int window_ms, int timeout_ms) {
  const char *lane = rdma ? "rdma" : "hccs";
  uint16_t port = 0;
  if (!FreePort(&port)) return 1;
  const std::string target = "127.0.0.1:" + std::to_string(port);
  const size_t region_len = kReadBytes + static_cast<size_t>(n) * kWriteBytes;
  void *mem = nullptr;
  if (posix_memalign(&mem, 4096, region_len) != 0) return 1;
  // Declared before the engine, so freed after it (the engine holds it registered).
  const std::unique_ptr<void, decltype(&free)> owned_region(mem, &free);
  auto *region = static_cast<uint8_t *>(mem);
  adxl_test::FillPattern(region, kReadBytes, kReadSeed);
  memset(region + kReadBytes, 0, region_len - kReadBytes);

  adxl::AdxlEngine engine;
  adxl::MemHandle h = nullptr;
  if (!StartTarget(engine, target, rdma, region, region_len, &h)) return 1;
  PeerArgs args;
  args.target = target;
  args.region = reinterpret_cast<uintptr_t>(region);
  args.rdma = rdma;
  args.timeout_ms = timeout_ms;
  if (window_ms <= 0) {
    window_ms = CalibrateWindow(self, args, n, timeout_ms);
    if (window_ms <= 0) {
      fprintf(stderr, "kill storm: the calibration round of %d unkilled peers did not all link\n", n);
      return 1;
    }
    printf("kill storm: %d unkilled peers linked and verified within %d ms of their start; the kill window is 1.5x "
           "that\n", n, window_ms * 2 / 3);
  }
  const uint64_t seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> kill_after(0, window_ms - 1);
  printf("kill storm: %d rounds of %d peers on the %s lane, each killed within %d ms of its start (seed %llu)\n",
         rounds, n, lane, window_ms, static_cast<unsigned long long>(seed));
  std::map<std::string, int> stages;  // over all rounds
  int killed = 0;
  const auto storm_start = Clock::now();
  for (int r = 0; r < rounds; ++r) {
    std::vector<Peer> peers(n);
    std::vector<Clock::time_point> due(n);
    for (int i = 0; i < n; ++i) {
      args.index = i;
      if (!Spawn(self, args, &peers[i])) {
        fprintf(stderr, "kill storm: cannot start peer %d: %s\n", i, strerror(errno));
        return 1;
      }
      due[i] = Clock::now() + std::chrono::milliseconds(kill_after(rng));
      WriteLine(peers[i].fd, "go stages");  // buffered until the peer is ready
    }
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&due](int a, int b) { return due[a] < due[b]; });
    std::map<std::string, int> round_stages;
    for (int i : order) {
      std::this_thread::sleep_until(due[i]);
      Drain(&peers[i]);
      kill(peers[i].pid, SIGKILL);
      peers[i].killed = true;
      ++round_stages[StageOf(peers[i].report)];
    }
    for (Peer &p : peers) {
      waitpid(p.pid, nullptr, 0);
      close(p.fd);
    }
    killed += n;
    std::string line;
    for (const auto &s : round_stages) {
      stages[s.first] += s.second;
      line += " " + s.first + " " + std::to_string(s.second);
    }
    printf("kill storm: round %d: killed %d (stage reached:%s)\n", r + 1, n, line.c_str());
  }
  const double storm_s = std::chrono::duration<double>(Clock::now() - storm_start).count();

  // Fresh peers after the storm: every one must link and verify.
  memset(region + kReadBytes, 0, region_len - kReadBytes);
  std::vector<Peer> fresh(n);
  std::vector<int> all;
  for (int i = 0; i < n; ++i) {
    args.index = i;
    if (!Spawn(self, args, &fresh[i])) return 1;
    all.push_back(i);
  }
  Collect(fresh, all, timeout_ms * 3 + 10000);
  int not_ready = 0;
  for (const Peer &p : fresh) not_ready += p.report != "ready";
  for (Peer &p : fresh) WriteLine(p.fd, "go");
  Collect(fresh, all, timeout_ms * 3 + 10000);
  int linked = 0;
  std::map<std::string, int> why;
  for (int i = 0; i < n; ++i) {
    bool ok = fresh[i].report.rfind("ok ", 0) == 0;
    const uint8_t *slot = region + kReadBytes + static_cast<size_t>(i) * kWriteBytes;
    for (size_t b = 0; ok && b < kWriteBytes; ++b) ok = slot[b] == adxl_test::PatternByte(WriteSeed(i), b);
    if (ok) {
      ++linked;
    } else {
      ++why[fresh[i].report.rfind("ok ", 0) == 0 ? std::string("fail target-verify") : fresh[i].report];
    }
  }
  for (Peer &p : fresh) close(p.fd);
  int bad_exits = 0;
  for (Peer &p : fresh) {
    int status = 0;
    if (waitpid(p.pid, &status, 0) == p.pid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) ++bad_exits;
  }
  for (const auto &w : why) printf("kill storm:   %d x %s\n", w.second, w.first.c_str());
  const bool finalized = engine.DeregisterMem(h) == adxl::SUCCESS;
  engine.Finalize();  // a hang here is the caller's time limit
  std::string line;
  for (const auto &s : stages) line += " " + s.first + "=" + std::to_string(s.second);
  const bool pass = not_ready == 0 && linked == n && bad_exits == 0 && finalized;
  printf("kill storm: RESULT lane=%s killed=%d in %.1f s (stage reached:%s) fresh=%d/%d linked and verified, "
         "bad exits %d, target deregistered and finalized %s: %s\n",
         lane, killed, storm_s, line.c_str(), linked, n, bad_exits, finalized ? "yes" : "no", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}

}  // namespace storm
