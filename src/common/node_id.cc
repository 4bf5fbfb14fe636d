#include "common/node_id.h"

#include <cstdlib>
#include <unistd.h>

#include <fstream>

namespace adxl {
namespace {

std::string FirstLine(const char *path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

}  // namespace

std::string LocalNodeId() {
  if (const char *v = getenv("ADXL_NODE_ID")) return v;
  // boot_id changes per boot and differs between machines; machine-id tells
  // apart containers that share a kernel only when they have their own.
  // The network namespace is part of it: namespaces joined by veth pairs are
  // separate hosts as far as the network is concerned.
  char ns[64] = {0};
  ssize_t n = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
  return FirstLine("/proc/sys/kernel/random/boot_id") + "/" + FirstLine("/etc/machine-id") + "/" +
         (n > 0 ? std::string(ns, static_cast<size_t>(n)) : std::string("net:?"));
}

}  // namespace adxl
