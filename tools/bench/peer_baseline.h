// The peer rows: another transfer engine (NIXL, Mooncake) between two
// processes of its own, stepped in turn with the engine rows.
//
// The peers are Python packages (their PyPI wheels, in the venv that
// scripts/peers_venv.sh makes), so they cannot run inside the bench's
// processes: the initiator starts tools/bench/peers/peer_driver.py with the
// venv's python, over a pipe pair; the driver is the peer's initiator and
// forks the peer's target.  Each step is one line each way ("step W|R BLOCK
// COUNT VERIFY" -> "ok SECONDS CPU_SECONDS pass|fail|unchecked"): the driver
// times the transfer alone, with its descriptors prepared once per shape (as
// the engine's are), and checks every byte itself (destination poisoned
// before the step, compared with the source pattern after it, outside the
// timed part).  The peers move their own buffers of the same size, blocks and
// count as the engine's, on the lane's UCX transports (NIXL) or TCP
// (Mooncake).
//
// The driver runs with a clean LD_LIBRARY_PATH (the peers use the UCX in
// their wheels, not the project's), UCX_NET_DEVICES=lo, UCX_MODULES=^ib (the
// wheel's netlink module may crash at exit), UCX_TLS for the lane with tcp in
// it (NIXL's default error mode needs a transport with peer-failure support),
// MC_TCP_ENABLE_CONNECTION_POOL=1 and MC_TCP_MAX_QUEUED_TRANSFERS_PER_PEER
// = the run's largest batch.  Between its own steps the driver's process
// group is stopped (SIGSTOP): idle NIXL progress threads would otherwise take
// CPU from the rows measured in turn with it.  A UCX_* (but UCX_TLS on --lane hccs/rdma) or
// MC_* the user set is kept.  The driver's stderr goes to a log file.
#ifndef ADXL_TOOLS_BENCH_PEER_BASELINE_H_
#define ADXL_TOOLS_BENCH_PEER_BASELINE_H_

#include <sys/types.h>

#include <cstdio>
#include <memory>
#include <string>

#include "engine_runner.h"
#include "kv_layout.h"
#include "measurement.h"
#include "options.h"

namespace bench {

// The venv's python, or "" with *why ("not installed: ...").  Looks at
// --peers-venv, $ADXL_BENCH_PEERS_VENV, then .venv-peers in the source tree.
std::string PeersPython(const std::string &venv_option, std::string *why);

// Where a peer driver's stderr goes: $TMPDIR/adxl-bench-ENGINE.PID.log.
std::string PeerLogPath(const std::string &engine);

class PeerDriver {
 public:
  // engine: nixl, nixl_poll or mooncake.  nullptr with *why when the driver
  // cannot start or says the peer is unavailable.
  static std::unique_ptr<PeerDriver> Create(const std::string &python, const std::string &engine, Lane lane,
                                            size_t size, size_t max_batch, int timeout_ms, const char *pages,
                                            std::string *why);
  ~PeerDriver();
  PeerDriver(const PeerDriver &) = delete;
  PeerDriver &operator=(const PeerDriver &) = delete;

  // One step; StepResult::cpu_seconds is the peer processes' CPU time.
  StepResult RunStep(const BlockBatch &b, bool verify);
  // One command line, one "ok SECONDS CPU CHECK" answer.
  StepResult Command(const std::string &command);
  // --workload kv: the plan's calls (written to a file the driver reads);
  // false with *why.  RunKeys: every call of it in order, one step.
  bool LoadPlan(const KvPlan &plan, std::string *why);
  StepResult RunKeys(adxl::TransferOp op, bool verify);
  // Whether the last step's destination matched (true when unchecked).
  bool LastCheck() const { return last_check_; }
  const std::string &description() const { return description_; }

 private:
  PeerDriver() = default;
  bool ReadLine(std::string *line, std::string *why);
  // SIGSTOP / SIGCONT the driver's process group (the driver and its target).
  void Pause(bool stop);
  bool WriteLine(const std::string &line, std::string *why);

  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::string pending_;  // read but not yet a whole line
  int timeout_ms_ = 30000;
  bool broken_ = false;
  bool last_check_ = true;
  std::string description_;
  std::string plan_path_;  // removed by the destructor
};

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_PEER_BASELINE_H_
