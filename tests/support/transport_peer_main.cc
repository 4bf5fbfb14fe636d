// adxl_transport_peer: a plugin context in a process of its own, for the
// tests of the engine's transport layer (src/transport) against a real peer
// on this node (tests/mp/same_node_cancel_test.cc).
//
//   adxl_transport_peer PLUGIN BYTES private|memfd
//
// Opens PLUGIN, registers BYTES of memory (posix_memalign, or a memfd
// mapped MAP_SHARED, which same-node peers map directly) filled with zeros,
// writes one line to stdout:
//   "<address hex> <key hex> <buffer address>"
// and then calls nothing more (the HCCS lane is one-sided: the test's
// process moves the bytes) until stdin reaches its end, when it exits.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "transport/plugin_loader.h"
#include "transport/transport.h"

namespace {

std::string Hex(const std::string &s) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

int Fail(const char *what) {
  printf("err %s\n", what);
  fflush(stdout);
  return 1;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 4) return Fail("usage: adxl_transport_peer PLUGIN BYTES private|memfd");
  const size_t len = strtoull(argv[2], nullptr, 10);
  const bool memfd = strcmp(argv[3], "memfd") == 0;
  void *buf = nullptr;
  if (memfd) {
    // Its descriptor stays open: the plugin finds the file from the mapping.
    const int fd = memfd_create("adxl-transport-peer", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(len)) != 0) return Fail("memfd");
    buf = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (buf == MAP_FAILED) return Fail("mmap");
  } else if (posix_memalign(&buf, 4096, len) != 0) {
    return Fail("posix_memalign");
  }
  memset(buf, 0, len);
  std::string why;
  auto lib = adxl::PluginLibrary::LoadFile(argv[1], ADXL_PLUGIN_ABI_VERSION, &why);
  if (lib == nullptr) return Fail(why.c_str());
  std::shared_ptr<adxl::Transport> t = adxl::Transport::Open(std::move(lib), {}, &why);
  if (t == nullptr) return Fail(why.c_str());
  std::unique_ptr<adxl::TransportMem> mem;
  if (adxl::TransportMem::Register(t, buf, len, ADXL_PLUGIN_MEM_HOST, &mem) != ADXL_PLUGIN_OK) return Fail("mem_reg");
  printf("%s %s %llu\n", Hex(t->address()).c_str(), Hex(mem->packed_key()).c_str(),
         static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(buf)));
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  return 0;
}
