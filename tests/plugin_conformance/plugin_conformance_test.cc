// Plugin conformance suite: checks a transport plugin's contract
// (include/adxl/plugin/adxl_plugin.h) through the C ABI only.
//
// The plugin under test is given by path: --plugin=PATH or the environment
// variable ADXL_PLUGIN_UNDER_TEST.  Data-moving checks run for each lane the
// plugin offers (HCCS, RDMA), between two contexts of this process and
// against a second process (this executable re-run with
// --conformance-child=FD) that opens its own context, registers memory, hands
// over its address and packed key through a socketpair and then calls nothing
// of the plugin while data moves: target-side progress is the plugin's job.
// See tests/plugin_conformance/README.md.
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <functional>
#include <thread>
#include <vector>

#include "adxl/plugin/adxl_plugin.h"
#include "common/log.h"
#include "transport/plugin_loader.h"
#include "../support/time_scale.h"

namespace {

std::string g_plugin_path;
// The child's open() parameters ("key=value,key=value"; --child-params=).
std::string g_child_params;

// ---------------------------------------------------------------- helpers

uint8_t PatternByte(uint64_t seed, uint64_t i) {
  uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  return static_cast<uint8_t>(x >> 56);
}
void FillPattern(void *buf, size_t len, uint64_t seed) {
  auto *p = static_cast<uint8_t *>(buf);
  for (size_t i = 0; i < len; ++i) p[i] = PatternByte(seed, i);
}
uint64_t Hash(const void *buf, size_t len) {
  const auto *p = static_cast<const uint8_t *>(buf);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
std::string Hex(const std::string &s) {
  static const char *d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}
std::string Unhex(const std::string &s) {
  std::string out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) out += static_cast<char>(std::stoi(s.substr(i, 2), nullptr, 16));
  return out;
}

// What the process writes to `fd` (stdout or stderr) between construction
// and Take(), which restores it: a transport's own complaints (UCX logs to
// stdout, a plugin's log lines go to stderr), for calls that must make none.
class OutputCapture {
 public:
  explicit OutputCapture(int fd) : fd_(fd) {
    fflush(nullptr);
    file_ = tmpfile();
    saved_ = dup(fd_);
    if (file_ != nullptr && saved_ >= 0) dup2(fileno(file_), fd_);
  }
  ~OutputCapture() { Take(); }
  std::string Take() {
    std::string out;
    if (saved_ < 0) return out;
    fflush(nullptr);
    dup2(saved_, fd_);
    close(saved_);
    saved_ = -1;
    if (file_ == nullptr) return out;
    rewind(file_);
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), file_)) > 0;) out.append(buf, n);
    fclose(file_);
    file_ = nullptr;
    return out;
  }

 private:
  const int fd_;
  FILE *file_ = nullptr;
  int saved_ = -1;
};

// What `body` writes to stdout and stderr (the plugin's log lines among it).
std::string Said(const std::function<void()> &body) {
  OutputCapture out(1), err(2);
  body();
  return err.Take() + out.Take();
}

// Test memory: private (posix_memalign) unless `kind` (default: the
// environment's ADXL_CONFORMANCE_MEMORY, which a child inherits) says
// "memfd" (memfd_create, descriptor kept open) or "shm" (a /dev/shm file,
// unlinked at the end): a shared file mapping, which same-node peers map
// directly.
class Buffer {
 public:
  explicit Buffer(size_t len, const char *kind = getenv("ADXL_CONFORMANCE_MEMORY")) : len_(len) {
    const std::string k = kind != nullptr ? kind : "";
    if (k == "memfd" || k == "shm") {
      static int serial = 0;
      if (k == "memfd") {
        fd_ = memfd_create("adxl-conformance", MFD_CLOEXEC);
      } else {
        shm_name_ = "/adxl-conformance-" + std::to_string(getpid()) + "-" + std::to_string(serial++);
        fd_ = shm_open(shm_name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      }
      if (fd_ >= 0 && ftruncate(fd_, static_cast<off_t>(len)) == 0) {
        void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (p != MAP_FAILED) p_ = static_cast<uint8_t *>(p);
      }
      mapped_ = true;
      return;
    }
    void *p = nullptr;
    if (posix_memalign(&p, 4096, len) == 0) p_ = static_cast<uint8_t *>(p);
  }
  ~Buffer() {
    if (!mapped_) {
      free(p_);
      return;
    }
    if (p_ != nullptr) munmap(p_, len_);
    if (fd_ >= 0) close(fd_);
    if (!shm_name_.empty()) shm_unlink(shm_name_.c_str());
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  uint8_t *data() const { return p_; }
  uint64_t addr() const { return reinterpret_cast<uintptr_t>(p_); }
  size_t size() const { return len_; }

 private:
  uint8_t *p_ = nullptr;
  size_t len_;
  bool mapped_ = false;
  int fd_ = -1;
  std::string shm_name_;
};

constexpr size_t kBufSize = 8u << 20;
constexpr size_t kMaxOp = 1u << 20;

// Reads/writes whole lines on a socket.
bool WriteLine(int fd, const std::string &s) {
  std::string l = s + "\n";
  const char *p = l.data();
  size_t left = l.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}
bool ReadLine(int fd, std::string *buf, std::string *line, int timeout_ms) {
  while (true) {
    size_t nl = buf->find('\n');
    if (nl != std::string::npos) {
      *line = buf->substr(0, nl);
      buf->erase(0, nl + 1);
      return true;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    char tmp[65536];
    ssize_t n = read(fd, tmp, sizeof(tmp));
    if (n <= 0) return false;
    buf->append(tmp, static_cast<size_t>(n));
  }
}

// The plugin logs through the engine's logger, as in the engine: lines
// "[adxl LEVEL pid] plugin <name>: ...", filtered by ADXL_LOG_LEVEL (main
// makes "off" the default here: the suite provokes errors on purpose).
void PluginLog(void *, int level, const char *msg) { adxl::PluginLogCallback(const_cast<char *>("under test"), level, msg); }

// --------------------------------------------------------- child process
//
// Protocol on the socketpair (lines): the child sends
//   "hello <address hex> <key hex> <buffer addr> <buffer len>"
// then answers "fill <seed>" -> "ok", "hash <off> <len>" -> "ok <fnv64>",
// "exit" -> exits.  Between commands it blocks in read(): it calls nothing
// of the plugin while the parent moves data.  The child as an initiator:
// "put <address hex> <key hex> <addr> <lane> <seed>" fills its buffer with
// the pattern of <seed>, connects to that address over <lane>, posts
// kPutRounds PUT batches of its whole buffer to <addr> and answers "ok"
// without waiting ("nolane" when the lane does not reach the address);
// "wait" waits for those batches and answers "ok <status>", the first
// status that was not OK (0 when all were).
// The child's side of "put" / "wait": one endpoint, key and set of batches.
constexpr int kPutRounds = 16;
struct ChildInitiator {
  adxl_plugin_ep_t *ep = nullptr;
  adxl_plugin_rkey_t *rk = nullptr;
  std::vector<adxl_plugin_batch_t *> batches;

  std::string Put(const adxl_plugin_ops_t &ops, adxl_plugin_context_t *ctx, adxl_plugin_mem_t *mem, Buffer &buf,
                  const std::string &address, const std::string &key, uint64_t remote, uint32_t lane, uint64_t seed) {
    Wait(ops);
    FillPattern(buf.data(), buf.size(), seed);
    const int rc = ops.ep_create(ctx, address.data(), address.size(), lane, &ep);
    if (rc == ADXL_PLUGIN_ERR_UNSUPPORTED) return "nolane";
    if (rc != ADXL_PLUGIN_OK) return "err ep_create " + std::to_string(rc);
    if (ops.rkey_unpack(ep, key.data(), key.size(), &rk) != ADXL_PLUGIN_OK) return "err rkey_unpack";
    // Wire-up first (a count-0 post), so that the PUTs leave at once.
    adxl_plugin_batch_t *flush = nullptr;
    if (ops.post(ep, ADXL_PLUGIN_PUT, nullptr, 0, &flush) != ADXL_PLUGIN_OK) return "err flush";
    batches.push_back(flush);
    const std::string wired = Wait(ops, false);
    if (wired != "ok 0") return "err wire-up " + wired;
    std::vector<adxl_plugin_iov_t> all;
    for (size_t off = 0; off < buf.size(); off += kMaxOp) all.push_back({mem, buf.addr() + off, rk, remote + off, kMaxOp});
    for (int i = 0; i < kPutRounds; ++i) {
      adxl_plugin_batch_t *b = nullptr;
      const int st = ops.post(ep, ADXL_PLUGIN_PUT, all.data(), all.size(), &b);
      if (st != ADXL_PLUGIN_OK) return "err post " + std::to_string(st);
      batches.push_back(b);
    }
    return "ok";
  }
  // Waits for the batches; with `close`, then closes the endpoint.
  std::string Wait(const adxl_plugin_ops_t &ops, bool close = true) {
    int first_error = ADXL_PLUGIN_OK;
    for (adxl_plugin_batch_t *b : batches) {
      const auto t0 = std::chrono::steady_clock::now();
      int st;
      while ((st = ops.test(b)) == ADXL_PLUGIN_IN_PROGRESS && MsSince(t0) < 20000) usleep(20);
      if (first_error == ADXL_PLUGIN_OK) first_error = st;
      ops.release(b);
    }
    batches.clear();
    if (!close) return "ok " + std::to_string(first_error);
    if (rk != nullptr) ops.rkey_destroy(rk);
    if (ep != nullptr) ops.ep_destroy(ep, 0);
    rk = nullptr;
    ep = nullptr;
    return "ok " + std::to_string(first_error);
  }
};

int ChildMain(int fd) {
  std::string why;
  auto lib = adxl::PluginLibrary::LoadFile(g_plugin_path, ADXL_PLUGIN_ABI_VERSION, &why);
  if (!lib) {
    WriteLine(fd, "err " + why);
    return 1;
  }
  const adxl_plugin_ops_t &ops = lib->ops();
  std::vector<std::string> kv;  // "key", "value", ... (kept alive for params)
  std::istringstream pin(g_child_params);
  for (std::string item; std::getline(pin, item, ',');) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    kv.push_back(item.substr(0, eq));
    kv.push_back(item.substr(eq + 1));
  }
  std::vector<adxl_plugin_param_t> params;
  for (size_t i = 0; i + 1 < kv.size(); i += 2) params.push_back({kv[i].c_str(), kv[i + 1].c_str()});
  adxl_plugin_config_t cfg{params.data(), params.size(), PluginLog, nullptr};
  adxl_plugin_context_t *ctx = nullptr;
  if (ops.open(&cfg, &ctx) != ADXL_PLUGIN_OK) {
    WriteLine(fd, "err open");
    return 1;
  }
  Buffer buf(kBufSize);
  FillPattern(buf.data(), buf.size(), 1);
  adxl_plugin_mem_t *mem = nullptr;
  if (ops.mem_reg(ctx, buf.data(), buf.size(), ADXL_PLUGIN_MEM_HOST, nullptr, 0, &mem) != ADXL_PLUGIN_OK) {
    WriteLine(fd, "err mem_reg");
    return 1;
  }
  std::string addr(4096, '\0'), key(4096, '\0');
  size_t alen = addr.size(), klen = key.size();
  if (ops.get_address(ctx, &addr[0], &alen) != ADXL_PLUGIN_OK || ops.mem_pack(ctx, mem, &key[0], &klen) != ADXL_PLUGIN_OK) {
    WriteLine(fd, "err address/key");
    return 1;
  }
  addr.resize(alen);
  key.resize(klen);
  WriteLine(fd, "hello " + Hex(addr) + " " + Hex(key) + " " + std::to_string(buf.addr()) + " " +
                    std::to_string(buf.size()));
  ChildInitiator initiator;
  std::string rbuf, line;
  while (ReadLine(fd, &rbuf, &line, -1)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "fill") {
      uint64_t seed = 0;
      in >> seed;
      FillPattern(buf.data(), buf.size(), seed);
      WriteLine(fd, "ok");
    } else if (cmd == "hash") {
      size_t off = 0, len = 0;
      in >> off >> len;
      if (off + len > buf.size()) {
        WriteLine(fd, "err range");
      } else {
        WriteLine(fd, "ok " + std::to_string(Hash(buf.data() + off, len)));
      }
    } else if (cmd == "put") {
      std::string a, k;
      uint64_t remote = 0, seed = 0;
      uint32_t lane = 0;
      in >> a >> k >> remote >> lane >> seed;
      WriteLine(fd, initiator.Put(ops, ctx, mem, buf, Unhex(a), Unhex(k), remote, lane, seed));
    } else if (cmd == "wait") {
      WriteLine(fd, initiator.Wait(ops));
    } else if (cmd == "exit") {
      break;
    }
  }
  initiator.Wait(ops);
  ops.mem_dereg(ctx, mem);
  ops.close(ctx);
  return 0;
}

// The parent's handle on a child.
class Child {
 public:
  // `params`: the child's open() parameters.
  explicit Child(const std::vector<adxl_plugin_param_t> &params = {}) {
    std::string cparg = "--child-params=";
    for (const adxl_plugin_param_t &p : params) cparg += std::string(p.key) + "=" + p.value + ",";
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(sv[0]);
      int fd = dup(sv[1]);  // without CLOEXEC
      std::string arg = "--conformance-child=" + std::to_string(fd);
      std::string parg = "--plugin=" + g_plugin_path;
      execl("/proc/self/exe", "adxl_plugin_conformance", arg.c_str(), parg.c_str(), cparg.c_str(),
            static_cast<char *>(nullptr));
      _exit(127);
    }
    close(sv[1]);
    fd_ = sv[0];
    std::string line;
    if (!ReadLine(fd_, &rbuf_, &line, 20000)) return;
    std::istringstream in(line);
    std::string w, a, k;
    in >> w >> a >> k >> remote_addr_ >> remote_len_;
    if (w != "hello") {
      fprintf(stderr, "child: %s\n", line.c_str());
      return;
    }
    address_ = Unhex(a);
    key_ = Unhex(k);
    ok_ = true;
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return ok_; }
  const std::string &address() const { return address_; }
  const std::string &key() const { return key_; }
  uint64_t remote_addr() const { return remote_addr_; }
  size_t remote_len() const { return remote_len_; }

  std::string Command(const std::string &c) {
    std::string line;
    if (!WriteLine(fd_, c) || !ReadLine(fd_, &rbuf_, &line, 20000)) return "";
    return line;
  }
  uint64_t RemoteHash(size_t off, size_t len) {
    std::string r = Command("hash " + std::to_string(off) + " " + std::to_string(len));
    return r.size() > 3 && r.compare(0, 3, "ok ") == 0 ? std::stoull(r.substr(3)) : 0;
  }
  void KillAndWait() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // SIGSTOP, then waits until every thread of the child is stopped.
  bool Stop() {
    kill(pid_, SIGSTOP);
    for (int i = 0; i < 2000; ++i) {
      if (AllThreadsStopped()) return true;
      usleep(1000);
    }
    return false;
  }
  void Continue() { kill(pid_, SIGCONT); }

 private:
  bool AllThreadsStopped() const {
    const std::string dir = "/proc/" + std::to_string(pid_) + "/task";
    DIR *d = opendir(dir.c_str());
    if (d == nullptr) return false;
    bool all = true;
    while (dirent *e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      FILE *f = fopen((dir + "/" + e->d_name + "/stat").c_str(), "r");
      if (f == nullptr) continue;
      char b[512] = {0};
      size_t n = fread(b, 1, sizeof(b) - 1, f);
      fclose(f);
      const char *p = strrchr(b, ')');
      all = all && p != nullptr && p + 2 < b + n && p[2] == 'T';
    }
    closedir(d);
    return all;
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  bool ok_ = false;
  std::string rbuf_, address_, key_;
  uint64_t remote_addr_ = 0;
  size_t remote_len_ = 0;
};

// ------------------------------------------------------------- fixture

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(g_plugin_path.empty()) << "no plugin under test: pass --plugin=PATH or set ADXL_PLUGIN_UNDER_TEST";
    std::string why;
    lib_ = adxl::PluginLibrary::LoadFile(g_plugin_path, ADXL_PLUGIN_ABI_VERSION, &why);
    ASSERT_TRUE(lib_ != nullptr) << why;
    ops_ = &lib_->ops();
  }
  void TearDown() override {
    for (auto it = contexts_.rbegin(); it != contexts_.rend(); ++it) {
      for (adxl_plugin_mem_t *m : it->mems) ops_->mem_dereg(it->ctx, m);
      ops_->close(it->ctx);
    }
    contexts_.clear();
  }

  struct Ctx {
    adxl_plugin_context_t *ctx = nullptr;
    std::vector<adxl_plugin_mem_t *> mems;
  };
  // Opens a context owned by the fixture (closed in TearDown).
  // `params`: settings for open(); a plugin ignores keys it does not know.
  adxl_plugin_context_t *Open(const std::vector<adxl_plugin_param_t> &params = {}) {
    adxl_plugin_config_t cfg{params.data(), params.size(), PluginLog, nullptr};
    adxl_plugin_context_t *ctx = nullptr;
    int rc = ops_->open(&cfg, &ctx);
    EXPECT_EQ(rc, ADXL_PLUGIN_OK);
    if (rc != ADXL_PLUGIN_OK) return nullptr;
    contexts_.push_back({ctx, {}});
    return ctx;
  }
  adxl_plugin_mem_t *Reg(adxl_plugin_context_t *ctx, const Buffer &b) { return RegRange(ctx, b.data(), b.size()); }
  adxl_plugin_mem_t *RegRange(adxl_plugin_context_t *ctx, void *addr, size_t len) {
    adxl_plugin_mem_t *m = nullptr;
    EXPECT_EQ(ops_->mem_reg(ctx, addr, len, ADXL_PLUGIN_MEM_HOST, nullptr, 0, &m), ADXL_PLUGIN_OK);
    for (auto &c : contexts_) {
      if (c.ctx == ctx && m != nullptr) c.mems.push_back(m);
    }
    return m;
  }
  std::string Describe(adxl_plugin_ep_t *ep) {
    char buf[256] = {0};
    EXPECT_EQ(ops_->ep_describe(ep, buf, sizeof(buf)), ADXL_PLUGIN_OK);
    return buf;
  }
  std::string Address(adxl_plugin_context_t *ctx) {
    size_t len = 0;
    EXPECT_EQ(ops_->get_address(ctx, nullptr, &len), ADXL_PLUGIN_ERR_NO_RESOURCE);
    std::string a(len, '\0');
    EXPECT_EQ(ops_->get_address(ctx, &a[0], &len), ADXL_PLUGIN_OK);
    a.resize(len);
    return a;
  }
  std::string Pack(adxl_plugin_context_t *ctx, adxl_plugin_mem_t *m) {
    size_t len = 0;
    EXPECT_EQ(ops_->mem_pack(ctx, m, nullptr, &len), ADXL_PLUGIN_ERR_NO_RESOURCE);
    std::string k(len, '\0');
    EXPECT_EQ(ops_->mem_pack(ctx, m, &k[0], &len), ADXL_PLUGIN_OK);
    k.resize(len);
    return k;
  }
  // Polls test() only (no progress()): the plugin must complete by itself.
  int Wait(adxl_plugin_batch_t *b, int timeout_ms = 20000) {
    const auto t0 = std::chrono::steady_clock::now();
    int st;
    while ((st = ops_->test(b)) == ADXL_PLUGIN_IN_PROGRESS && MsSince(t0) < timeout_ms) usleep(20);
    return st;
  }
  // Posts and waits; returns the post error or the batch's final status.
  int Run(adxl_plugin_ep_t *ep, int op, const std::vector<adxl_plugin_iov_t> &iov, int timeout_ms = 20000) {
    adxl_plugin_batch_t *b = nullptr;
    // The iov array is the caller's again once post() returns (the engine
    // reuses it for its next slice): scribble over it while the batch runs.
    std::vector<adxl_plugin_iov_t> scratch(iov);
    int rc = ops_->post(ep, op, scratch.data(), scratch.size(), &b);
    for (auto &v : scratch) v = adxl_plugin_iov_t{nullptr, 1, nullptr, 1, 1};
    if (rc != ADXL_PLUGIN_OK) return rc;
    rc = Wait(b, timeout_ms);
    ops_->release(b);
    return rc;
  }

  std::unique_ptr<adxl::PluginLibrary> lib_;
  const adxl_plugin_ops_t *ops_ = nullptr;
  std::vector<Ctx> contexts_;
};

// A random batch: sizes 1 B..1 MiB at random offsets, non-overlapping on
// both sides (so that GET results are well defined too).
struct Slot {
  size_t local_off, remote_off, len;
};
std::vector<Slot> RandomSlots(std::mt19937_64 &rng, size_t local_size, size_t remote_size) {
  std::vector<Slot> out;
  size_t l = rng() % 4096, r = rng() % 4096;
  while (out.size() < 64) {
    const size_t cap = size_t{1} << (rng() % 21);  // 1 B .. 1 MiB scale
    const size_t len = std::min(kMaxOp, 1 + static_cast<size_t>(rng() % cap));
    if (l + len > local_size || r + len > remote_size) break;
    out.push_back({l, r, len});
    l += len + rng() % 8192;
    r += len + rng() % 8192;
  }
  return out;
}
std::vector<adxl_plugin_iov_t> Iovs(const std::vector<Slot> &slots, adxl_plugin_mem_t *local, uint64_t local_base,
                                    adxl_plugin_rkey_t *rkey, uint64_t remote_base) {
  std::vector<adxl_plugin_iov_t> v;
  for (const Slot &s : slots) v.push_back({local, local_base + s.local_off, rkey, remote_base + s.remote_off, s.len});
  return v;
}

const char *LaneName(uint32_t lane) { return lane == ADXL_PLUGIN_LANE_HCCS ? "HCCS" : "RDMA"; }

// ------------------------------------------------------- ABI and caps

TEST_F(PluginTest, RefusesAWrongAbiVersion) {
  void *h = dlopen(g_plugin_path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  ASSERT_NE(h, nullptr) << dlerror();
  auto entry = reinterpret_cast<adxl_plugin_get_ops_fn>(dlsym(h, ADXL_PLUGIN_ENTRY));
  ASSERT_NE(entry, nullptr) << "no " ADXL_PLUGIN_ENTRY " symbol";
  EXPECT_EQ(entry(ADXL_PLUGIN_ABI_VERSION + 1), nullptr) << "a table for an ABI version the plugin was not built for";
  EXPECT_EQ(entry(0), nullptr);
  const adxl_plugin_ops_t *ops = entry(ADXL_PLUGIN_ABI_VERSION);
  ASSERT_NE(ops, nullptr);
  EXPECT_EQ(ops->abi_version, ADXL_PLUGIN_ABI_VERSION);
  EXPECT_GE(ops->struct_size, sizeof(adxl_plugin_ops_t));
  ASSERT_NE(ops->name, nullptr);
  EXPECT_GT(strlen(ops->name), 0u);
  for (auto fn : {(void *)ops->open, (void *)ops->close, (void *)ops->query, (void *)ops->get_address,
                  (void *)ops->mem_reg, (void *)ops->mem_pack, (void *)ops->mem_dereg, (void *)ops->ep_create,
                  (void *)ops->ep_lane, (void *)ops->ep_destroy, (void *)ops->ep_describe, (void *)ops->rkey_unpack,
                  (void *)ops->rkey_destroy, (void *)ops->rkey_describe, (void *)ops->post, (void *)ops->test, (void *)ops->release,
                  (void *)ops->progress}) {
    EXPECT_NE(fn, nullptr) << "every operation of the table is required";
  }
  dlclose(h);

  std::string why;
  const uint32_t wrong = ADXL_PLUGIN_ABI_VERSION + 1;
  EXPECT_EQ(adxl::PluginLibrary::LoadFile(g_plugin_path, wrong, &why), nullptr);
  EXPECT_NE(why.find("version " + std::to_string(wrong)), std::string::npos) << why;
  EXPECT_NE(why.find("version " + std::to_string(ADXL_PLUGIN_ABI_VERSION)), std::string::npos)
      << "the refusal must name both versions: " << why;
}

TEST_F(PluginTest, ReportsCapabilities) {
  adxl_plugin_context_t *ctx = Open();
  ASSERT_NE(ctx, nullptr);
  adxl_plugin_caps_t caps;
  memset(&caps, 0x5A, sizeof(caps));
  ASSERT_EQ(ops_->query(ctx, &caps), ADXL_PLUGIN_OK);
  EXPECT_NE(caps.flags & ADXL_PLUGIN_CAP_MEM_HOST, 0u) << "host memory is required";
  EXPECT_EQ(caps.flags & ~(ADXL_PLUGIN_CAP_MEM_HOST | ADXL_PLUGIN_CAP_MEM_DEVICE), 0u) << "unknown capability bits";
  const size_t n = strnlen(caps.transports, sizeof(caps.transports));
  EXPECT_LT(n, sizeof(caps.transports)) << "transports must be NUL-terminated";
  EXPECT_GT(n, 0u) << "transports must name something";
  // Device memory is refused when not reported.
  if ((caps.flags & ADXL_PLUGIN_CAP_MEM_DEVICE) == 0) {
    Buffer b(4096);
    adxl_plugin_mem_t *m = nullptr;
    EXPECT_EQ(ops_->mem_reg(ctx, b.data(), b.size(), ADXL_PLUGIN_MEM_DEVICE, nullptr, 0, &m),
              ADXL_PLUGIN_ERR_UNSUPPORTED);
  }
}

TEST_F(PluginTest, OpensAndClosesRepeatedly) {
  adxl_plugin_config_t cfg{nullptr, 0, PluginLog, nullptr};
  for (int i = 0; i < 5; ++i) {
    adxl_plugin_context_t *a = nullptr, *b = nullptr;
    ASSERT_EQ(ops_->open(&cfg, &a), ADXL_PLUGIN_OK);
    ASSERT_EQ(ops_->open(&cfg, &b), ADXL_PLUGIN_OK) << "two contexts at once";
    Buffer buf(1 << 16);
    adxl_plugin_mem_t *m = nullptr;
    ASSERT_EQ(ops_->mem_reg(a, buf.data(), buf.size(), ADXL_PLUGIN_MEM_HOST, nullptr, 0, &m), ADXL_PLUGIN_OK);
    ops_->mem_dereg(a, m);
    ops_->close(i % 2 == 0 ? a : b);
    ops_->close(i % 2 == 0 ? b : a);
  }
  // Settings: known and unknown keys are accepted, a NULL log is allowed.
  const adxl_plugin_param_t params[] = {{"rdma_traffic_class", "132"}, {"rdma_service_level", "4"}, {"no_such_key", "x"}};
  adxl_plugin_config_t cfg2{params, 3, nullptr, nullptr};
  adxl_plugin_context_t *c = nullptr;
  ASSERT_EQ(ops_->open(&cfg2, &c), ADXL_PLUGIN_OK);
  ops_->close(c);
}

TEST_F(PluginTest, AddressAndKeySizeNegotiation) {
  adxl_plugin_context_t *ctx = Open();
  ASSERT_NE(ctx, nullptr);
  size_t need = 0;
  ASSERT_EQ(ops_->get_address(ctx, nullptr, &need), ADXL_PLUGIN_ERR_NO_RESOURCE);
  ASSERT_GT(need, 0u);
  std::string a(need + 16, '\xEE');
  size_t len = need - 1;
  EXPECT_EQ(ops_->get_address(ctx, &a[0], &len), ADXL_PLUGIN_ERR_NO_RESOURCE);
  EXPECT_EQ(len, need) << "a too small buffer reports the size needed";
  EXPECT_EQ(a[0], '\xEE') << "nothing written into a too small buffer";
  len = a.size();
  EXPECT_EQ(ops_->get_address(ctx, &a[0], &len), ADXL_PLUGIN_OK);
  EXPECT_EQ(len, need);
  EXPECT_EQ(a[need], '\xEE') << "written past the reported size";

  Buffer b(1 << 20);
  adxl_plugin_mem_t *m = Reg(ctx, b);
  ASSERT_NE(m, nullptr);
  need = 0;
  ASSERT_EQ(ops_->mem_pack(ctx, m, nullptr, &need), ADXL_PLUGIN_ERR_NO_RESOURCE);
  ASSERT_GT(need, 0u);
  std::string k(need, '\0');
  len = need - 1;
  EXPECT_EQ(ops_->mem_pack(ctx, m, &k[0], &len), ADXL_PLUGIN_ERR_NO_RESOURCE);
  EXPECT_EQ(len, need);
  len = need;
  EXPECT_EQ(ops_->mem_pack(ctx, m, &k[0], &len), ADXL_PLUGIN_OK);
  EXPECT_EQ(len, need);
}

TEST_F(PluginTest, RegisterPackUnpackAndBadArguments) {
  adxl_plugin_context_t *a = Open(), *b = Open();
  ASSERT_TRUE(a && b);
  Buffer buf(1 << 20);
  adxl_plugin_mem_t *m = nullptr;
  EXPECT_NE(ops_->mem_reg(a, nullptr, 4096, ADXL_PLUGIN_MEM_HOST, nullptr, 0, &m), ADXL_PLUGIN_OK);
  EXPECT_NE(ops_->mem_reg(a, buf.data(), 0, ADXL_PLUGIN_MEM_HOST, nullptr, 0, &m), ADXL_PLUGIN_OK);
  EXPECT_NE(ops_->mem_reg(a, buf.data(), buf.size(), 7, nullptr, 0, &m), ADXL_PLUGIN_OK);
  // Several registrations of one context, each packable.
  Buffer buf2(1 << 16);
  adxl_plugin_mem_t *m1 = Reg(b, buf), *m2 = Reg(b, buf2);
  ASSERT_TRUE(m1 && m2);
  const std::string k1 = Pack(b, m1), k2 = Pack(b, m2);
  const std::string addr_b = Address(b);
  for (uint32_t lane : {ADXL_PLUGIN_LANE_HCCS, ADXL_PLUGIN_LANE_RDMA}) {
    adxl_plugin_ep_t *ep = nullptr;
    int rc = ops_->ep_create(a, addr_b.data(), addr_b.size(), lane, &ep);
    if (rc == ADXL_PLUGIN_ERR_UNSUPPORTED) continue;
    ASSERT_EQ(rc, ADXL_PLUGIN_OK) << LaneName(lane);
    EXPECT_EQ(ops_->ep_lane(ep), lane);
    char desc[256];
    EXPECT_EQ(ops_->ep_describe(ep, desc, sizeof(desc)), ADXL_PLUGIN_OK);
    EXPECT_LT(strnlen(desc, sizeof(desc)), sizeof(desc));
    for (const std::string *k : {&k1, &k2}) {
      adxl_plugin_rkey_t *rk = nullptr;
      ASSERT_EQ(ops_->rkey_unpack(ep, k->data(), k->size(), &rk), ADXL_PLUGIN_OK) << LaneName(lane);
      // rkey_describe: a short name, cut to the buffer; bad arguments refused.
      char path[64];
      ASSERT_EQ(ops_->rkey_describe(rk, path, sizeof(path)), ADXL_PLUGIN_OK);
      EXPECT_GT(strlen(path), 0u);
      EXPECT_EQ(strchr(path, ' '), nullptr) << path;
      char tiny[2] = {'x', 'x'};
      EXPECT_EQ(ops_->rkey_describe(rk, tiny, sizeof(tiny)), ADXL_PLUGIN_OK);
      EXPECT_EQ(tiny[1], '\0');
      EXPECT_EQ(ops_->rkey_describe(rk, path, 0), ADXL_PLUGIN_ERR_INVALID);
      EXPECT_EQ(ops_->rkey_describe(nullptr, path, sizeof(path)), ADXL_PLUGIN_ERR_INVALID);
      EXPECT_EQ(ops_->rkey_describe(rk, nullptr, sizeof(path)), ADXL_PLUGIN_ERR_INVALID);
      ops_->rkey_destroy(rk);
    }
    // Garbage, truncated and empty keys are errors, not crashes.
    std::mt19937_64 rng(7);
    for (int i = 0; i < 50; ++i) {
      std::string g(1 + rng() % 200, '\0');
      for (char &c : g) c = static_cast<char>(rng());
      adxl_plugin_rkey_t *rk = nullptr;
      EXPECT_NE(ops_->rkey_unpack(ep, g.data(), g.size(), &rk), ADXL_PLUGIN_OK) << "garbage key accepted";
    }
    for (size_t cut : {size_t{0}, size_t{1}, size_t{4}, k1.size() / 2, k1.size() - 1}) {
      adxl_plugin_rkey_t *rk = nullptr;
      EXPECT_NE(ops_->rkey_unpack(ep, k1.data(), cut, &rk), ADXL_PLUGIN_OK) << "key truncated to " << cut;
    }
    std::string longer = k1 + "xyz";
    adxl_plugin_rkey_t *rk = nullptr;
    EXPECT_NE(ops_->rkey_unpack(ep, longer.data(), longer.size(), &rk), ADXL_PLUGIN_OK) << "key with a tail";
    ops_->ep_destroy(ep, 0);
  }
  // Garbage addresses are refused.
  std::mt19937_64 rng(9);
  for (int i = 0; i < 20; ++i) {
    std::string g(1 + rng() % 300, '\0');
    for (char &c : g) c = static_cast<char>(rng());
    adxl_plugin_ep_t *ep = nullptr;
    EXPECT_NE(ops_->ep_create(a, g.data(), g.size(), ADXL_PLUGIN_LANE_HCCS | ADXL_PLUGIN_LANE_RDMA, &ep),
              ADXL_PLUGIN_OK);
  }
  adxl_plugin_ep_t *ep = nullptr;
  EXPECT_NE(ops_->ep_create(a, addr_b.data(), addr_b.size() - 1, ADXL_PLUGIN_LANE_RDMA, &ep), ADXL_PLUGIN_OK);
  // No lane, or only lanes the plugin does not know: none reaches the peer.
  EXPECT_EQ(ops_->ep_create(a, addr_b.data(), addr_b.size(), 0, &ep), ADXL_PLUGIN_ERR_UNSUPPORTED);
  EXPECT_EQ(ops_->ep_create(a, addr_b.data(), addr_b.size(), 1u << 7, &ep), ADXL_PLUGIN_ERR_UNSUPPORTED);
}

// --------------------------------------------------------- data movement

// The parameter: a lane, with kSharedFileMemory set for every buffer of the
// test (both processes) being a shared file mapping (memfd), which the
// HCCS lane maps directly instead of cross-memory attach.
constexpr uint32_t kSharedFileMemory = 1u << 16;

class LaneTest : public PluginTest, public ::testing::WithParamInterface<uint32_t> {
 protected:
  void SetUp() override {
    if (GetParam() & kSharedFileMemory) setenv("ADXL_CONFORMANCE_MEMORY", "memfd", 1);
    PluginTest::SetUp();
  }
  void TearDown() override {
    PluginTest::TearDown();
    unsetenv("ADXL_CONFORMANCE_MEMORY");
  }
  uint32_t lane() const { return GetParam() & ~kSharedFileMemory; }
  // ep_create on the parameter's lane; skips when the plugin does not offer it.
  adxl_plugin_ep_t *Connect(adxl_plugin_context_t *ctx, const std::string &addr) {
    adxl_plugin_ep_t *ep = nullptr;
    int rc = ops_->ep_create(ctx, addr.data(), addr.size(), lane(), &ep);
    if (rc == ADXL_PLUGIN_ERR_UNSUPPORTED) return nullptr;
    EXPECT_EQ(rc, ADXL_PLUGIN_OK);
    if (rc != ADXL_PLUGIN_OK) return nullptr;
    EXPECT_EQ(ops_->ep_lane(ep), lane()) << "ep_lane must report the lane asked for";
    return ep;
  }
  adxl_plugin_rkey_t *Unpack(adxl_plugin_ep_t *ep, const std::string &key) {
    adxl_plugin_rkey_t *rk = nullptr;
    EXPECT_EQ(ops_->rkey_unpack(ep, key.data(), key.size(), &rk), ADXL_PLUGIN_OK);
    return rk;
  }
  void LinkToChild(struct ChildLink *l, const std::vector<adxl_plugin_param_t> &params = {});
};

#define SKIP_IF_NO_LANE(ep) \
  if ((ep) == nullptr) GTEST_SKIP() << "the plugin does not offer the " << LaneName(lane()) << " lane here"

// A context of this process linked to a child process over the lane under
// test, after one checked 4 KiB PUT; `all` covers the whole local buffer and
// the child's in operations of kMaxOp bytes.
struct ChildLink {
  // `child_params`: the child's open() parameters.
  explicit ChildLink(const std::vector<adxl_plugin_param_t> &child_params = {}) : child(child_params) {}
  Child child;
  Buffer local{kBufSize};
  adxl_plugin_context_t *ctx = nullptr;
  adxl_plugin_mem_t *mem = nullptr;
  adxl_plugin_ep_t *ep = nullptr;
  adxl_plugin_rkey_t *rk = nullptr;
  std::vector<adxl_plugin_iov_t> all;
};

// Sets *l up (a context opened with `params`); records a failure or a skip
// when it cannot (LINK_TO_CHILD then returns from the test).
#define LINK_TO_CHILD(l, ...)                       \
  LinkToChild(&(l), ##__VA_ARGS__);                 \
  if (HasFatalFailure() || IsSkipped()) return

void LaneTest::LinkToChild(ChildLink *l, const std::vector<adxl_plugin_param_t> &params) {
  ASSERT_TRUE(l->child.ok()) << "the child process did not start";
  l->ctx = Open(params);
  ASSERT_NE(l->ctx, nullptr);
  l->mem = Reg(l->ctx, l->local);
  l->ep = Connect(l->ctx, l->child.address());
  SKIP_IF_NO_LANE(l->ep);
  l->rk = Unpack(l->ep, l->child.key());
  ASSERT_NE(l->rk, nullptr);
  if ((GetParam() & kSharedFileMemory) && lane() == ADXL_PLUGIN_LANE_HCCS) {
    ASSERT_NE(Describe(l->ep).find("mapped/memfd"), std::string::npos)
        << "the child's memfd memory is not mapped directly: " << Describe(l->ep);
  }
  ASSERT_EQ(Run(l->ep, ADXL_PLUGIN_PUT, {{l->mem, l->local.addr(), l->rk, l->child.remote_addr(), 4096}}),
            ADXL_PLUGIN_OK);
  for (size_t off = 0; off < kBufSize; off += kMaxOp) {
    l->all.push_back({l->mem, l->local.addr() + off, l->rk, l->child.remote_addr() + off, kMaxOp});
  }
}


TEST_P(LaneTest, RandomBatchesInOneProcess) {
  adxl_plugin_context_t *a = Open(), *b = Open();
  ASSERT_TRUE(a && b);
  Buffer la(kBufSize), rb(kBufSize);
  adxl_plugin_mem_t *ma = Reg(a, la), *mb = Reg(b, rb);
  ASSERT_TRUE(ma && mb);
  adxl_plugin_ep_t *ep = Connect(a, Address(b));
  SKIP_IF_NO_LANE(ep);
  adxl_plugin_rkey_t *rk = Unpack(ep, Pack(b, mb));
  ASSERT_NE(rk, nullptr);
  EXPECT_EQ(Run(ep, ADXL_PLUGIN_PUT, {}), ADXL_PLUGIN_OK) << "a count-0 post (flush) completes";
  std::mt19937_64 rng(GetParam() * 1000 + 1);
  for (int round = 0; round < 6; ++round) {
    const auto slots = RandomSlots(rng, la.size(), rb.size());
    // PUT: a -> b
    FillPattern(la.data(), la.size(), 100 + round);
    FillPattern(rb.data(), rb.size(), 200 + round);
    ASSERT_EQ(Run(ep, ADXL_PLUGIN_PUT, Iovs(slots, ma, la.addr(), rk, rb.addr())), ADXL_PLUGIN_OK);
    for (const Slot &s : slots) {
      ASSERT_EQ(memcmp(rb.data() + s.remote_off, la.data() + s.local_off, s.len), 0)
          << "PUT of " << s.len << " bytes at remote offset " << s.remote_off;
    }
    // GET: b -> a
    FillPattern(la.data(), la.size(), 300 + round);
    FillPattern(rb.data(), rb.size(), 400 + round);
    ASSERT_EQ(Run(ep, ADXL_PLUGIN_GET, Iovs(slots, ma, la.addr(), rk, rb.addr())), ADXL_PLUGIN_OK);
    for (const Slot &s : slots) {
      ASSERT_EQ(memcmp(la.data() + s.local_off, rb.data() + s.remote_off, s.len), 0)
          << "GET of " << s.len << " bytes at remote offset " << s.remote_off;
    }
  }
  // Local registration may be given as NULL (unregistered-source fast path is optional):
  // only check that a count-0 flush still completes after all of this.
  EXPECT_EQ(Run(ep, ADXL_PLUGIN_GET, {}), ADXL_PLUGIN_OK);
  ops_->rkey_destroy(rk);
  ops_->ep_destroy(ep, 0);
}

TEST_P(LaneTest, ReleaseBeforeCompletionIsSafe) {
  adxl_plugin_context_t *a = Open(), *b = Open();
  ASSERT_TRUE(a && b);
  Buffer la(kBufSize), rb(kBufSize);
  adxl_plugin_mem_t *ma = Reg(a, la), *mb = Reg(b, rb);
  adxl_plugin_ep_t *ep = Connect(a, Address(b));
  SKIP_IF_NO_LANE(ep);
  adxl_plugin_rkey_t *rk = Unpack(ep, Pack(b, mb));
  ASSERT_NE(rk, nullptr);
  std::vector<adxl_plugin_iov_t> all;
  for (size_t off = 0; off < kBufSize; off += kMaxOp) all.push_back({ma, la.addr() + off, rk, rb.addr() + off, kMaxOp});
  for (int i = 0; i < 8; ++i) {
    adxl_plugin_batch_t *batch = nullptr;
    ASSERT_EQ(ops_->post(ep, i % 2 ? ADXL_PLUGIN_GET : ADXL_PLUGIN_PUT, all.data(), all.size(), &batch), ADXL_PLUGIN_OK);
    ops_->release(batch);  // before it completes (most likely)
  }
  // The endpoint still works, and a later batch is correct.
  FillPattern(la.data(), la.size(), 5);
  ASSERT_EQ(Run(ep, ADXL_PLUGIN_PUT, all), ADXL_PLUGIN_OK);
  EXPECT_EQ(Hash(rb.data(), rb.size()), Hash(la.data(), la.size()));
  ops_->rkey_destroy(rk);
  ops_->ep_destroy(ep, 0);
}

TEST_P(LaneTest, RandomBatchesAgainstAnotherProcess) {
  Child child;
  ASSERT_TRUE(child.ok()) << "the child process did not start";
  adxl_plugin_context_t *a = Open();
  ASSERT_NE(a, nullptr);
  Buffer la(kBufSize);
  adxl_plugin_mem_t *ma = Reg(a, la);
  adxl_plugin_ep_t *ep = Connect(a, child.address());
  SKIP_IF_NO_LANE(ep);
  adxl_plugin_rkey_t *rk = Unpack(ep, child.key());
  ASSERT_NE(rk, nullptr);
  EXPECT_EQ(Run(ep, ADXL_PLUGIN_PUT, {}), ADXL_PLUGIN_OK) << "a count-0 post (flush) completes";
  std::mt19937_64 rng(GetParam() * 1000 + 2);
  for (int round = 0; round < 5; ++round) {
    const auto slots = RandomSlots(rng, la.size(), child.remote_len());
    // PUT: the child calls nothing while data moves (it sits in read()).
    FillPattern(la.data(), la.size(), 500 + round);
    ASSERT_EQ(Run(ep, ADXL_PLUGIN_PUT, Iovs(slots, ma, la.addr(), rk, child.remote_addr())), ADXL_PLUGIN_OK);
    for (const Slot &s : slots) {
      ASSERT_EQ(child.RemoteHash(s.remote_off, s.len), Hash(la.data() + s.local_off, s.len))
          << "PUT of " << s.len << " bytes at remote offset " << s.remote_off;
    }
    // GET
    ASSERT_EQ(child.Command("fill " + std::to_string(600 + round)), "ok");
    memset(la.data(), 0, la.size());
    ASSERT_EQ(Run(ep, ADXL_PLUGIN_GET, Iovs(slots, ma, la.addr(), rk, child.remote_addr())), ADXL_PLUGIN_OK);
    for (const Slot &s : slots) {
      std::vector<uint8_t> want(s.len);
      for (size_t i = 0; i < s.len; ++i) want[i] = PatternByte(600 + round, s.remote_off + i);
      ASSERT_EQ(memcmp(la.data() + s.local_off, want.data(), s.len), 0)
          << "GET of " << s.len << " bytes at remote offset " << s.remote_off;
    }
  }
  ops_->rkey_destroy(rk);
  ops_->ep_destroy(ep, 0);
}

// drain (optional): the target side of a fence.  An idle context drains at
// once.  A child PUTs into this process's memory and is stopped mid-way: the
// drain either finds nothing of it running here (a one-sided lane, or a
// moment between messages) or returns IN_PROGRESS at its deadline, not
// before and not much after; once the child runs again, a drain returns OK
// and every byte is in place.  On the UCX plugin's RDMA lane over active
// messages over UCX's TCP transport (UCX_TLS=tcp in both processes here;
// with cma beside it UCX would pull the data itself) the target serves each
// message, so a stopped initiator must be seen in at least one of the
// rounds: a drain that only asked whether its workers were busy would answer
// OK every time.
TEST_P(LaneTest, DrainWaitsForWhatAPeerStartedHere) {
  if (ops_->struct_size < offsetof(adxl_plugin_ops_t, drain) + sizeof(ops_->drain) || ops_->drain == nullptr) {
    GTEST_SKIP() << "the plugin has no drain (optional)";
  }
  const bool tcp_only = lane() == ADXL_PLUGIN_LANE_RDMA && getenv("UCX_TLS") == nullptr;
  if (tcp_only) setenv("UCX_TLS", "tcp", 1);
  struct Unset {
    bool on;
    ~Unset() {
      if (on) unsetenv("UCX_TLS");
    }
  } unset{tcp_only};
  auto in_ms = [](double ms) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec) +
           static_cast<uint64_t>(ms * 1e6);
  };
  Child child;
  ASSERT_TRUE(child.ok()) << "the child process did not start";
  adxl_plugin_context_t *ctx = Open();
  ASSERT_NE(ctx, nullptr);
  Buffer mine(kBufSize);
  adxl_plugin_mem_t *mem = Reg(ctx, mine);
  ASSERT_NE(mem, nullptr);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ops_->drain(ctx, in_ms(5000)), ADXL_PLUGIN_OK) << "an idle context";
  EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(1000)) << "an idle context drains at once";
  const std::string put = "put " + Hex(Address(ctx)) + " " + Hex(Pack(ctx, mem)) + " " + std::to_string(mine.addr()) +
                          " " + std::to_string(lane()) + " ";
  const double limit_ms = 200;
  int caught = 0;
  for (int round = 0; round < 5; ++round) {
    const std::string r = child.Command(put + std::to_string(700 + round));
    if (r == "nolane") GTEST_SKIP() << "the child does not reach this process over the " << LaneName(lane()) << " lane";
    ASSERT_EQ(r, "ok");
    ASSERT_TRUE(child.Stop());
    t0 = std::chrono::steady_clock::now();
    const int st = ops_->drain(ctx, in_ms(limit_ms));
    const double ms = MsSince(t0);
    EXPECT_TRUE(st == ADXL_PLUGIN_OK || st == ADXL_PLUGIN_IN_PROGRESS) << "status " << st;
    EXPECT_LT(ms, adxl_test::ScaledMs(limit_ms + 300)) << "drain past its deadline";
    if (st == ADXL_PLUGIN_IN_PROGRESS) {
      ++caught;
      EXPECT_GE(ms, limit_ms - 1) << "IN_PROGRESS before the deadline";
    }
    child.Continue();
    EXPECT_EQ(ops_->drain(ctx, in_ms(adxl_test::ScaledMs(10000))), ADXL_PLUGIN_OK)
        << "what a running peer started here did not end";
    ASSERT_EQ(child.Command("wait"), "ok 0");
    std::vector<uint8_t> want(mine.size());
    FillPattern(want.data(), want.size(), 700 + round);
    EXPECT_EQ(Hash(mine.data(), mine.size()), Hash(want.data(), want.size())) << "round " << round;
  }
  RecordProperty("drain_in_progress_rounds", caught);
  adxl_plugin_caps_t caps{};
  ASSERT_EQ(ops_->query(ctx, &caps), ADXL_PLUGIN_OK);
  std::istringstream list(caps.transports);
  bool am = false;
  for (std::string t; std::getline(list, t, ',');) am = am || t == "am";
  const bool served_by_target = strcmp(ops_->name, "ucx") == 0 && tcp_only && am;
  if (served_by_target) {
    EXPECT_GT(caught, 0) << "a stopped initiator's PUTs were never seen running here (transports: " << caps.transports
                         << ")";
  }
}

TEST_P(LaneTest, PeerDeathEndsBatchesWithAnError) {
  Child child;
  ASSERT_TRUE(child.ok());
  adxl_plugin_context_t *a = Open();
  ASSERT_NE(a, nullptr);
  Buffer la(kBufSize);
  adxl_plugin_mem_t *ma = Reg(a, la);
  adxl_plugin_ep_t *ep = Connect(a, child.address());
  SKIP_IF_NO_LANE(ep);
  adxl_plugin_rkey_t *rk = Unpack(ep, child.key());
  ASSERT_NE(rk, nullptr);
  const std::vector<adxl_plugin_iov_t> one = {{ma, la.addr(), rk, child.remote_addr(), 4096}};
  ASSERT_EQ(Run(ep, ADXL_PLUGIN_PUT, one), ADXL_PLUGIN_OK);
  child.KillAndWait();
  std::vector<adxl_plugin_iov_t> all;
  for (size_t off = 0; off < kBufSize; off += kMaxOp) {
    all.push_back({ma, la.addr() + off, rk, child.remote_addr() + off, kMaxOp});
  }
  for (int op : {ADXL_PLUGIN_PUT, ADXL_PLUGIN_GET, ADXL_PLUGIN_PUT}) {
    const auto t0 = std::chrono::steady_clock::now();
    adxl_plugin_batch_t *batch = nullptr;
    int rc = ops_->post(ep, op, all.data(), all.size(), &batch);
    if (rc == ADXL_PLUGIN_OK) {
      rc = Wait(batch, 5000);
      ops_->release(batch);
    }
    EXPECT_NE(rc, ADXL_PLUGIN_OK) << (op == ADXL_PLUGIN_PUT ? "PUT" : "GET") << " to a dead peer succeeded";
    EXPECT_NE(rc, ADXL_PLUGIN_IN_PROGRESS) << "a batch to a dead peer still runs after 5 s";
    EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(5500));
  }
  // A flush after death does not hang either.
  {
    adxl_plugin_batch_t *batch = nullptr;
    int rc = ops_->post(ep, ADXL_PLUGIN_PUT, nullptr, 0, &batch);
    if (rc == ADXL_PLUGIN_OK) {
      EXPECT_NE(Wait(batch, 5000), ADXL_PLUGIN_IN_PROGRESS);
      ops_->release(batch);
    }
  }
  // A batch still running (if any) is cancelled by a forced destroy, quickly.
  adxl_plugin_batch_t *pending = nullptr;
  if (ops_->post(ep, ADXL_PLUGIN_PUT, all.data(), all.size(), &pending) != ADXL_PLUGIN_OK) pending = nullptr;
  ops_->rkey_destroy(rk);
  const auto t0 = std::chrono::steady_clock::now();
  ops_->ep_destroy(ep, 1);
  EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(3000)) << "ep_destroy(force) after peer death";
  if (pending != nullptr) {
    int st = ops_->test(pending);
    EXPECT_TRUE(st == ADXL_PLUGIN_ERR_CANCELED || st == ADXL_PLUGIN_ERR_IO) << "status " << st;
    ops_->release(pending);
  }
}

// A graceful destroy of an endpoint whose peer died returns within its
// bound, and the context goes on: UCP releases an endpoint whose close
// request ended, with an error too, so the plugin must not close it again.
TEST_P(LaneTest, GracefulDestroyAfterPeerDeathReturnsAndTheContextGoesOn) {
  adxl_plugin_context_t *a = Open();
  ASSERT_NE(a, nullptr);
  Buffer la(kBufSize);
  adxl_plugin_mem_t *ma = Reg(a, la);
  for (int round = 0; round < 2; ++round) {  // the second endpoint may take the first's memory
    Child child;
    ASSERT_TRUE(child.ok());
    adxl_plugin_ep_t *ep = Connect(a, child.address());
    SKIP_IF_NO_LANE(ep);
    adxl_plugin_rkey_t *rk = Unpack(ep, child.key());
    ASSERT_NE(rk, nullptr);
    FillPattern(la.data(), 4096, 40 + round);
    ASSERT_EQ(Run(ep, ADXL_PLUGIN_PUT, {{ma, la.addr(), rk, child.remote_addr(), 4096}}), ADXL_PLUGIN_OK);
    ASSERT_EQ(child.RemoteHash(0, 4096), Hash(la.data(), 4096));
    child.KillAndWait();
    // The death seen (or not yet: either way the destroy must cope).
    EXPECT_NE(Run(ep, ADXL_PLUGIN_PUT, {{ma, la.addr(), rk, child.remote_addr(), 4096}}, 5000), ADXL_PLUGIN_OK);
    ops_->rkey_destroy(rk);
    const auto t0 = std::chrono::steady_clock::now();
    OutputCapture out(1), err(2);
    ops_->ep_destroy(ep, 0);
    const std::string said = err.Take() + out.Take();
    EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(4000)) << "ep_destroy(graceful) after peer death, round " << round;
    // UCX says "ep ... has already been closed" of a second close (the
    // endpoint's memory may be another endpoint's by then).
    EXPECT_EQ(said.find("ERROR"), std::string::npos) << "round " << round << ": " << said;
  }
  // The context still moves bytes to a live peer.
  Child live;
  ASSERT_TRUE(live.ok());
  adxl_plugin_ep_t *ep = Connect(a, live.address());
  ASSERT_NE(ep, nullptr);
  adxl_plugin_rkey_t *rk = Unpack(ep, live.key());
  ASSERT_NE(rk, nullptr);
  FillPattern(la.data(), 65536, 77);
  ASSERT_EQ(Run(ep, ADXL_PLUGIN_PUT, {{ma, la.addr(), rk, live.remote_addr(), 65536}}), ADXL_PLUGIN_OK);
  EXPECT_EQ(live.RemoteHash(0, 65536), Hash(la.data(), 65536));
  ops_->rkey_destroy(rk);
  ops_->ep_destroy(ep, 0);
}

// An operation without a remote key is bad input on every lane and
// protocol: the post or its batch fails with ERR_INVALID, nothing crashes,
// and the endpoint moves the next good batch.
TEST_P(LaneTest, AnOperationWithoutARemoteKeyIsRefused) {
  for (const char *protocol : {"am", "rma"}) {
    SCOPED_TRACE(protocol);
    const std::vector<adxl_plugin_param_t> params = {{"rdma_protocol", protocol}};
    ChildLink l(params);
    LINK_TO_CHILD(l, params);
    for (int op : {ADXL_PLUGIN_PUT, ADXL_PLUGIN_GET}) {
      const std::vector<adxl_plugin_iov_t> bad = {{l.mem, l.local.addr(), l.rk, l.child.remote_addr(), 4096},
                                                  {l.mem, l.local.addr() + 4096, nullptr, l.child.remote_addr(), 4096}};
      EXPECT_EQ(Run(l.ep, op, bad), ADXL_PLUGIN_ERR_INVALID) << (op == ADXL_PLUGIN_PUT ? "PUT" : "GET");
    }
    FillPattern(l.local.data(), 8192, 5);
    ASSERT_EQ(Run(l.ep, ADXL_PLUGIN_PUT, {{l.mem, l.local.addr(), l.rk, l.child.remote_addr(), 8192}}), ADXL_PLUGIN_OK);
    EXPECT_EQ(l.child.RemoteHash(0, 8192), Hash(l.local.data(), 8192));
    ops_->rkey_destroy(l.rk);
    ops_->ep_destroy(l.ep, 1);
  }
}

// mem_dereg ends what peers write into the region, also a WRITE whose
// message the transport had already accepted when the region went: once
// mem_dereg returns the memory is the owner's, and no byte lands in it.
// On the UCX plugin's RDMA lane the fault-injection parameter
// test_write_accept_delay_us (test build only) holds the target's WRITE
// handler between finding the memory and taking the data; an earlier
// version then returned from mem_dereg at once and the held WRITE landed
// afterwards, into memory the owner may have freed.
TEST_P(LaneTest, MemDeregWaitsForAWriteAlreadyAccepted) {
  Child child;
  ASSERT_TRUE(child.ok());
  adxl_plugin_context_t *ctx = Open({{"test_write_accept_delay_us", "500000"}});
  ASSERT_NE(ctx, nullptr);
  void *pages = mmap(nullptr, kBufSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(pages, MAP_FAILED);
  adxl_plugin_mem_t *mem = nullptr;
  ASSERT_EQ(ops_->mem_reg(ctx, pages, kBufSize, ADXL_PLUGIN_MEM_HOST, nullptr, 0, &mem), ADXL_PLUGIN_OK);
  const std::string r = child.Command("put " + Hex(Address(ctx)) + " " + Hex(Pack(ctx, mem)) + " " +
                                      std::to_string(reinterpret_cast<uintptr_t>(pages)) + " " +
                                      std::to_string(lane()) + " 91");
  if (r == "nolane") {
    ops_->mem_dereg(ctx, mem);
    munmap(pages, kBufSize);
    GTEST_SKIP() << "the child does not reach this process over the " << LaneName(lane()) << " lane";
  }
  ASSERT_EQ(r, "ok");
  usleep(200000);  // the first WRITE is in its handler (500 ms there with the parameter)
  const auto t0 = std::chrono::steady_clock::now();
  ops_->mem_dereg(ctx, mem);
  EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(3000)) << "mem_dereg with peer WRITEs in flight";
  // Nothing lands any more: the memory stays as mem_dereg left it while
  // the held handler and the child's other WRITEs have their turn.
  const uint64_t left = Hash(pages, kBufSize);
  usleep(700000);
  EXPECT_EQ(Hash(pages, kBufSize), left) << "a peer's bytes landed after mem_dereg returned";
  child.KillAndWait();
  munmap(pages, kBufSize);
}

// mem_dereg ends the requests peers still have pending on the region; the
// UCX plugin's RDMA lane over active messages does so by force-closing the
// endpoint their answers go on.  When two contexts link to each other both
// ways, UCP pairs their endpoints, and that endpoint is this side's own
// connection to the peer: it then fails as if it had dropped - a post on
// the link fails with ERR_IO (over network paths, the link may instead
// move on a reconnected path), no send touches the closed endpoint, and
// ep_destroy closes nothing a second time (UCX says "already been closed"
// of a second close, whose endpoint may be another's by then).  An earlier
// version closed it behind the link's back: the next post sent on the
// freed endpoint (a crash in ucp_am_send_nbx) and ep_destroy closed it
// again.  Each variant: one connection per link, two
// (rdma_connections=2), one network path over loopback (rdma_paths=lo), and
// a mixed link: the target's side on UCP RMA (rdma_protocol=rma), the
// initiator's on active messages, so that the endpoint closed is the RMA
// mover's (before its fix: closed behind its back, as above).
// The UCX plugin's test build holds the initiator's READ-data handler
// (test_read_data_delay_us), so that the answer of a READ from the region
// is still pending when the region goes; where nothing was pending then
// (the READ ended first), the variant has nothing to check and says so.
TEST_P(LaneTest, MemDeregClosingThisSidesOwnEndpointFailsItsLink) {
  if (lane() != ADXL_PLUGIN_LANE_RDMA) GTEST_SKIP() << "a case of the RDMA lane";
  struct Variant {
    const char *key, *value;
    const char *b_protocol;  // the target's side; the initiator's is "am"
  };
  const std::vector<Variant> variants = {{"rdma_connections", "1", "am"},
                                         {"rdma_connections", "2", "am"},
                                         {"rdma_paths", "lo", "am"},
                                         {"rdma_connections", "1", "rma"}};
  int checked = 0;
  for (const Variant &variant : variants) {
    SCOPED_TRACE(std::string(variant.key) + "=" + variant.value + ", target side " + variant.b_protocol);
    const bool over_paths = std::string(variant.key) == "rdma_paths";
    adxl_plugin_context_t *a =
        Open({{"test_read_data_delay_us", "500000"}, {"rdma_protocol", "am"}, {variant.key, variant.value}});
    adxl_plugin_context_t *b = Open({{"rdma_protocol", variant.b_protocol}, {variant.key, variant.value}});
    ASSERT_TRUE(a && b);
    Buffer la(kBufSize), rb(kBufSize), rb2(65536);
    adxl_plugin_mem_t *ma = Reg(a, la), *mb2 = Reg(b, rb2);
    adxl_plugin_mem_t *mb = nullptr;  // deregistered here, not by the fixture
    ASSERT_EQ(ops_->mem_reg(b, rb.data(), rb.size(), ADXL_PLUGIN_MEM_HOST, nullptr, 0, &mb), ADXL_PLUGIN_OK);
    adxl_plugin_ep_t *ab = Connect(a, Address(b));
    if (ab == nullptr) ops_->mem_dereg(b, mb);
    SKIP_IF_NO_LANE(ab);
    adxl_plugin_ep_t *ba = Connect(b, Address(a));
    ASSERT_NE(ba, nullptr);
    adxl_plugin_rkey_t *rk_b = Unpack(ab, Pack(b, mb)), *rk_a = Unpack(ba, Pack(a, ma));
    ASSERT_TRUE(rk_b && rk_a);
    ASSERT_EQ(Run(ab, ADXL_PLUGIN_PUT, {}), ADXL_PLUGIN_OK);  // wire-up, both ways
    ASSERT_EQ(Run(ba, ADXL_PLUGIN_PUT, {}), ADXL_PLUGIN_OK);
    const std::string described = Describe(ab);
    // a READs 1 MiB of b's region; b's answer waits for a's held handler.
    const std::vector<adxl_plugin_iov_t> get = {{ma, la.addr(), rk_b, rb.addr(), kMaxOp}};
    adxl_plugin_batch_t *batch = nullptr;
    ASSERT_EQ(ops_->post(ab, ADXL_PLUGIN_GET, get.data(), get.size(), &batch), ADXL_PLUGIN_OK);
    usleep(150 * 1000);
    ops_->mem_dereg(b, mb);
    // Unless it ended before the region went, it does not end well: b closed
    // its connection (a's side may see that only at its own teardown).
    const bool pending = Wait(batch, 1500) != ADXL_PLUGIN_OK;
    if (pending) {
      ++checked;
      FillPattern(rb2.data(), 4096, 3);
      const int st = Run(ba, ADXL_PLUGIN_PUT, {{mb2, rb2.addr(), rk_a, la.addr(), 4096}}, 5000);
      if (over_paths) {
        EXPECT_TRUE(st == ADXL_PLUGIN_OK || st == ADXL_PLUGIN_ERR_IO) << "a post on the link: " << st;
      } else {
        EXPECT_EQ(st, ADXL_PLUGIN_ERR_IO) << "a post on an endpoint whose connection mem_dereg closed";
      }
      Describe(ba);  // reads nothing of the closed connection
    } else {
      printf("%s=%s, target side %s: the READ ended before its region went (%s): nothing to check\n", variant.key,
             variant.value, variant.b_protocol, described.c_str());
    }
    ops_->rkey_destroy(rk_a);
    ops_->rkey_destroy(rk_b);
    const std::string said = Said([&] {
      ops_->ep_destroy(ba, 0);
      ops_->ep_destroy(ab, 1);
    });
    ops_->release(batch);
    EXPECT_EQ(said.find("ERROR"), std::string::npos) << "ep_destroy after mem_dereg closed its connection: " << said;
  }
  if (checked == 0) GTEST_SKIP() << "no READ was still pending when its region went (the UCX test build holds one)";
}

// The same close, while this side is making its own endpoint to that peer:
// ucp_ep_create hands back the endpoint UCP made for the peer's requests
// (the pairing above), which the plugin enters in its table of own
// endpoints only after the call.  A mem_dereg in between took it for
// nobody's and closed it; the new link then held a closed endpoint, read it
// (rkey_unpack, a post) and closed it again at ep_destroy.  Now mem_dereg
// waits for the creation and closes it as its owner's: the new link fails
// (rkey_unpack or a post on it: ERR_IO) and ep_destroy writes no ERROR.
// The UCX plugin's test build holds the initiator's READ-data handler
// (test_read_data_delay_us, the READ's answer pending) and the target's
// endpoint between ucp_ep_create and its table (test_own_delay_us);
// variants: the target's side on active messages, on UCP RMA, and on
// active messages with two connections per link (the second made after
// the first, paired one: closed in between, its memory could come back as
// the second under the same link).
TEST_P(LaneTest, MemDeregWhileAnEndpointIsMadeClosesItAsItsOwners) {
  if (lane() != ADXL_PLUGIN_LANE_RDMA) GTEST_SKIP() << "a case of the RDMA lane";
  int checked = 0;
  const std::vector<std::pair<const char *, const char *>> variants = {{"am", "1"}, {"rma", "1"}, {"am", "2"}};
  for (const auto &variant : variants) {
    const char *b_protocol = variant.first;
    SCOPED_TRACE(std::string("target side ") + b_protocol + ", rdma_connections=" + variant.second);
    // The READ's answer held 1.5 s: past the creations' 0.4 s each.
    adxl_plugin_context_t *a = Open({{"test_read_data_delay_us", "1500000"}, {"rdma_protocol", "am"}});
    adxl_plugin_context_t *b = Open({{"test_own_delay_us", "400000"},
                                     {"rdma_protocol", b_protocol},
                                     {"rdma_connections", variant.second}});
    ASSERT_TRUE(a && b);
    Buffer la(kBufSize), rb(kBufSize), rb2(65536);
    adxl_plugin_mem_t *ma = Reg(a, la), *mb2 = Reg(b, rb2);
    adxl_plugin_mem_t *mb = nullptr;  // deregistered here, not by the fixture
    ASSERT_EQ(ops_->mem_reg(b, rb.data(), rb.size(), ADXL_PLUGIN_MEM_HOST, nullptr, 0, &mb), ADXL_PLUGIN_OK);
    adxl_plugin_ep_t *ab = Connect(a, Address(b));
    if (ab == nullptr) ops_->mem_dereg(b, mb);
    SKIP_IF_NO_LANE(ab);
    adxl_plugin_rkey_t *rk_b = Unpack(ab, Pack(b, mb));
    ASSERT_NE(rk_b, nullptr);
    ASSERT_EQ(Run(ab, ADXL_PLUGIN_PUT, {}), ADXL_PLUGIN_OK);  // wire-up: b's UCP made its endpoint for a's
    // Before the READ: a's worker is busy in the held handler then.
    const std::string addr_a = Address(a), ka = Pack(a, ma);
    // a READs 1 MiB of b's region; b's answer waits for a's held handler.
    const std::vector<adxl_plugin_iov_t> get = {{ma, la.addr(), rk_b, rb.addr(), kMaxOp}};
    adxl_plugin_batch_t *batch = nullptr;
    ASSERT_EQ(ops_->post(ab, ADXL_PLUGIN_GET, get.data(), get.size(), &batch), ADXL_PLUGIN_OK);
    usleep(100 * 1000);
    // b links to a meanwhile, and its region goes while that endpoint is
    // between ucp_ep_create and the table (400 ms there).
    adxl_plugin_ep_t *ba = nullptr;
    int created = ADXL_PLUGIN_ERR_INVALID;
    const std::string said_making = Said([&] {
      std::thread maker([&] { created = ops_->ep_create(b, addr_a.data(), addr_a.size(), lane(), &ba); });
      usleep(200 * 1000);
      ops_->mem_dereg(b, mb);
      maker.join();
    });
    // The plugin's own table is consistent: no endpoint entered twice.
    EXPECT_EQ(said_making.find("ERROR"), std::string::npos) << "ep_create and mem_dereg: " << said_making;
    ASSERT_EQ(created, ADXL_PLUGIN_OK);
    const bool pending = Wait(batch, 1500) != ADXL_PLUGIN_OK;
    // The new link: its endpoint was the one closed, unless UCP gave it
    // another (the READ's answer then went on one the link does not use).
    adxl_plugin_rkey_t *rk_a = nullptr;
    int st = ops_->rkey_unpack(ba, ka.data(), ka.size(), &rk_a);
    if (st == ADXL_PLUGIN_OK) {
      FillPattern(rb2.data(), 4096, 5);
      st = Run(ba, ADXL_PLUGIN_PUT, {{mb2, rb2.addr(), rk_a, la.addr(), 4096}}, 5000);
      ops_->rkey_destroy(rk_a);
    }
    Describe(ba);  // reads nothing of a closed connection
    if (pending && st != ADXL_PLUGIN_OK) {
      ++checked;
      EXPECT_EQ(st, ADXL_PLUGIN_ERR_IO) << "the new link, whose endpoint mem_dereg closed";
    } else {
      printf("target side %s: %s: nothing to check\n", b_protocol,
             pending ? "the new link's endpoint was not the one closed" : "the READ ended before its region went");
    }
    ops_->rkey_destroy(rk_b);
    const std::string said = Said([&] {
      ops_->ep_destroy(ba, 0);
      ops_->ep_destroy(ab, 1);
    });
    ops_->release(batch);
    EXPECT_EQ(said.find("ERROR"), std::string::npos) << "ep_destroy after mem_dereg closed a connection: " << said;
  }
  if (checked == 0) GTEST_SKIP() << "no new link's endpoint was the one closed (the UCX test build's seams make it)";
}

// An endpoint's teardown waits for a message of it that another thread
// has taken from the window and is handing to the transport: the UCX
// plugin's AM transport sends without its lock, and a post or teardown of
// one endpoint sends the next queued messages of any endpoint.  An earlier
// version closed the endpoint under such a send.  Two endpoints X and Y to
// a stopped child: Y's READs fill the window (16 messages, unanswered), X's
// READ waits for room; Y's teardown (a thread of its own) ends Y's batch,
// which leaves room, and that thread takes X's message, held there by the
// test build's seam (test_foreign_pump_delay_us); X's teardown comes
// meanwhile.  Both return, nothing writes an ERROR, both batches end.
TEST_P(LaneTest, ATeardownWaitsForAMessageAnotherThreadIsHandingToUcp) {
  if (lane() != ADXL_PLUGIN_LANE_RDMA) GTEST_SKIP() << "a case of the RDMA lane";
  ChildLink l;
  LINK_TO_CHILD(l, {{"test_foreign_pump_delay_us", "600000"}, {"rdma_protocol", "am"}});
  Child &child = l.child;
  adxl_plugin_ep_t *x = l.ep;
  adxl_plugin_ep_t *y = Connect(l.ctx, child.address());
  ASSERT_NE(y, nullptr);
  adxl_plugin_rkey_t *rk_y = Unpack(y, child.key());
  ASSERT_NE(rk_y, nullptr);
  ASSERT_EQ(Run(y, ADXL_PLUGIN_PUT, {}), ADXL_PLUGIN_OK);  // wire-up
  const std::string described = Describe(x);
  if (described.rfind("am", 0) != 0) GTEST_SKIP() << "the link is not on active messages: " << described;
  ASSERT_TRUE(child.Stop());
  std::vector<adxl_plugin_iov_t> reads;
  for (size_t i = 0; i < 20; ++i) {
    const size_t off = (i % (kBufSize / kMaxOp)) * kMaxOp;
    reads.push_back({l.mem, l.local.addr() + off, rk_y, child.remote_addr() + off, kMaxOp});
  }
  adxl_plugin_batch_t *by = nullptr, *bx = nullptr;
  ASSERT_EQ(ops_->post(y, ADXL_PLUGIN_GET, reads.data(), reads.size(), &by), ADXL_PLUGIN_OK);
  const std::vector<adxl_plugin_iov_t> read_x = {{l.mem, l.local.addr(), l.rk, child.remote_addr(), 4096}};
  ASSERT_EQ(ops_->post(x, ADXL_PLUGIN_GET, read_x.data(), read_x.size(), &bx), ADXL_PLUGIN_OK);
  ops_->rkey_destroy(rk_y);
  ops_->rkey_destroy(l.rk);
  double took = 0;
  const std::string said = Said([&] {
    std::thread y_teardown([&] { ops_->ep_destroy(y, 1); });
    usleep(200 * 1000);  // Y's teardown thread holds X's message now
    const auto t0 = std::chrono::steady_clock::now();
    ops_->ep_destroy(x, 1);
    took = MsSince(t0);
    y_teardown.join();
  });
  EXPECT_EQ(said.find("ERROR"), std::string::npos) << "the teardowns: " << said;
  EXPECT_LT(took, adxl_test::ScaledMs(3000)) << "ms: X's teardown";
  EXPECT_NE(ops_->test(by), ADXL_PLUGIN_IN_PROGRESS) << "Y's batch after its teardown";
  EXPECT_NE(ops_->test(bx), ADXL_PLUGIN_IN_PROGRESS) << "X's batch after its teardown";
  ops_->release(by);
  ops_->release(bx);
  printf("X's teardown took %.0f ms (the message held 600 ms from about 0-200 ms)\n", took);
}

TEST_P(LaneTest, ForcedDestroyCancelsBatchesInFlight) {
  ChildLink l;
  LINK_TO_CHILD(l);
  Child &child = l.child;
  adxl_plugin_ep_t *ep = l.ep;
  const std::vector<adxl_plugin_iov_t> &all = l.all;
  // A stopped target keeps batches in flight on lanes that need it; a truly
  // one-sided lane completes them anyway (then OK is the right answer).
  ASSERT_TRUE(child.Stop());
  std::vector<adxl_plugin_batch_t *> batches;
  for (int i = 0; i < 6; ++i) {
    adxl_plugin_batch_t *b = nullptr;
    ASSERT_EQ(ops_->post(ep, i % 2 ? ADXL_PLUGIN_GET : ADXL_PLUGIN_PUT, all.data(), all.size(), &b), ADXL_PLUGIN_OK);
    batches.push_back(b);
  }
  std::vector<int> before;
  for (auto *b : batches) before.push_back(ops_->test(b));
  const auto in_flight = std::count(before.begin(), before.end(), ADXL_PLUGIN_IN_PROGRESS);
  RecordProperty("batches_in_flight", static_cast<int>(in_flight));
  printf("%s lane: %d of %zu batches in flight at ep_destroy(force)\n", LaneName(lane()), static_cast<int>(in_flight),
         batches.size());
  ops_->rkey_destroy(l.rk);
  const auto t0 = std::chrono::steady_clock::now();
  ops_->ep_destroy(ep, 1);
  EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(3000)) << "ep_destroy(force) with batches in flight";
  for (size_t i = 0; i < batches.size(); ++i) {
    const int st = ops_->test(batches[i]);
    if (before[i] == ADXL_PLUGIN_OK) {
      EXPECT_EQ(st, ADXL_PLUGIN_OK) << "a completed batch changed its status";
    } else {
      EXPECT_TRUE(st == ADXL_PLUGIN_ERR_CANCELED || st == ADXL_PLUGIN_ERR_IO)
          << "batch " << i << " was in flight; after ep_destroy(force) its status is " << st;
    }
  }
  // Statuses are final: a moment later, with the target running, nothing changes.
  child.Continue();
  usleep(200 * 1000);
  for (size_t i = 0; i < batches.size(); ++i) {
    const int st = ops_->test(batches[i]);
    EXPECT_NE(st, ADXL_PLUGIN_IN_PROGRESS);
    if (before[i] != ADXL_PLUGIN_OK) {
      EXPECT_NE(st, ADXL_PLUGIN_OK) << "a cancelled batch completed later";
    }
    ops_->release(batches[i]);
  }
}

// The target dies between answering a READ request and the initiator
// receiving the data: the batch ends (with an error, or OK on a lane that
// had the data already), nothing hangs, and the endpoint can be destroyed.
// The UCX plugin's fault-injection setting holds the initiator in its
// READ-data handler for 300 ms, so that the kill falls into that window and
// UCP fails the receive inside the call that posts it (plugins without such
// a setting ignore it; the contract is the same).
TEST_P(LaneTest, PeerDeathBetweenReadRequestAndItsData) {
  ChildLink l;
  LINK_TO_CHILD(l, {{"test_read_data_delay_us", "300000"}});
  Child &child = l.child;
  adxl_plugin_ep_t *ep = l.ep;
  const std::vector<adxl_plugin_iov_t> &all = l.all;
  adxl_plugin_batch_t *batch = nullptr;
  ASSERT_EQ(ops_->post(ep, ADXL_PLUGIN_GET, all.data(), all.size(), &batch), ADXL_PLUGIN_OK);
  usleep(100 * 1000);  // the target has answered; the initiator sits in the handler
  child.KillAndWait();
  const int st = Wait(batch, 5000);
  EXPECT_NE(st, ADXL_PLUGIN_IN_PROGRESS) << "a READ whose target died mid-way still runs after 5 s";
  ops_->release(batch);
  ops_->rkey_destroy(l.rk);
  const auto t0 = std::chrono::steady_clock::now();
  ops_->ep_destroy(ep, 1);
  EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(3000)) << "ep_destroy(force) after the peer died mid-READ";
}

// Both sides' progress threads pause 1 ms after every pass that reported
// events, longer than they linger (the UCX plugin's fault-injection setting;
// plugins without it ignore it), as threads preempted there on a busy
// machine would.  A thread that then slept without first draining its worker
// sleeps through events UCP will not signal again: the passive child's
// wire-up or its side of the data never ends.  Connect, PUT and GET of the
// whole buffer must still end, bytes checked, within seconds.
TEST_P(LaneTest, PeersCompleteWhenTheProgressThreadIsPreemptedAfterEvents) {
  const std::vector<adxl_plugin_param_t> pause = {{"test_progress_pause_us", "1000"}};
  ChildLink l(pause);
  LINK_TO_CHILD(l, pause);
  ASSERT_EQ(l.child.Command("fill 7"), "ok");
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(Run(l.ep, ADXL_PLUGIN_GET, l.all), ADXL_PLUGIN_OK);
  EXPECT_EQ(Hash(l.local.data(), kBufSize), l.child.RemoteHash(0, kBufSize)) << "GET bytes";
  FillPattern(l.local.data(), kBufSize, 9);
  ASSERT_EQ(Run(l.ep, ADXL_PLUGIN_PUT, l.all), ADXL_PLUGIN_OK);
  EXPECT_EQ(l.child.RemoteHash(0, kBufSize), Hash(l.local.data(), kBufSize)) << "PUT bytes";
  EXPECT_LT(MsSince(t0), adxl_test::ScaledMs(10000)) << "a GET and a PUT of the buffer";
  ops_->rkey_destroy(l.rk);
  ops_->ep_destroy(l.ep, 0);
}

// Batches in flight when the peer dies end with an error within 100 ms of
// its death (plus scheduling slack), by the plugin's own failure detection:
// no engine heartbeat here.  Batches that completed before stay OK.
TEST_P(LaneTest, BatchesInFlightEndPromptlyWhenThePeerDies) {
  ChildLink l;
  LINK_TO_CHILD(l);
  Child &child = l.child;
  adxl_plugin_ep_t *ep = l.ep;
  const std::vector<adxl_plugin_iov_t> &all = l.all;
  ASSERT_TRUE(child.Stop());  // batches stay in flight on lanes that need the target
  std::vector<adxl_plugin_batch_t *> batches;
  for (int i = 0; i < 6; ++i) {
    adxl_plugin_batch_t *b = nullptr;
    ASSERT_EQ(ops_->post(ep, i % 2 ? ADXL_PLUGIN_GET : ADXL_PLUGIN_PUT, all.data(), all.size(), &b), ADXL_PLUGIN_OK);
    batches.push_back(b);
  }
  usleep(20 * 1000);
  std::vector<int> before;
  for (auto *b : batches) before.push_back(ops_->test(b));
  child.KillAndWait();
  const auto died = std::chrono::steady_clock::now();
  double last_end_ms = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const int st = Wait(batches[i], 5000);
    last_end_ms = std::max(last_end_ms, MsSince(died));
    if (before[i] == ADXL_PLUGIN_OK) {
      EXPECT_EQ(st, ADXL_PLUGIN_OK) << "a completed batch changed its status";
    } else {
      EXPECT_TRUE(st != ADXL_PLUGIN_OK && st != ADXL_PLUGIN_IN_PROGRESS) << "batch " << i << ": status " << st;
    }
  }
  printf("%s lane: %d of %zu batches in flight at the peer's death; all ended %.1f ms after it\n",
         LaneName(lane()), static_cast<int>(std::count(before.begin(), before.end(), ADXL_PLUGIN_IN_PROGRESS)),
         batches.size(), last_end_ms);
  constexpr double kPromptMs = 100, kSchedulingSlackMs = 50;
  EXPECT_LT(last_end_ms, adxl_test::ScaledMs(kPromptMs + kSchedulingSlackMs)) << "batches outlived their dead peer";
  for (auto *b : batches) ops_->release(b);
  ops_->rkey_destroy(l.rk);
  ops_->ep_destroy(ep, 1);
}


// One batch over several registrations on both sides -- two adjacent ones
// (descriptors running across their boundary, which the HCCS lane merges
// into single iovecs) and a separate one -- with odd sizes and offsets,
// zero-gap runs and gaps, more descriptors than IOV_MAX (1024); then one
// small batch (below the copy threads' split) of many tiny descriptors.
// Every byte of every buffer is checked, including those no descriptor
// touches.
TEST_P(LaneTest, BatchesAcrossRegistrationsOddSizesAndManyDescriptors) {
  const adxl_plugin_param_t threads = {"hccs_copy_threads", "3"};
  adxl_plugin_context_t *a = Open({threads}), *b = Open();
  ASSERT_TRUE(a && b);
  constexpr size_t kHalf = 4u << 20;
  Buffer la(2 * kHalf), rb(2 * kHalf), rc(1u << 20);
  ASSERT_TRUE(la.data() && rb.data() && rc.data());
  adxl_plugin_mem_t *ma[2] = {RegRange(a, la.data(), kHalf), RegRange(a, la.data() + kHalf, kHalf)};
  adxl_plugin_mem_t *mb[3] = {RegRange(b, rb.data(), kHalf), RegRange(b, rb.data() + kHalf, kHalf), Reg(b, rc)};
  ASSERT_TRUE(ma[0] && ma[1] && mb[0] && mb[1] && mb[2]);
  adxl_plugin_ep_t *ep = Connect(a, Address(b));
  SKIP_IF_NO_LANE(ep);
  adxl_plugin_rkey_t *rk[3];
  for (int i = 0; i < 3; ++i) ASSERT_NE(rk[i] = Unpack(ep, Pack(b, mb[i])), nullptr);
  struct Desc {
    size_t loff;   // in la
    int remote;    // 0: rb, 1: rc
    size_t roff;   // in rb or rc
    size_t len;
  };
  std::mt19937_64 rng(lane() * 77 + 5);
  // Descriptors at increasing offsets on both sides (destinations never
  // overlap), cut where a registration ends.
  auto generate = [&](size_t n, size_t max_len) {
    std::vector<Desc> d;
    size_t l = 1 + rng() % 7, r = 3 + rng() % 5, c = 1 + rng() % 3;
    while (d.size() < n) {
      const size_t len = 1 + rng() % max_len;
      const bool to_c = rng() % 10 == 0;
      size_t &rpos = to_c ? c : r;
      const size_t rcap = to_c ? rc.size() : rb.size();
      if (l + len > la.size() || rpos + len > rcap) break;
      size_t done = 0;
      while (done < len) {  // cut at the boundary of la's (and rb's) halves
        size_t n1 = len - done;
        if (l + done < kHalf) n1 = std::min(n1, kHalf - (l + done));
        if (!to_c && rpos + done < kHalf) n1 = std::min(n1, kHalf - (rpos + done));
        d.push_back({l + done, to_c ? 1 : 0, rpos + done, n1});
        done += n1;
      }
      const size_t gap = rng() % 2 ? 0 : 1 + rng() % 97;
      l += len + (rng() % 3 ? 0 : gap);
      rpos += len + gap;
    }
    return d;
  };
  auto iovs = [&](const std::vector<Desc> &d) {
    std::vector<adxl_plugin_iov_t> v;
    for (const Desc &x : d) {
      const int li = x.loff < kHalf ? 0 : 1;
      const int ri = x.remote == 1 ? 2 : (x.roff < kHalf ? 0 : 1);
      const uint64_t rbase = x.remote == 1 ? rc.addr() : rb.addr();
      v.push_back({ma[li], la.addr() + x.loff, rk[ri], rbase + x.roff, x.len});
    }
    return v;
  };
  for (const auto &shape : {std::make_pair(size_t{3000}, size_t{3001}), std::make_pair(size_t{1500}, size_t{37})}) {
    const std::vector<Desc> d = generate(shape.first, shape.second);
    ASSERT_GT(d.size(), size_t{1024}) << "more descriptors than IOV_MAX";
    size_t bytes = 0;
    for (const Desc &x : d) bytes += x.len;
    // PUT: la -> rb, rc
    FillPattern(la.data(), la.size(), 11);
    FillPattern(rb.data(), rb.size(), 12);
    FillPattern(rc.data(), rc.size(), 13);
    std::vector<uint8_t> want_b(rb.data(), rb.data() + rb.size()), want_c(rc.data(), rc.data() + rc.size());
    for (const Desc &x : d) memcpy((x.remote ? want_c : want_b).data() + x.roff, la.data() + x.loff, x.len);
    ASSERT_EQ(Run(ep, ADXL_PLUGIN_PUT, iovs(d)), ADXL_PLUGIN_OK);
    ASSERT_EQ(memcmp(rb.data(), want_b.data(), rb.size()), 0) << "PUT of " << d.size() << " descriptors, " << bytes << " bytes";
    ASSERT_EQ(memcmp(rc.data(), want_c.data(), rc.size()), 0) << "PUT into the separate registration";
    // GET: rb, rc -> la
    FillPattern(la.data(), la.size(), 21);
    std::vector<uint8_t> want_a(la.data(), la.data() + la.size());
    for (const Desc &x : d) memcpy(want_a.data() + x.loff, (x.remote ? rc.data() : rb.data()) + x.roff, x.len);
    ASSERT_EQ(Run(ep, ADXL_PLUGIN_GET, iovs(d)), ADXL_PLUGIN_OK);
    ASSERT_EQ(memcmp(la.data(), want_a.data(), la.size()), 0) << "GET of " << d.size() << " descriptors, " << bytes << " bytes";
  }
  for (auto *k : rk) ops_->rkey_destroy(k);
  ops_->ep_destroy(ep, 0);
}

INSTANTIATE_TEST_SUITE_P(Lanes, LaneTest,
                         ::testing::Values(ADXL_PLUGIN_LANE_HCCS, ADXL_PLUGIN_LANE_RDMA,
                                           ADXL_PLUGIN_LANE_HCCS | kSharedFileMemory),
                         [](const ::testing::TestParamInfo<uint32_t> &i) {
                           return std::string(LaneName(i.param & ~kSharedFileMemory)) +
                                  ((i.param & kSharedFileMemory) ? "_SharedFileMemory" : "");
                         });

// Which same-node path a registration takes, as the endpoint's description
// (the engine's LinkInfo::transports) says: private memory (malloc,
// MAP_PRIVATE of a file) goes over cross-memory attach, a shared file
// mapping (/dev/shm, memfd, MAP_SHARED of a file) is mapped directly by the
// peer -- found by the plugin from the mapping itself, no option.  Data moves
// correctly on each.
TEST_F(PluginTest, SameNodePathFollowsTheMemory) {
  adxl_plugin_context_t *a = Open(), *b = Open();
  ASSERT_TRUE(a && b);
  constexpr size_t kLen = 1u << 20;
  // A regular file, mapped shared and privately.
  char path[] = "/tmp/adxl-conformance-XXXXXX";
  const int file_fd = mkstemp(path);
  ASSERT_GE(file_fd, 0);
  unlink(path);
  ASSERT_EQ(ftruncate(file_fd, 2 * kLen), 0);
  void *file_shared = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_SHARED, file_fd, kLen);  // at offset kLen
  void *file_private = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE, file_fd, 0);
  ASSERT_NE(file_shared, MAP_FAILED);
  ASSERT_NE(file_private, MAP_FAILED);
  Buffer priv(kLen, "private"), shm(kLen, "shm"), memfd(kLen, "memfd");
  struct Case {
    const char *name;
    uint8_t *data;
    const char *want;  // in the description; nullptr: exactly "cma/memory"
  } cases[] = {{"malloc", priv.data(), nullptr},
               {"MAP_PRIVATE file", static_cast<uint8_t *>(file_private), nullptr},
               {"/dev/shm", shm.data(), "mapped/shm"},
               {"memfd", memfd.data(), "mapped/memfd"},
               {"MAP_SHARED file", static_cast<uint8_t *>(file_shared), "mapped/file"}};
  Buffer la(kLen, "private");
  adxl_plugin_mem_t *ma = Reg(a, la);
  const std::string addr_b = Address(b);
  int seed = 1;
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_NE(c.data, nullptr);
    adxl_plugin_mem_t *mb = RegRange(b, c.data, kLen);
    ASSERT_NE(mb, nullptr);
    adxl_plugin_ep_t *ep = nullptr;
    const int rc = ops_->ep_create(a, addr_b.data(), addr_b.size(), ADXL_PLUGIN_LANE_HCCS, &ep);
    if (rc == ADXL_PLUGIN_ERR_UNSUPPORTED) GTEST_SKIP() << "no HCCS lane here";
    ASSERT_EQ(rc, ADXL_PLUGIN_OK);
    adxl_plugin_rkey_t *rk = nullptr;
    const std::string key = Pack(b, mb);
    ASSERT_EQ(ops_->rkey_unpack(ep, key.data(), key.size(), &rk), ADXL_PLUGIN_OK);
    const std::string desc = Describe(ep);
    if (c.want == nullptr) {
      EXPECT_EQ(desc, "cma/memory");
    } else {
      EXPECT_NE(desc.find(c.want), std::string::npos) << desc;
    }
    // And the key itself says which path its region takes.
    char path[64];
    ASSERT_EQ(ops_->rkey_describe(rk, path, sizeof(path)), ADXL_PLUGIN_OK);
    EXPECT_STREQ(path, c.want == nullptr ? "cma" : c.want);
    // Odd offsets and sizes, both directions.
    FillPattern(la.data(), kLen, seed);
    FillPattern(c.data, kLen, seed + 1);
    std::vector<adxl_plugin_iov_t> v = {{ma, la.addr() + 3, rk, reinterpret_cast<uintptr_t>(c.data) + 4097, 77777},
                                        {ma, la.addr() + 200001, rk, reinterpret_cast<uintptr_t>(c.data) + 5, 4091}};
    ASSERT_EQ(Run(ep, ADXL_PLUGIN_PUT, v), ADXL_PLUGIN_OK);
    EXPECT_EQ(memcmp(c.data + 4097, la.data() + 3, 77777), 0);
    EXPECT_EQ(memcmp(c.data + 5, la.data() + 200001, 4091), 0);
    FillPattern(c.data, kLen, seed + 2);
    ASSERT_EQ(Run(ep, ADXL_PLUGIN_GET, v), ADXL_PLUGIN_OK);
    EXPECT_EQ(memcmp(la.data() + 3, c.data + 4097, 77777), 0);
    EXPECT_EQ(memcmp(la.data() + 200001, c.data + 5, 4091), 0);
    seed += 3;
    ops_->rkey_destroy(rk);
    ops_->ep_destroy(ep, 0);
  }
  TearDown();  // deregisters before the file mappings go
  munmap(file_shared, kLen);
  munmap(file_private, kLen);
  close(file_fd);
}

// One same-node batch over a region the peer shared (mapped directly) and
// a private one (cma), its operations interleaved: every byte lands, both
// ways.  The UCX plugin binds the two keys to different movers and posts
// the batch to each in turn; a batch that reached only one of them, or
// only the first run of operations, fails here.
TEST_F(PluginTest, OneSameNodeBatchOverASharedAndAPrivateRegion) {
  adxl_plugin_context_t *a = Open(), *b = Open();
  ASSERT_TRUE(a && b);
  constexpr size_t kLen = 1u << 20;
  Buffer la(kLen, "private"), priv(kLen, "private"), shm(kLen, "shm");
  ASSERT_TRUE(la.data() && priv.data() && shm.data());
  adxl_plugin_mem_t *ma = Reg(a, la), *mp = Reg(b, priv), *ms = Reg(b, shm);
  ASSERT_TRUE(ma && mp && ms);
  const std::string addr_b = Address(b);
  adxl_plugin_ep_t *ep = nullptr;
  const int rc = ops_->ep_create(a, addr_b.data(), addr_b.size(), ADXL_PLUGIN_LANE_HCCS, &ep);
  if (rc == ADXL_PLUGIN_ERR_UNSUPPORTED) GTEST_SKIP() << "no HCCS lane here";
  ASSERT_EQ(rc, ADXL_PLUGIN_OK);
  adxl_plugin_rkey_t *kp = nullptr, *ks = nullptr;
  const std::string key_p = Pack(b, mp), key_s = Pack(b, ms);
  ASSERT_EQ(ops_->rkey_unpack(ep, key_p.data(), key_p.size(), &kp), ADXL_PLUGIN_OK);
  ASSERT_EQ(ops_->rkey_unpack(ep, key_s.data(), key_s.size(), &ks), ADXL_PLUGIN_OK);
  char path_p[64], path_s[64];
  ASSERT_EQ(ops_->rkey_describe(kp, path_p, sizeof(path_p)), ADXL_PLUGIN_OK);
  ASSERT_EQ(ops_->rkey_describe(ks, path_s, sizeof(path_s)), ADXL_PLUGIN_OK);
  EXPECT_STREQ(path_p, "cma");
  EXPECT_STREQ(path_s, "mapped/shm");
  const uint64_t p0 = reinterpret_cast<uintptr_t>(priv.data()), s0 = reinterpret_cast<uintptr_t>(shm.data());
  // private, shared, private, shared: the runs alternate.
  const std::vector<adxl_plugin_iov_t> v = {{ma, la.addr() + 1, kp, p0 + 4099, 70001},
                                            {ma, la.addr() + 100003, ks, s0 + 7, 65537},
                                            {ma, la.addr() + 300007, kp, p0 + 500001, 4093},
                                            {ma, la.addr() + 400009, ks, s0 + 600011, 131071}};
  FillPattern(la.data(), kLen, 31);
  FillPattern(priv.data(), kLen, 32);
  FillPattern(shm.data(), kLen, 33);
  ASSERT_EQ(Run(ep, ADXL_PLUGIN_PUT, v), ADXL_PLUGIN_OK);
  for (const adxl_plugin_iov_t &x : v) {
    const uint8_t *remote = reinterpret_cast<const uint8_t *>(static_cast<uintptr_t>(x.remote_addr));
    EXPECT_EQ(memcmp(remote, reinterpret_cast<const uint8_t *>(static_cast<uintptr_t>(x.local_addr)), x.length), 0)
        << "PUT to " << (x.remote == ks ? "the shared" : "the private") << " region";
  }
  FillPattern(priv.data(), kLen, 34);
  FillPattern(shm.data(), kLen, 35);
  ASSERT_EQ(Run(ep, ADXL_PLUGIN_GET, v), ADXL_PLUGIN_OK);
  for (const adxl_plugin_iov_t &x : v) {
    const uint8_t *remote = reinterpret_cast<const uint8_t *>(static_cast<uintptr_t>(x.remote_addr));
    EXPECT_EQ(memcmp(reinterpret_cast<const uint8_t *>(static_cast<uintptr_t>(x.local_addr)), remote, x.length), 0)
        << "GET from " << (x.remote == ks ? "the shared" : "the private") << " region";
  }
  ops_->rkey_destroy(kp);
  ops_->rkey_destroy(ks);
  ops_->ep_destroy(ep, 0);
  TearDown();  // deregisters before the buffers go
}

// At least one lane must reach a peer process on this node.
TEST_F(PluginTest, SomeLaneReachesAPeerProcess) {
  Child child;
  ASSERT_TRUE(child.ok());
  adxl_plugin_context_t *a = Open();
  ASSERT_NE(a, nullptr);
  adxl_plugin_ep_t *ep = nullptr;
  ASSERT_EQ(ops_->ep_create(a, child.address().data(), child.address().size(),
                            ADXL_PLUGIN_LANE_HCCS | ADXL_PLUGIN_LANE_RDMA, &ep),
            ADXL_PLUGIN_OK);
  const uint32_t lane = ops_->ep_lane(ep);
  EXPECT_TRUE(lane == ADXL_PLUGIN_LANE_HCCS || lane == ADXL_PLUGIN_LANE_RDMA) << "one lane bit, got " << lane;
  ops_->ep_destroy(ep, 0);
}

}  // namespace

int main(int argc, char **argv) {
  int child_fd = -1;
  setenv("ADXL_LOG_LEVEL", "off", 0);  // unless the user chose a level
  if (const char *e = getenv("ADXL_PLUGIN_UNDER_TEST")) g_plugin_path = e;
  std::vector<char *> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string kPlugin = "--plugin=", kChild = "--conformance-child=", kParams = "--child-params=";
    if (a.compare(0, kPlugin.size(), kPlugin) == 0) {
      g_plugin_path = a.substr(kPlugin.size());
    } else if (a.compare(0, kParams.size(), kParams) == 0) {
      g_child_params = a.substr(kParams.size());
    } else if (a.compare(0, kChild.size(), kChild) == 0) {
      child_fd = std::stoi(a.substr(kChild.size()));
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (child_fd >= 0) return ChildMain(child_fd);
  signal(SIGPIPE, SIG_IGN);
  int n = static_cast<int>(rest.size());
  rest.push_back(nullptr);  // argv[argc] is null: GoogleTest's flag parser moves it too
  ::testing::InitGoogleTest(&n, rest.data());
  if (g_plugin_path.empty()) {
    fprintf(stderr, "usage: %s --plugin=PATH (or ADXL_PLUGIN_UNDER_TEST=PATH)\n", argv[0]);
    return 2;
  }
  return RUN_ALL_TESTS();
}
