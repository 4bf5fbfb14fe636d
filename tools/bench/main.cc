// adxl-bench: measures the ADXL engine between two processes against the
// local memcpy limit, raw UCP and a plain TCP stream, on the same buffers
// and blocks.
//
// Where things are:
//   options.cc        command line            side_channel.cc  initiator <-> target TCP line protocol
//   spawn.cc          --spawn: fork/exec      target.cc        the target process
//   initiator.cc      checks, run, report     session.cc       set-up, rows, verify pass
//   engine_runner.cc  the measured engine loop
//   ucp_baseline.cc   raw-UCP baseline        memcpy_baseline.cc  memcpy baseline
//   tcp_baseline.cc   plain TCP stream baseline
//   report.cc         table, CSV, JSON        lane.cc          --lane -> UCX_TLS
#include <signal.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "initiator.h"
#include "options.h"
#include "spawn.h"
#include "target.h"

namespace bench {
namespace {

constexpr int kTargetExitWaitMs = 5000;

// --spawn: start the target (--peers: each target) on free loopback ports,
// run the initiator here.
int RunSpawned(Options o) {
  std::string why;
  std::vector<std::unique_ptr<ChildProcess>> targets;
  std::string side_channels;
  for (int i = 0; i < o.peers; ++i) {
    uint16_t side_port = 0, engine_port = 0;
    if (!FreeLoopbackPort(&side_port, &why) || !FreeLoopbackPort(&engine_port, &why)) {
      fprintf(stderr, "adxl-bench: %s\n", why.c_str());
      return 2;
    }
    const std::string side_channel = "127.0.0.1:" + std::to_string(side_port);
    const std::string target_engine = "127.0.0.1:" + std::to_string(engine_port);
    side_channels += (i == 0 ? "" : ",") + side_channel;
    targets.push_back(std::make_unique<ChildProcess>());
    if (!targets.back()->StartSelf({"--role", "target", "--side-channel", side_channel, "--local-engine",
                                    target_engine, "--timeout-ms", std::to_string(o.timeout_ms),
                                    "--accept-timeout", "30"},
                                   &why)) {
      fprintf(stderr, "adxl-bench: cannot start the target: %s\n", why.c_str());
      return 2;
    }
  }
  o.side_channel = side_channels;
  int rc = RunInitiator(o, [&targets] {
    for (auto &t : targets) {
      if (!t->Running()) return false;
    }
    return true;
  });
  // After a failure the targets may be stuck waiting for us: do not wait long.
  for (auto &target : targets) {
    int target_rc = target->Wait(rc == 0 ? kTargetExitWaitMs : 1000);
    if (rc == 0 && target_rc != 0) {
      fprintf(stderr, "adxl-bench: the target process ended with status %d\n", target_rc);
      rc = 2;
    }
  }
  return rc;
}

int Main(int argc, char **argv) {
  // A peer that vanishes must give an error from send(), not kill us.
  signal(SIGPIPE, SIG_IGN);
  Options o;
  bool help = false;
  std::string why;
  if (!ParseOptions(argc, argv, &o, &help, &why)) {
    fprintf(stderr, "adxl-bench: %s\n", why.c_str());
    return 2;
  }
  if (help) {
    printf("%s", HelpText("adxl-bench").c_str());
    return 0;
  }
  if (o.role == Role::kTarget) return RunTarget(o);
  if (!Preflight(o, &why)) {
    fprintf(stderr, "adxl-bench: %s\n", why.c_str());
    return 2;
  }
  if (o.role == Role::kSpawn) return RunSpawned(o);
  return RunInitiator(o, [] { return true; });
}

}  // namespace
}  // namespace bench

int main(int argc, char **argv) {
  try {
    return bench::Main(argc, argv);
  } catch (const std::exception &e) {
    fprintf(stderr, "adxl-bench: unexpected error: %s\n", e.what());
  } catch (...) {
    fprintf(stderr, "adxl-bench: unexpected error\n");
  }
  return 2;
}
