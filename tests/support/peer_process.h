// PeerProcess: a real engine in a separate process (adxl_test_peer), driven
// from a test through pipes.  Also FreePort(), for engine names.
#ifndef ADXL_TESTS_SUPPORT_PEER_PROCESS_H_
#define ADXL_TESTS_SUPPORT_PEER_PROCESS_H_

#include <netinet/in.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "free_port.h"

#ifndef ADXL_TEST_PEER_PATH
#error "ADXL_TEST_PEER_PATH must name the adxl_test_peer binary"
#endif

namespace adxl_test {

class PeerProcess;
// Sends "init 127.0.0.1:<port> <args>" to `peer`, picking another free port
// when the one chosen was taken meanwhile (FreePort() only says it was free
// a moment ago); returns the name it listens on, or "" when init failed.
inline std::string InitOnFreePort(PeerProcess &peer, const std::string &args);

// CPU time (user + system) process `pid` has used, in milliseconds; -1 if unknown.
inline long ProcessCpuMs(pid_t pid) {
  FILE *f = fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return -1;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');  // the command name may contain spaces
  unsigned long ut = 0, st = 0;
  if (p == nullptr || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return -1;
  return static_cast<long>((ut + st) * 1000 / sysconf(_SC_CLK_TCK));
}

class PeerProcess {
 public:
  // Starts the peer with extra environment entries ("K=V").
  // Starts the peer with extra environment entries ("K=V"), run through
  // `prefix` when given (e.g. {"ip", "netns", "exec", "ns1"}).
  explicit PeerProcess(const std::vector<std::string> &env = {}, const std::vector<std::string> &prefix = {}) {
    // A command written to a peer that died must fail that test (Command
    // returns ""), not end the whole test program with SIGPIPE.
    static const bool sigpipe_ignored = signal(SIGPIPE, SIG_IGN) != SIG_ERR;
    (void)sigpipe_ignored;
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      signal(SIGPIPE, SIG_DFL);  // the peer itself keeps the default
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      for (const auto &e : env) putenv(strdup(e.c_str()));
      std::vector<char *> argv;
      for (const auto &a : prefix) argv.push_back(const_cast<char *>(a.c_str()));
      argv.push_back(const_cast<char *>(ADXL_TEST_PEER_PATH));
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~PeerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
  }
  PeerProcess(const PeerProcess &) = delete;
  PeerProcess &operator=(const PeerProcess &) = delete;

  pid_t pid() const { return pid_; }

  // Sends one command and returns its answer line ("" on timeout / death).
  std::string Command(const std::string &line, int timeout_ms = 20000) {
    std::string l = line + "\n";
    if (write(to_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) return "";
    return ReadLine(timeout_ms);
  }
  // Convenience: the answer's words after "ok".
  std::vector<std::string> Ok(const std::string &line) {
    std::istringstream in(Command(line));
    std::vector<std::string> words;
    std::string w;
    in >> w;
    if (w != "ok") return {};
    while (in >> w) words.push_back(w);
    return words;
  }

  void Signal(int sig) { kill(pid_, sig); }
  // SIGSTOP, then waits until every thread of the peer is stopped (the
  // signal is delivered asynchronously; a thread may run on for a moment).
  void Stop() {
    kill(pid_, SIGSTOP);
    for (int i = 0; i < 2000; ++i) {
      if (AllThreadsStopped()) return;
      usleep(1000);
    }
  }
  bool AllThreadsStopped() const {
    const std::string dir = "/proc/" + std::to_string(pid_) + "/task";
    DIR *d = opendir(dir.c_str());
    if (d == nullptr) return false;
    bool all = true;
    while (dirent *e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      all = all && State(dir + "/" + e->d_name + "/stat") == 'T';
    }
    closedir(d);
    return all;
  }
  // The state letter ('R', 'S', 'T', ...) from a /proc stat file.
  static char State(const std::string &path) {
    FILE *f = fopen(path.c_str(), "r");
    if (f == nullptr) return '?';
    char buf[512] = {0};
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    const char *p = strrchr(buf, ')');
    return (p != nullptr && p + 2 < buf + n) ? p[2] : '?';
  }
  // Finalize, then exit(0): returns the peer's wait status (as waitpid
  // gives it), or -1 when it did not exit within timeout_ms.  A crash or an
  // assertion inside Finalize shows as a signal status.
  int FinalizeAndExit(int timeout_ms = 10000) {
    Command("finalize", timeout_ms);
    Command("exit", timeout_ms);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      usleep(1000);
    }
    return -1;
  }
  void KillAndWait() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  std::string ReadLine(int timeout_ms) {
    while (true) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string l = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return l;
      }
      pollfd p{from_, POLLIN, 0};
      if (poll(&p, 1, timeout_ms) <= 0) return "";
      char tmp[4096];
      ssize_t n = read(from_, tmp, sizeof(tmp));
      if (n <= 0) return "";
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }

  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::string buf_;
};

inline std::string InitOnFreePort(PeerProcess &peer, const std::string &args) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    const std::string name = LoopbackName(FreePort());
    if (peer.Command("init " + name + (args.empty() ? "" : " " + args)) == "ok") return name;
  }
  return "";
}

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_PEER_PROCESS_H_
