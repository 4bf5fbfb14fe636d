// The API conformance suite (docs/contract.md §2–§9): one test per rule,
// named after the rule ("S6_4_..." checks rule 6.4 of docs/contract.md; the
// comment above each test restates the rule, docs/contract.md lists every
// test with its status), run against real peer processes and repeated on
// every lane.
//
// Public headers only: adxl/adxl_engine.h, and adxl/adxl_ext.h to check
// that a link runs on the lane under test.
//
// Timing bounds: every bound a test asserts on how long something took is
// written as a plain build on a loaded 2-core machine needs it and scaled by
// ScaledMs() (tests/support/time_scale.h, ADXL_TEST_TIME_SCALE, raised by
// scripts/sanitize.sh); a test whose defect shows as a delay makes that
// delay far larger than the scaled bound.
//
// Lanes (kLanes in conformance.cc):
//   hccs_cma     same node, plain posix_memalign memory: cross-memory
//                attach (batched process_vm_readv/writev)
//   hccs_mapped  same node, MallocMem memory with EnableUseFabricMem=1:
//                the initiator maps the target's memory (memcpy)
//   hccs_shared_file  same node, the target's memory a memfd MAP_SHARED
//                mapping of its own (no engine option): the plugin finds
//                the file from the mapping and the initiator maps it too
//   rdma_am      protocol_desc "roce:host": the network lane, active-message
//                rendezvous over TCP
//   rdma_rma     the network lane on UCP put/get (ADXL_UCX_RDMA_PROTOCOL=rma,
//                what it runs on RDMA hardware; RmaMover) over TCP; §6.4's
//                fence does not hold there and those tests skip
//                (Lane::timeout_fences).
#ifndef ADXL_TESTS_CONFORMANCE_CONFORMANCE_H_
#define ADXL_TESTS_CONFORMANCE_CONFORMANCE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <ostream>
#include <memory>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "mp_fixture.h"

namespace adxl_test {

struct Lane {
  const char *name;
  const char *lane;        // GetLinkInfo().lane of a link on this lane
  const char *transport;   // substring of GetLinkInfo().transports ("am:", "rma:" on the network lanes)
  std::vector<std::string> options;  // "key=value" for every engine, both sides
  std::vector<std::string> env;      // "NAME=value" for every process
  bool mapped_memory;      // peers register MallocMem memory
  // Transfers complete while the target process is stopped (the initiator
  // moves the bytes itself); otherwise the target's progress thread must run.
  bool one_sided;
  bool shared_file = false;  // the peer's buffer is a memfd MAP_SHARED mapping ("memfd" peer command)
  // A TIMEOUT fences the call's bytes (§6.4).  Not so for UCP put/get over
  // TCP (rdma_rma): UCX streams the data to the target, and bytes already
  // in the socket land when a stopped target resumes (docs/contract.md).
  bool timeout_fences = true;
  // A stopped target survives, once resumed, an initiator that finalized
  // (its UCP worker gone) while a transfer to it was in flight.  Not so for
  // UCP 1.13's emulated put/get over TCP (rdma_rma): the resumed target
  // aborts inside UCX (ucp_put_handler: "Fatal: unexpected error: Endpoint
  // timeout") answering a put whose initiator is gone (docs/contract.md
  // §3.3; seen in 3 of 4 runs of S3_3_FinalizeEndsOutstandingRequests...).
  bool target_survives_initiator_exit = true;
};

const std::vector<Lane> &AllLanes();
inline void PrintTo(const Lane &lane, std::ostream *os) { *os << lane.name; }

class Conformance : public ::testing::TestWithParam<Lane> {
 protected:
  using Options = std::map<adxl::AscendString, adxl::AscendString>;
  static constexpr size_t kRemoteSize = 4u << 20;
  static constexpr size_t kLocalSize = 4u << 20;
  static constexpr const char *kHeartbeatMs = "200";

  void SetUp() override;
  void TearDown() override;

  const Lane &lane() const { return GetParam(); }
  // The peer command that allocates a buffer of the lane's memory kind
  // ("alloc ", "malloc " or "memfd "), to be followed by the length.
  std::string AllocCommand() const {
    return lane().mapped_memory ? "malloc " : lane().shared_file ? "memfd " : "alloc ";
  }

  // The lane's engine options plus a short heartbeat and `extra`.
  Options LaneOptions(const Options &extra = {}) const;
  // "init" arguments for a peer process with the lane's options.
  std::string PeerInitArgs(const std::string &extra = "") const;

  // Initializes engine_ ("127.0.0.1", client only) and registers local_.
  void InitLocal(const Options &extra = {});

  // A peer process with the lane's environment and options, listening on a
  // free port, with a registered kRemoteSize buffer (index 0) filled with
  // pattern 1.  Its name and buffer address are returned through the
  // pointers.
  std::unique_ptr<PeerProcess> StartPeer(std::string *name, uintptr_t *buffer, const std::string &init_extra = "");

  // engine_.Connect to the peer; on SUCCESS also checks that the link runs
  // on the lane under test.
  adxl::Status Connect(int timeout_ms = 5000);
  void ExpectLane(adxl::AdxlEngine &engine, const std::string &remote);

  // TransferSync to the peer.  Every TIMEOUT it returns is checked to come
  // on time (docs/contract.md §6.4: within the deadline plus 50 ms, plus the
  // scheduling slack of a loaded 2-core machine, and not before the deadline
  // passed), on every lane and in every test: TimeoutCameOnTime in
  // timeout_checks.h.
  adxl::Status Sync(adxl::TransferOp op, const std::vector<adxl::TransferOpDesc> &d, int32_t timeout_ms = 5000) {
    const auto t0 = std::chrono::steady_clock::now();
    const adxl::Status st = engine_.TransferSync(peer_name_.c_str(), op, d, timeout_ms);
    const double ms = MsSince(t0);
    if (st == adxl::TIMEOUT) {
      EXPECT_TRUE(TimeoutCameOnTime(ms, timeout_ms)) << "lane " << lane().name;
    }
    return st;
  }
  // Polls an async request until it leaves WAITING (or 10 s, scaled, pass); *rc gets
  // the last GetTransferStatus result.
  adxl::TransferStatus WaitFor(adxl::TransferReq req, adxl::Status *rc = nullptr);

  uint64_t RemoteHash(size_t off, size_t len, size_t index = 0);
  // Hash of pattern `seed` over [off, off+len) of a buffer.
  static uint64_t PatternHash(uint64_t seed, size_t off, size_t len);
  // A block of `len` bytes of local memory the lane would use (MallocMem on
  // hccs_mapped, aligned heap otherwise); freed with the fixture.
  uintptr_t NewLocalMemory(size_t len);

  AlignedBuffer local_{kLocalSize};
  adxl::AdxlEngine engine_;
  adxl::MemHandle local_handle_ = nullptr;
  std::unique_ptr<PeerProcess> peer_;
  std::string peer_name_;
  uintptr_t remote_ = 0;

 private:
  std::vector<std::string> set_env_;
  std::vector<void *> malloc_mem_;
  std::vector<std::unique_ptr<AlignedBuffer>> heap_;
};

}  // namespace adxl_test

#endif  // ADXL_TESTS_CONFORMANCE_CONFORMANCE_H_
