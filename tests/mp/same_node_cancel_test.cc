// adxl::Endpoint::Cancel (src/transport/transport.h) while a post on the
// same-node lane is still copying its batch, against a real peer process
// (adxl_transport_peer) and the UCX plugin's HCCS lane: cma for private
// memory, the direct mapping for a memfd.
//
// The HCCS lane moves a whole batch inside post (a TransferAsync posts its
// plan at once), and Cancel -- the TIMEOUT fence, Disconnect, Finalize --
// waits for the calls in flight on the endpoint before it destroys it.
// Cancel must return promptly (the plugin's ep_cancel stops the copy at its
// next piece), and no byte of that post may land after Cancel returned: a
// sentinel written over the destination right after it stays.  Before
// ep_cancel, Cancel waited out the copy up to kInUseWait (2 s) and then
// returned with the copy still running, which later overwrote the sentinel.
//
// A second test checks that the copy stops at post_by's deadline as well.
//
// The copy is slowed by the test build's plugin (ADXL_UCX_FAULTS_PLUGIN_PATH,
// "test_hccs_piece_delay_us", plugin/ucx/core/fault_injection.h): 100 ms
// before each 1 MiB piece, so 128 MiB take 12.8 s on one copy thread and
// 3.2 s on four, far past kInUseWait either way, whatever the machine.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pattern.h"
#include "time_scale.h"
#include "timeout_checks.h"
#include "transport/plugin_loader.h"
#include "transport/transport.h"

namespace adxl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kLen = 128u << 20;
constexpr size_t kOp = 1u << 20;
constexpr unsigned kPieceDelayUs = 100 * 1000;
// The copy is under way when Cancel comes, half-way through the delay of
// its fourth piece (not at a piece's end, when it would be noticed at once).
constexpr auto kCopyStarted = std::chrono::milliseconds(350);
// Cancel returns within this (scaled): one piece's delay and copy, and the
// plugin's ep_destroy, on a loaded 2-core machine; far less than the copy.
constexpr double kPromptMs = 500;
constexpr uint8_t kSentinel = 0x5A;

std::string Unhex(const std::string &h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

// The peer: adxl_transport_peer with kLen bytes of `memory`; killed at the end.
class Peer {
 public:
  explicit Peer(const char *memory) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      const std::string len = std::to_string(kLen);
      execl(ADXL_TRANSPORT_PEER_PATH, "adxl_transport_peer", ADXL_UCX_PLUGIN_PATH, len.c_str(), memory,
            static_cast<char *>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    FILE *f = fdopen(out[0], "r");
    char line[16384];
    if (f == nullptr || fgets(line, sizeof(line), f) == nullptr) {
      if (f != nullptr) fclose(f);
      return;
    }
    fclose(f);
    std::istringstream words(line);
    std::string a, k;
    words >> a >> k >> buffer_;
    if (a == "err") return;
    address_ = Unhex(a);
    key_ = Unhex(k);
  }
  ~Peer() {
    if (to_ >= 0) close(to_);  // end of stdin: the peer exits
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return buffer_ != 0; }
  pid_t pid() const { return pid_; }
  const std::string &address() const { return address_; }
  const std::string &key() const { return key_; }
  uint64_t buffer() const { return buffer_; }

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  std::string address_, key_;
  uint64_t buffer_ = 0;
};

struct Case {
  const char *name;
  const char *memory;      // the peer's: "private" (cma) or "memfd" (the direct mapping)
  const char *path;        // what rkey_describe says of it
  int op;                  // ADXL_PLUGIN_PUT or ADXL_PLUGIN_GET
  const char *threads;     // hccs_copy_threads: 1 (the posting thread alone) or 4 (split)
};
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

// The link of a test: the peer, this process's context (the test build's
// plugin, the copy slowed), kLen bytes of local memory (pattern 7) and an
// HCCS endpoint and key to the peer's kLen bytes (zeros), and `iov`, the
// whole buffer as operations of kOp bytes.
class SameNodeCancel : public ::testing::TestWithParam<Case> {
 protected:
  // Records a failure or a skip when it cannot (the test then returns).
  void Link() {
    const Case &c = GetParam();
    peer_ = std::make_unique<Peer>(c.memory);
    ASSERT_TRUE(peer_->ok()) << "the peer process did not start";
    std::string why;
    auto lib = PluginLibrary::LoadFile(ADXL_UCX_FAULTS_PLUGIN_PATH, ADXL_PLUGIN_ABI_VERSION, &why);
    ASSERT_NE(lib, nullptr) << why;
    t_ = Transport::Open(std::move(lib),
                         {{"test_hccs_piece_delay_us", std::to_string(kPieceDelayUs)}, {"hccs_copy_threads", c.threads}},
                         &why);
    ASSERT_NE(t_, nullptr) << why;
    void *p = nullptr;
    ASSERT_EQ(posix_memalign(&p, 4096, kLen), 0);
    local_.reset(static_cast<uint8_t *>(p));
    adxl_test::FillPattern(local_.get(), kLen, 7);
    ASSERT_EQ(TransportMem::Register(t_, local_.get(), kLen, ADXL_PLUGIN_MEM_HOST, &mem_), ADXL_PLUGIN_OK);
    const int created = Endpoint::Create(t_, peer_->address(), ADXL_PLUGIN_LANE_HCCS, &ep_);
    if (created == ADXL_PLUGIN_ERR_UNSUPPORTED) GTEST_SKIP() << "no HCCS lane to the peer here";
    ASSERT_EQ(created, ADXL_PLUGIN_OK);
    ASSERT_EQ(RemoteKey::Unpack(ep_, peer_->key(), &rk_), ADXL_PLUGIN_OK);
    ASSERT_EQ(rk_->Describe(), c.path);
    for (size_t off = 0; off < kLen; off += kOp) {
      iov_.push_back(
          {mem_->get(), reinterpret_cast<uintptr_t>(local_.get()) + off, rk_->get(), peer_->buffer() + off, kOp});
    }
  }
  // The destination of the test's op: the peer's buffer (PUT, read into
  // scratch_) or the local one (GET).
  const uint8_t *Destination() {
    if (GetParam().op != ADXL_PLUGIN_PUT) return local_.get();
    scratch_.resize(kLen);
    EXPECT_TRUE(adxl_test::AccessProcessMemory(peer_->pid(), peer_->buffer(), scratch_.data(), kLen, false));
    return scratch_.data();
  }
  // Overwrites the destination with kSentinel.
  void FillDestination() {
    if (GetParam().op != ADXL_PLUGIN_PUT) {
      memset(local_.get(), kSentinel, kLen);
      return;
    }
    std::vector<uint8_t> sentinel(kLen, kSentinel);
    EXPECT_TRUE(adxl_test::AccessProcessMemory(peer_->pid(), peer_->buffer(), sentinel.data(), kLen, true));
  }

  std::unique_ptr<Peer> peer_;
  std::shared_ptr<Transport> t_;
  std::unique_ptr<uint8_t, decltype(&free)> local_{nullptr, free};
  std::unique_ptr<TransportMem> mem_;
  std::shared_ptr<Endpoint> ep_;
  std::unique_ptr<RemoteKey> rk_;
  std::vector<adxl_plugin_iov_t> iov_;
  std::vector<uint8_t> scratch_;
};

// Offset of the first byte of [p, p + len) that is not kSentinel; len if none.
size_t FirstChange(const uint8_t *p, size_t len) {
  for (size_t i = 0; i < len; ++i) {
    if (p[i] != kSentinel) return i;
  }
  return len;
}

TEST_P(SameNodeCancel, CancelStopsTheCopyOfAPostInFlightAndNothingLandsAfterIt) {
  const Case &c = GetParam();
  Link();
  if (HasFatalFailure() || IsSkipped()) return;
  // The post, on a thread of its own: it returns when its copy ends.
  auto posting = std::async(std::launch::async, [&] {
    std::unique_ptr<Batch> batch;
    const int rc = ep_->Post(c.op, iov_.data(), iov_.size(), &batch);
    return rc == ADXL_PLUGIN_OK ? batch->Test() : rc;
  });
  std::this_thread::sleep_for(kCopyStarted);
  ASSERT_EQ(posting.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the post ended before the cancel: the copy was not slowed (is this the test build's plugin?)";

  const auto t0 = Clock::now();
  ep_->Cancel();
  const double took = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  // The destination, overwritten with the sentinel at once: a copy still
  // running would write over it.
  FillDestination();
  EXPECT_LT(took, adxl_test::ScaledMs(kPromptMs)) << "ms: Cancel waited for the copy of the post in flight";
  // Cancel returns once the post's plugin call has; the posting thread
  // still has its own return to make (the batch's wrapper, Test), which a
  // loaded machine may not schedule at once: a bound, not "already".  The
  // copy stopping before Cancel returned is what the sentinel shows below.
  const bool returned =
      posting.wait_for(std::chrono::milliseconds(static_cast<int64_t>(adxl_test::ScaledMs(kPromptMs)))) ==
      std::future_status::ready;
  EXPECT_TRUE(returned) << "the post went on copying after Cancel returned";

  // Nothing lands afterwards: not while the test waits for stragglers, nor
  // by the time the post has returned (at once, or when its copy ended).
  std::this_thread::sleep_for(std::chrono::milliseconds(adxl_test::kStragglerWaitMs));
  size_t at = FirstChange(Destination(), kLen);
  EXPECT_EQ(at, kLen) << "bytes of the cancelled post landed after Cancel returned, first at offset " << at;
  const int status = posting.get();
  at = FirstChange(Destination(), kLen);
  EXPECT_EQ(at, kLen) << "bytes of the cancelled post landed after Cancel returned, first at offset " << at;
  EXPECT_EQ(status, ADXL_PLUGIN_ERR_CANCELED) << "the stopped batch's status";
  printf("%s: Cancel took %.1f ms\n", c.name, took);
}

// post_by's deadline (adxl_plugin.h): the same-node copy checks it before
// each piece and stops there, the batch ending ERR_IO; what follows is not
// copied.  Before, the copy ignored it and ran to its end (OK, 12.8 s on
// one thread here).  A piece started just before the deadline still ends
// after it (about 0.1 ms for 1 MiB; with the test's delay, up to a delay).
TEST_P(SameNodeCancel, PostByStopsTheCopyAtItsDeadline) {
  const Case &c = GetParam();
  Link();
  if (HasFatalFailure() || IsSkipped()) return;
  FillDestination();
  constexpr auto kDeadlineIn = std::chrono::milliseconds(250);
  const auto t0 = Clock::now();
  std::unique_ptr<Batch> batch;
  ASSERT_EQ(ep_->Post(c.op, iov_.data(), iov_.size(), t0 + kDeadlineIn, &batch), ADXL_PLUGIN_OK);
  const double took = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_EQ(batch->Test(), ADXL_PLUGIN_ERR_IO) << "the batch cut at its deadline";
  // One piece's delay past the deadline at most, and scheduling slack.
  EXPECT_LT(took, kDeadlineIn.count() + kPieceDelayUs / 1000 + adxl_test::ScaledMs(kPromptMs))
      << "ms: the copy ran on past its deadline";
  // The pieces after the deadline were not copied: the end of the
  // destination still holds the sentinel.
  const size_t tail = kLen / 2;
  const size_t at = FirstChange(Destination() + kLen - tail, tail);
  EXPECT_EQ(at, tail) << "bytes of the second half landed, past the deadline (offset " << kLen - tail + at << ")";
  printf("%s: post_by returned %.1f ms after its start, deadline %lld ms\n", c.name, took,
         static_cast<long long>(kDeadlineIn.count()));
}

INSTANTIATE_TEST_SUITE_P(
    Lanes, SameNodeCancel,
    ::testing::Values(Case{"cma_put_1thread", "private", "cma", ADXL_PLUGIN_PUT, "1"},
                      Case{"cma_get_1thread", "private", "cma", ADXL_PLUGIN_GET, "1"},
                      Case{"cma_put_4threads", "private", "cma", ADXL_PLUGIN_PUT, "4"},
                      Case{"cma_get_4threads", "private", "cma", ADXL_PLUGIN_GET, "4"},
                      Case{"mapped_put", "memfd", "mapped/memfd", ADXL_PLUGIN_PUT, "1"},
                      Case{"mapped_get", "memfd", "mapped/memfd", ADXL_PLUGIN_GET, "1"}),
    [](const ::testing::TestParamInfo<Case> &info) { return std::string(info.param.name); });

}  // namespace
}  // namespace adxl
