// quickstart: the smallest two-process ADXL program.
//
// The parent forks a target process that registers a buffer and waits; the
// parent connects to it, WRITEs a message into the target's buffer, READs it
// back, sends a notify, and checks everything.  The target's buffer address
// travels over a pipe (a real program would use its own side channel).
//
//   quickstart [port]      (default 26000)
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"

namespace {

int RunTarget(const std::string &name, int to_parent, int from_parent) {
  adxl::AdxlEngine engine;
  if (engine.Initialize(name.c_str(), {}) != adxl::SUCCESS) return 1;
  std::vector<char> buf(4096, 0);
  adxl::MemHandle handle = nullptr;
  if (engine.RegisterMem({reinterpret_cast<uintptr_t>(buf.data()), buf.size()}, adxl::MEM_HOST, handle) !=
      adxl::SUCCESS) {
    return 1;
  }
  uintptr_t addr = reinterpret_cast<uintptr_t>(buf.data());
  if (write(to_parent, &addr, sizeof(addr)) != sizeof(addr)) return 1;
  char done = 0;
  if (read(from_parent, &done, 1) != 1) return 1;  // the initiator has finished
  std::vector<adxl::NotifyDesc> notifies;
  engine.GetNotifies(notifies);
  bool ok = strcmp(buf.data(), "hello from the initiator") == 0 && notifies.size() == 1;
  printf("target: buffer holds \"%s\", %zu notify received\n", buf.data(), notifies.size());
  fflush(stdout);  // the caller leaves through _exit
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string target = "127.0.0.1:" + std::string(argc > 1 ? argv[1] : "26000");
  int up[2], down[2];
  if (pipe(up) != 0 || pipe(down) != 0) return 1;
  pid_t child = fork();
  if (child == 0) {
    close(up[0]);
    close(down[1]);  // so that the target sees EOF if the initiator dies
    _exit(RunTarget(target, up[1], down[0]));
  }
  close(up[1]);
  close(down[0]);

  uintptr_t remote = 0;
  if (read(up[0], &remote, sizeof(remote)) != sizeof(remote)) return 1;
  adxl::AdxlEngine engine;
  int rc = 1;
  char msg[4096] = "hello from the initiator";
  char back[4096] = {0};
  adxl::MemHandle h1 = nullptr, h2 = nullptr;
  if (engine.Initialize("127.0.0.1", {}) == adxl::SUCCESS &&
      engine.RegisterMem({reinterpret_cast<uintptr_t>(msg), sizeof(msg)}, adxl::MEM_HOST, h1) == adxl::SUCCESS &&
      engine.RegisterMem({reinterpret_cast<uintptr_t>(back), sizeof(back)}, adxl::MEM_HOST, h2) == adxl::SUCCESS &&
      engine.Connect(target.c_str(), 5000) == adxl::SUCCESS &&
      engine.TransferSync(target.c_str(), adxl::WRITE, {{reinterpret_cast<uintptr_t>(msg), remote, sizeof(msg)}}) ==
          adxl::SUCCESS &&
      engine.TransferSync(target.c_str(), adxl::READ, {{reinterpret_cast<uintptr_t>(back), remote, sizeof(back)}}) ==
          adxl::SUCCESS &&
      engine.SendNotify(target.c_str(), {"quickstart", "done"}) == adxl::SUCCESS) {
    rc = strcmp(back, msg) == 0 ? 0 : 1;
    printf("initiator: wrote and read back \"%s\"\n", back);
  } else {
    fprintf(stderr, "initiator: a call failed (see the log above)\n");
  }
  engine.Finalize();
  char done = 1;
  if (write(down[1], &done, 1) != 1) rc = 1;
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  printf("quickstart: %s\n", rc == 0 ? "OK" : "FAILED");
  return rc;
}
