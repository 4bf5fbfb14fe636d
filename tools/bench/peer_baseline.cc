#include "peer_baseline.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

extern char **environ;

namespace bench {
namespace {

#ifndef ADXL_BENCH_SOURCE_DIR
#define ADXL_BENCH_SOURCE_DIR "."
#endif

bool Executable(const std::string &path) { return access(path.c_str(), X_OK) == 0; }

// The driver's environment: ours without LD_LIBRARY_PATH, plus the peers'
// settings where the user set none (UCX_TLS: the lane's, see the header).
std::vector<std::string> DriverEnv(Lane lane, size_t max_batch) {
  std::vector<std::string> env;
  for (char **e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    if (kv.rfind("LD_LIBRARY_PATH=", 0) == 0 || kv.rfind("LD_PRELOAD=", 0) == 0) continue;
    if (kv.rfind("UCX_TLS=", 0) == 0 && lane != Lane::kAuto) continue;  // the bench's own lane choice
    env.push_back(kv);
  }
  auto set_default = [&env](const char *name, const char *value) {
    if (getenv(name) == nullptr) env.push_back(std::string(name) + "=" + value);
  };
  if (lane == Lane::kRdma) env.push_back("UCX_TLS=tcp");
  if (lane == Lane::kHccs) env.push_back("UCX_TLS=shm,cma,tcp");
  set_default("UCX_NET_DEVICES", "lo");
  set_default("UCX_MODULES", "^ib");
  set_default("MC_TCP_ENABLE_CONNECTION_POOL", "1");
  // Mooncake's per-peer queue as deep as the largest batch of the run.
  const std::string queue = std::to_string(max_batch);
  set_default("MC_TCP_MAX_QUEUED_TRANSFERS_PER_PEER", queue.c_str());
  set_default("OPENBLAS_NUM_THREADS", "1");
  set_default("PYTHONDONTWRITEBYTECODE", "1");
  return env;
}

}  // namespace

std::string PeerLogPath(const std::string &engine) {
  const char *tmp = getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/adxl-bench-" + engine + "." +
         std::to_string(getpid()) + ".log";
}

std::string PeersPython(const std::string &venv_option, std::string *why) {
  std::string venv = venv_option;
  if (venv.empty() && getenv("ADXL_BENCH_PEERS_VENV") != nullptr) venv = getenv("ADXL_BENCH_PEERS_VENV");
  if (venv.empty()) venv = std::string(ADXL_BENCH_SOURCE_DIR) + "/.venv-peers";
  const std::string python = venv + "/bin/python";
  if (!Executable(python)) {
    *why = "not installed (no " + python + "; scripts/peers_venv.sh makes it)";
    return "";
  }
  return python;
}

std::unique_ptr<PeerDriver> PeerDriver::Create(const std::string &python, const std::string &engine, Lane lane,
                                               size_t size, size_t max_batch, int timeout_ms,
                                               const char *pages, std::string *why) {
  const std::string script = std::string(ADXL_BENCH_SOURCE_DIR) + "/tools/bench/peers/peer_driver.py";
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
    *why = std::string("pipe: ") + strerror(errno);
    return nullptr;
  }
  const std::vector<std::string> env = DriverEnv(lane, max_batch);
  const std::string log = PeerLogPath(engine);
  const std::vector<std::string> args = {python, script, "--engine", engine, "--size", std::to_string(size),
                                          "--pages", pages};
  std::vector<char *> argv, envp;
  for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string &e : env) envp.push_back(const_cast<char *>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    *why = std::string("fork: ") + strerror(errno);
    return nullptr;
  }
  if (pid == 0) {
    setpgid(0, 0);  // a group of its own, with the target it forks: stopped between its steps
    dup2(to[0], 0);
    dup2(from[1], 1);
    // The peers log to stderr (NIXL at INFO, Mooncake's glog): into a file.
    const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (err >= 0) dup2(err, 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  std::unique_ptr<PeerDriver> d(new PeerDriver());
  d->pid_ = pid;
  d->to_ = to[1];
  d->from_ = from[0];
  d->timeout_ms_ = timeout_ms;
  std::string line;
  if (!d->ReadLine(&line, why)) {
    *why = engine + ": the driver did not start: " + *why + " (its log: " + log + ")";
    return nullptr;
  }
  if (line.rfind("ready ", 0) != 0) {
    *why = engine + ": " + (line.rfind("unavailable ", 0) == 0 ? line.substr(12) : line);
    return nullptr;
  }
  d->description_ = line.substr(6) + ", log " + log;
  d->Pause(true);
  return d;
}

void PeerDriver::Pause(bool stop) {
  // Idle, NIXL's progress threads still take ~20 % of a core each here: the
  // peer's processes are stopped outside their own steps, so that they take
  // nothing from the rows measured in turn with them.
  if (pid_ > 0) kill(-pid_, stop ? SIGSTOP : SIGCONT);
}

PeerDriver::~PeerDriver() {
  Pause(false);
  std::string why;
  if (!plan_path_.empty()) unlink(plan_path_.c_str());
  if (!broken_) WriteLine("quit", &why);
  if (to_ >= 0) close(to_);
  if (from_ >= 0) close(from_);
  if (pid_ > 0) {
    // The driver ends its target and itself; a stuck one is killed.
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      usleep(20000);
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool PeerDriver::WriteLine(const std::string &line, std::string *why) {
  const std::string s = line + "\n";
  size_t off = 0;
  while (off < s.size()) {
    ssize_t k = write(to_, s.data() + off, s.size() - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      *why = std::string("write to the driver: ") + strerror(errno);
      return false;
    }
    off += static_cast<size_t>(k);
  }
  return true;
}

bool PeerDriver::ReadLine(std::string *line, std::string *why) {
  // Start-up imports and connects: allow the timeout plus a minute.
  const int limit_ms = timeout_ms_ + 60000;
  for (;;) {
    const size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      *line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return true;
    }
    pollfd p{from_, POLLIN, 0};
    int rc = poll(&p, 1, limit_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      *why = "no answer within " + std::to_string(limit_ms) + " ms";
      return false;
    }
    char buf[4096];
    ssize_t k = read(from_, buf, sizeof(buf));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      *why = "the driver exited";
      return false;
    }
    pending_.append(buf, static_cast<size_t>(k));
  }
}

StepResult PeerDriver::RunStep(const BlockBatch &b, bool verify) {
  std::ostringstream cmd;
  cmd << "step " << (b.op == adxl::WRITE ? 'W' : 'R') << ' ' << b.block << ' ' << b.count << ' ' << (verify ? 1 : 0);
  return Command(cmd.str());
}

StepResult PeerDriver::RunKeys(adxl::TransferOp op, bool verify) {
  return Command(std::string("kvstep ") + (op == adxl::WRITE ? 'W' : 'R') + ' ' + (verify ? '1' : '0'));
}

bool PeerDriver::LoadPlan(const KvPlan &plan, std::string *why) {
  if (plan_path_.empty()) plan_path_ = PeerLogPath("plan-" + std::to_string(to_)) + ".bin";
  std::vector<uint64_t> words = {plan.pool_bytes, plan.calls()};
  for (const KeyTransfer &key : plan.keys) {
    for (const SegmentCall &call : key.calls) {
      words.push_back(call.size());
      for (const Segment &s : call) words.insert(words.end(), {s.local, s.remote, s.len});
    }
  }
  FILE *f = fopen(plan_path_.c_str(), "wb");  // little-endian host, as the driver reads it
  const bool written = f != nullptr && fwrite(words.data(), sizeof(uint64_t), words.size(), f) == words.size();
  if (f != nullptr) fclose(f);
  std::string line;
  if (!written) {
    *why = "cannot write " + plan_path_;
    return false;
  }
  Pause(false);
  const bool answered = WriteLine("plan " + plan_path_, why) && ReadLine(&line, why);
  Pause(true);
  if (!answered) return false;
  if (line != "ok") *why = line;
  return line == "ok";
}

StepResult PeerDriver::Command(const std::string &command) {
  StepResult r;
  last_check_ = true;
  if (broken_) {
    r.Fail("peer driver broken by an earlier step");
    return r;
  }
  std::string line, why;
  Pause(false);
  const bool answered = WriteLine(command, &why) && ReadLine(&line, &why);
  Pause(true);
  if (!answered) {
    broken_ = true;
    r.Fail(why);
    return r;
  }
  std::istringstream in(line);
  std::string status, check;
  in >> status;
  if (status != "ok") {
    r.Fail(line.size() > 4 ? line.substr(4) : line);
    return r;
  }
  double seconds = 0, cpu = 0;
  in >> seconds >> cpu >> check;
  r.seconds = seconds;
  r.cpu_seconds = cpu;
  r.call_us.push_back(seconds * 1e6);
  last_check_ = check != "fail";
  return r;
}

}  // namespace bench
