// VerifiedStream: a stream of verified transfers between two engine
// processes, run on a thread of its own while the test changes the network
// under it (takes paths down and up).  Each round fills the source's buffer
// 0 with a new pattern, moves [0, len) as one TransferSync (WRITE from the
// initiator to the target, then READ back the other way, alternating) and
// compares both sides' hashes of the range.  It tallies per phase (a number
// the test sets as it goes): batches, bytes and time on the wire; and over
// the whole stream: transfers that failed (an error answer) and transfers
// that succeeded with the wrong bytes.
//
// The stream owns both peers while it runs: the test must not send them
// commands until Stop() returned.  It gives up after kMaxFailures failed
// transfers (no point in churning on a dead link), and at once on a missing
// answer (the peer hung or died; its late answer would be read as the
// answer to the next command).
#ifndef ADXL_TESTS_SUPPORT_VERIFIED_STREAM_H_
#define ADXL_TESTS_SUPPORT_VERIFIED_STREAM_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "peer_process.h"

namespace adxl_test {

class VerifiedStream {
 public:
  // What the stream moved in one phase: only batches that began and ended
  // in it count.
  struct Phase {
    size_t batches = 0;
    uint64_t bytes = 0;
    double wire_ms = 0;  // the TransferSync calls' time
    double MBps() const { return wire_ms > 0 ? bytes / wire_ms / 1000.0 : 0; }
  };
  struct Tally {
    size_t ok = 0, failed = 0, corrupted = 0;
    double longest_ms = 0;  // the longest TransferSync, successful or not
    std::vector<Phase> phases;
    std::vector<std::string> problems;  // the first few failures and corruptions, in words
  };
  // The command that moves [0, len): `write` true for WRITE, false for READ.
  using OpCommand = std::function<std::string(bool write)>;
  static constexpr size_t kMaxFailures = 5;
  static constexpr size_t kMaxProblemsKept = 8;

  // `initiator` runs the transfers against `target`; each answer is awaited
  // for up to `answer_wait_ms` (the transfer's deadline and then some).
  VerifiedStream(PeerProcess &initiator, PeerProcess &target, size_t len, OpCommand op, int answer_wait_ms, int phases)
      : initiator_(initiator), target_(target), len_(len), op_(std::move(op)), answer_wait_ms_(answer_wait_ms) {
    tally_.phases.resize(static_cast<size_t>(phases));
  }
  ~VerifiedStream() { Stop(); }
  VerifiedStream(const VerifiedStream &) = delete;
  VerifiedStream &operator=(const VerifiedStream &) = delete;

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  // Ends the stream after the round in progress; its tally.
  const Tally &Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    return tally_;
  }

  void SetPhase(int phase) { phase_.store(phase); }
  // Transfers that completed verified so far.
  size_t Verified() const { return verified_.load(); }
  // Whether a TransferSync is under way now (for a cut that must hit one).
  bool InTransfer() const { return in_transfer_.load(); }
  // Whether the stream gave up (too many failures, or a peer not answering).
  bool GaveUp() const { return gave_up_.load(); }

 private:
  void Run() {
    const std::string hash = "hash 0 0 " + std::to_string(len_);
    uint64_t seed = 1000;
    for (bool write = true; !stop_.load(); write = !write, ++seed) {
      const char *what = write ? "WRITE" : "READ";
      PeerProcess &source = write ? initiator_ : target_;
      PeerProcess &sink = write ? target_ : initiator_;
      if (source.Command("fill 0 " + std::to_string(seed)) != "ok") {
        GiveUp(std::string("filling the ") + what + " source failed");
        return;
      }
      const int phase = phase_.load();
      const auto t0 = std::chrono::steady_clock::now();
      in_transfer_.store(true);
      const std::string answer = initiator_.Command(op_(write), answer_wait_ms_);
      in_transfer_.store(false);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (ms > tally_.longest_ms) tally_.longest_ms = ms;
      const std::string where = std::string(what) + " " + std::to_string(tally_.ok + tally_.failed + 1) + " (phase " +
                                std::to_string(phase) + ", " + std::to_string(ms) + " ms)";
      if (answer != "ok") {
        ++tally_.failed;
        Note(where + ": '" + (answer.empty() ? "no answer" : answer) + "'");
        if (answer.empty()) {
          GiveUp("the initiator did not answer; stream stopped");
          return;
        }
        if (tally_.failed >= kMaxFailures) {
          GiveUp("stream stopped after " + std::to_string(kMaxFailures) + " failed transfers");
          return;
        }
        continue;
      }
      ++tally_.ok;
      const std::vector<std::string> want = source.Ok(hash), got = sink.Ok(hash);
      if (want.empty() || got.empty()) {
        GiveUp(where + ": succeeded, then the " + (want.empty() ? "source" : "sink") +
               " did not answer its hash (died?); stream stopped");
        return;
      }
      if (got != want) {
        ++tally_.corrupted;
        Note(where + ": succeeded, but the bytes arrived corrupted");
        continue;
      }
      verified_.fetch_add(1);
      if (phase_.load() == phase && phase >= 0 && static_cast<size_t>(phase) < tally_.phases.size()) {
        Phase &p = tally_.phases[static_cast<size_t>(phase)];
        ++p.batches;
        p.bytes += len_;
        p.wire_ms += ms;
      }
    }
  }
  void Note(const std::string &problem) {
    if (tally_.problems.size() < kMaxProblemsKept) tally_.problems.push_back(problem);
  }
  void GiveUp(const std::string &why) {
    Note(why);
    gave_up_.store(true);
  }

  PeerProcess &initiator_, &target_;
  const size_t len_;
  const OpCommand op_;
  const int answer_wait_ms_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, in_transfer_{false}, gave_up_{false};
  std::atomic<int> phase_{0};
  std::atomic<size_t> verified_{0};
  Tally tally_;  // written by the stream's thread only; read after Stop() joined it
};

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_VERIFIED_STREAM_H_
