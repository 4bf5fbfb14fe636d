// The initiator's session: sets both sides up over the side channel, then
// measures every row -- the engine and the ucp, tcp, cma and memcpy
// baselines on the same buffers and blocks, a bandwidth group's rows step by
// step in turn -- with the optional verify pass around each step.
#ifndef ADXL_TOOLS_BENCH_SESSION_H_
#define ADXL_TOOLS_BENCH_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "buffer.h"
#include "cma_baseline.h"
#include "directions.h"
#include "engine_runner.h"
#include "kv_layout.h"
#include "lane.h"
#include "measurement.h"
#include "options.h"
#include "peer_baseline.h"
#include "progress.h"
#include "report.h"
#include "side_channel.h"
#include "tcp_baseline.h"
#include "tcp_limit.h"
#include "ucp_baseline.h"

namespace bench {

// A failure that ends the whole run (set-up, side channel, lost target).
// Failures of single transfers are not Fatal: they are counted in the row.
struct Fatal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void Check(bool ok, const std::string &why) {
  if (!ok) throw Fatal(why);
}

inline std::string Join(const std::vector<std::string> &items, const char *sep) {
  std::string out;
  for (const std::string &s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// Pattern seeds of the verify pass: the WRITE source lives here, the READ
// source on the target.
constexpr uint64_t kWriteSeed = 1;
constexpr uint64_t kReadSeed = 2;

// Where a step's bytes land, for the verify pass.
struct Destination {
  bool remote = false;                // the target's buffer ...
  bool device = false;                // ... its device buffer
  const PageBuffer *local = nullptr;  // else this local buffer
};

// Engine rows get their ratios to the baselines of the same group (none to
// a baseline that failed: its row has no bandwidth).
void FillRatios(std::vector<Row> *group);

// The rows of --workload kv: the engine on the model's plan, the engine on
// its uniform reference (BuildUniformPlan), the ucp and tcp baselines, and
// the cma baseline (the kernel's cross-memory copy, no engine) on the plan
// and on the uniform reference.
// kNixl, kNixlPoll, kMooncake: the peer rows on the plan (peer_baseline.h).
enum class KvKind { kEngine, kUniform, kUcp, kTcp, kCma, kCmaUniform, kNixl, kNixlPoll, kMooncake };
using KvKeyDescs = std::vector<std::vector<adxl::TransferOpDesc>>;  // one key: its calls

class Session {
 public:
  // shared_engine: an engine started by another Session of this process
  // (--peers: one engine, a link to each target); nullptr: start one.
  explicit Session(const Options &o, adxl::AdxlEngine *shared_engine = nullptr)
      : o_(o), engine_(shared_engine) {}
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  void SetUp(const std::function<bool()> &keep_trying);
  // Appends rows as they are measured, so that a run that ends with Fatal
  // still reports what it measured.
  void RunAll(std::vector<Row> *rows);
  RunInfo Info() const;
  // The run header's "memory:" line.
  std::string MemoryDescription() const;
  // Orderly end: closes the baselines' endpoint and stream and the engine
  // link, then releases the target.
  void Finish();
  // The engine's own counters of the link, read by Finish (EngineRunner::
  // EngineCounters); "" before.
  const std::string &EngineCounters() const { return engine_counters_; }
  adxl::AdxlEngine *engine() const { return engine_; }
  // After a group with a failed engine step: a fresh link (ADXL semantics).
  void ResetLinkAfterFailure(const std::vector<Row> &group);

  // --workload kv, this target's part of each row (kv_session.cc);
  // kv_rows.cc drives one Session, or several at once (--peers), through
  // them.  KvPrepare: the direction's sources, descriptors and expected
  // hashes; KvPoison / KvCheck: the verify pass around a step (no-ops
  // without --verify; KvCheck true then).
  bool KvHas(KvKind k) const;
  void KvPrepare(const Direction &d);
  void KvPoison(const Direction &d, KvKind k);
  StepResult KvStep(const Direction &d, KvKind k, Mode m);
  bool KvCheck(const Direction &d, KvKind k);
  const KvPlan &KvPlanOf(KvKind k) const;
  Row KvRow(const std::string &benchmark, const Direction &d, KvKind k) const;
  void AppendKvInfo(RunInfo *info) const;
  // CPU seconds so far of this process and the target's (same host; else
  // this process only): the cpu/GB column (peer_session.cc).
  double BenchCpuSeconds() const;

 private:
  void Hello();
  void StartEngine();
  void StartUcp();
  void StartTcp();
  // The peer rows (peer_session.cc): drivers started once, turns per group.
  void StartPeers();
  // The peer driver of a kv row (nullptr: none).
  PeerDriver *KvPeer(KvKind k) const;

  void RunBandwidth(const Direction &d, Progress &progress, std::vector<Row> *rows);
  void RunLatency(const Direction &d, Progress &progress, std::vector<Row> *rows);
  void EndGroup(std::vector<Row> *group, std::vector<Row> *rows);
  Row NewRow(const std::string &benchmark, const char *pattern, const Direction &d, size_t block, size_t batch,
             int threads) const;
  // One row of a bandwidth group: what it reports, where its bytes land and
  // what they hash to there (the verify pass), and one step of it.
  struct Turn {
    Row row;
    Destination dest;
    uint64_t expected = 0;
    std::function<StepResult()> step;
    // Set for rows that check their own bytes (the peers): dest and
    // expected are then unused.
    std::function<bool()> check = nullptr;
  };
  // Measures the rows of a group step by step in turn (RunBandwidth).
  void RunInTurn(const BlockBatch &b, std::vector<Turn> *turns);
  // The peer rows of a bandwidth group (peer_session.cc).
  void AddPeerTurns(const BlockBatch &b, const Direction &d, std::vector<Turn> *turns);
  // The tcp limit's variant rows (tcp_limit.h), and after the group is
  // measured its `tcp` row: the best of them and tcp_1stream (peer_session.cc).
  void AddTcpLimitTurns(const BlockBatch &b, const Direction &d, const Destination &dest, uint64_t expected,
                        std::vector<Turn> *turns);
  static void AddTcpLimitRow(std::vector<Row> *group);

  StepResult RunKvEngineStep(adxl::TransferOp op, const std::vector<KvKeyDescs> &keys, Mode mode);
  // What the destination pool hashes to after a correct step of `plan`:
  // poison everywhere but in the plan's destination segments, which hold the
  // source pattern's bytes from the source segments.
  uint64_t KvExpectedHash(const Direction &d, const KvPlan &plan);

  // Verification: sources hold known patterns, destinations are poisoned
  // before each step and hashed after it.
  void PrepareSources(const Direction &d);
  uint64_t SourceHash(const Direction &d, size_t len);
  uint64_t SourceHashOf(const PageBuffer &src, size_t len);
  void PoisonDestination(const Destination &dest, size_t len);
  uint64_t DestinationHash(const Destination &dest, size_t len);
  // The initiator's engine buffer of a direction, the memcpy baseline's
  // stand-in for the target's, and the target's address.
  const PageBuffer &Local(const Direction &d) const {
    return d.initiator_memory == adxl::MEM_DEVICE ? device_ : buffer_;
  }
  const PageBuffer &Scratch(const Direction &d) const {
    return d.target_memory == adxl::MEM_DEVICE ? device_scratch_ : scratch_;
  }
  uint64_t RemoteAddr(const Direction &d) const {
    return d.target_memory == adxl::MEM_DEVICE ? remote_device_addr_ : remote_addr_;
  }
  Destination RemoteSideDestination(const Direction &d) const {
    return d.op == adxl::WRITE ? Destination{true, d.target_memory == adxl::MEM_DEVICE, nullptr}
                               : Destination{false, false, &Local(d)};
  }
  Destination MemcpyDestination(const Direction &d) const {
    return Destination{false, false, d.op == adxl::WRITE ? &Scratch(d) : &Local(d)};
  }
  const PageBuffer &MemcpySource(const Direction &d) const { return d.op == adxl::WRITE ? Local(d) : Scratch(d); }
  // Whether a direction of the run has device memory on this side / the target.
  bool DeviceHere() const;
  bool DeviceThere() const;
  // A verify-pass command for the target's buffer (host or device).
  static Message TargetCommand(const char *verb, size_t len, bool device);

  Message Call(const Message &request);

  const Options &o_;
  SideChannel ch_;
  TlsChoice tls_;
  std::string target_tls_;
  std::string local_engine_;
  std::string target_engine_;
  uint64_t remote_addr_ = 0;
  uint64_t remote_device_addr_ = 0;  // the target's device buffer (device directions)
  std::string ucp_worker_address_;
  std::string ucp_rkey_;
  std::string transport_;     // ucp endpoint lanes
  std::string engine_counters_;
  std::string engine_link_;   // what the engine says its link runs on
  std::string rma_note_ = "n/a (ucp baseline off)";
  uint16_t tcp_port_ = 0;     // the target's tcp baseline port, on its engine IP
  std::string tcp_stream_;    // what the tcp baseline's stream is
  // Declared before the engine and UCP so that they are destroyed after.
  PageBuffer buffer_;
  PageBuffer scratch_;         // the memcpy baseline's other side
  PageBuffer device_;          // device directions: device memory here
  PageBuffer device_scratch_;  // ... and the memcpy baseline's device side
  std::unique_ptr<adxl::AdxlEngine> own_engine_;  // unset when the engine is shared
  adxl::AdxlEngine *engine_ = nullptr;
  struct KvState {
    KvPlan plan;
    KvPlan uniform;
    std::vector<KvKeyDescs> descs;          // the plan's, with this run's addresses
    std::vector<KvKeyDescs> uniform_descs;
    uint64_t expected = 0;                  // KvExpectedHash of the current direction
    uint64_t expected_uniform = 0;
  };
  std::unique_ptr<KvState> kv_;  // KvPrepare'd
  adxl::MemHandle handle_ = nullptr;
  adxl::MemHandle device_handle_ = nullptr;
  bool connected_ = false;
  std::unique_ptr<EngineRunner> runner_;
  std::unique_ptr<UcpInitiator> ucp_;
  std::unique_ptr<TcpInitiator> tcp_;
  std::unique_ptr<TcpLimit> tcp_limit_;  // the limit's streams (bandwidth rows)
  std::vector<uint16_t> tcp_limit_ports_;
  std::string tcp_limit_note_ = "n/a (tcp baseline off)";
  std::unique_ptr<CmaBaseline> cma_;  // same host only
  struct Peer {
    std::string name;  // nixl, nixl_poll, mooncake: the row's benchmark
    std::unique_ptr<PeerDriver> driver;
  };
  std::vector<Peer> peers_;
  std::string peers_note_ = "off (--baselines nixl,mooncake)";
  bool target_same_host_ = false;
  uint64_t target_pid_ = 0;
  std::string target_host_;
  bool finished_ = false;
};

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_SESSION_H_
