// --spawn: this process becomes the initiator and starts the target as a
// child (the same binary with --role target) on loopback ports that were
// free a moment ago.
#ifndef ADXL_TOOLS_BENCH_SPAWN_H_
#define ADXL_TOOLS_BENCH_SPAWN_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

// A TCP port on 127.0.0.1 that nobody had bound when we asked.
bool FreeLoopbackPort(uint16_t *port, std::string *why);

// A child process; killed (SIGKILL) and reaped if still running when the
// object goes away, so a failed run leaves no target behind.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess &) = delete;
  ChildProcess &operator=(const ChildProcess &) = delete;

  // Runs this executable with `args` (argv[1..]).
  bool StartSelf(const std::vector<std::string> &args, std::string *why);
  bool Running();
  // Waits up to timeout_ms for the exit; returns the exit status, or -1 when
  // it had to be killed, or 128+signal when a signal ended it.
  int Wait(int timeout_ms);

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_SPAWN_H_
