// One peer of the connect storm (storm.h): an engine in its own process.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"
#include "pattern.h"
#include "storm.h"

namespace storm {

bool ReadLine(int fd, std::string *buffer, std::string *line, int timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const size_t nl = buffer->find('\n');
    if (nl != std::string::npos) {
      *line = buffer->substr(0, nl);
      buffer->erase(0, nl + 1);
      return true;
    }
    int wait = -1;
    if (timeout_ms >= 0) {
      // A timeout of 0 still takes what is there already.
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      wait = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    pollfd p{fd, POLLIN, 0};
    const int n = poll(&p, 1, wait);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || (p.revents & POLLIN) == 0) return false;
    char buf[256];
    const ssize_t got = read(fd, buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buffer->append(buf, static_cast<size_t>(got));
  }
}

bool WriteLine(int fd, const std::string &line) {
  const std::string l = line + "\n";
  size_t off = 0;
  while (off < l.size()) {
    const ssize_t n = write(fd, l.data() + off, l.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

namespace {

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

std::string Fail(const char *stage, adxl::Status st) {
  return std::string("fail ") + stage + " " + std::to_string(st);
}

// READs the target's READ area into `local` and checks every byte.
std::string ReadAndVerify(adxl::AdxlEngine &engine, const PeerArgs &a, uint8_t *local) {
  memset(local, 0, kReadBytes);
  const adxl::Status st = engine.TransferSync(
      a.target.c_str(), adxl::READ, {{reinterpret_cast<uintptr_t>(local), a.region, kReadBytes}}, a.timeout_ms);
  if (st != adxl::SUCCESS) return Fail("read", st);
  for (size_t i = 0; i < kReadBytes; ++i) {
    if (local[i] != adxl_test::PatternByte(kReadSeed, i)) return "fail verify byte" + std::to_string(i);
  }
  return "ok";
}

}  // namespace

int RunPeer(const PeerArgs &a) {
  adxl::AdxlEngine engine;
  const std::map<adxl::AscendString, adxl::AscendString> opts = EngineOptions(a.rdma);
  std::string buffer, line;
  if (engine.Initialize(a.name.c_str(), opts) != adxl::SUCCESS) {
    WriteLine(a.fd, "fail init 0");
    return 1;
  }
  std::vector<uint8_t> local(kReadBytes + kWriteBytes);
  adxl::MemHandle h = nullptr;
  if (engine.RegisterMem({reinterpret_cast<uintptr_t>(local.data()), local.size()}, adxl::MEM_HOST, h) !=
      adxl::SUCCESS) {
    WriteLine(a.fd, "fail register 0");
    return 1;
  }
  if (!WriteLine(a.fd, "ready") || !ReadLine(a.fd, &buffer, &line, -1) || (line != "go" && line != "go stages")) {
    engine.Finalize();
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  std::string report;
  adxl::Status st = engine.Connect(a.target.c_str(), a.timeout_ms);
  const double connect_ms = MsSince(start);
  if (st == adxl::SUCCESS && line == "go stages") WriteLine(a.fd, "connected");
  if (st != adxl::SUCCESS) {
    report = Fail("connect", st);
  } else {
    // The link runs on the lane of the storm: a storm that fell back to the
    // other lane (or found no link) fails as "fail lane <what it got>".
    adxl::ext::LinkInfo info;
    const char *want = a.rdma ? "rdma" : "hccs";
    if (adxl::ext::GetLinkInfo(engine, a.target.c_str(), info) != adxl::SUCCESS) {
      report = "fail lane none";
    } else if (info.lane != want) {
      report = "fail lane " + info.lane;
    } else {
      report = ReadAndVerify(engine, a, local.data());
    }
  }
  if (report == "ok") {
    uint8_t *w = local.data() + kReadBytes;
    adxl_test::FillPattern(w, kWriteBytes, WriteSeed(a.index));
    const uint64_t slot = a.region + kReadBytes + static_cast<uint64_t>(a.index) * kWriteBytes;
    st = engine.TransferSync(a.target.c_str(), adxl::WRITE, {{reinterpret_cast<uintptr_t>(w), slot, kWriteBytes}},
                             a.timeout_ms);
    if (st != adxl::SUCCESS) report = Fail("write", st);
  }
  if (report == "ok") {
    report = "ok " + std::to_string(static_cast<long>(connect_ms)) + " " + std::to_string(static_cast<long>(MsSince(start)));
  }
  WriteLine(a.fd, report);
  if (report.rfind("ok", 0) != 0) {
    // A peer that failed leaves at once, as a real client would: its
    // engine finalizes while the target may still be wiring it up.
    engine.Finalize();
    return 0;
  }
  // Linked and idle until the driver asks for more or closes the socket.
  while (ReadLine(a.fd, &buffer, &line, -1)) {
    if (line == "verify") WriteLine(a.fd, ReadAndVerify(engine, a, local.data()));
  }
  engine.DeregisterMem(h);
  engine.Finalize();
  return 0;
}

}  // namespace storm
