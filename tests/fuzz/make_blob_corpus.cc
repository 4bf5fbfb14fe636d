// Writes the seed corpus of the blob fuzzer (tests/fuzz/blob_corpus/): valid
// addresses and keys as the UCX plugin makes them, and truncated, oversized
// and garbage blobs.  The files are checked in; this program is how they were
// made, and how to remake them after a change of the format:
//
//   g++ -std=c++17 -I plugin/ucx tests/fuzz/make_blob_corpus.cc plugin/ucx/core/ucx_blob.cc -o /tmp/make_blob_corpus
//   /tmp/make_blob_corpus tests/fuzz/blob_corpus
//
// (from the repository root; not part of the CMake build).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/ucx_blob.h"

namespace {

std::string dir;

void Write(const std::string &name, const std::string &bytes) {
  const std::string path = dir + "/" + name;
  FILE *f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

std::string Enc(const ucx_blob::Address &a) {
  std::string s;
  if (!ucx_blob::EncodeAddress(a, &s)) std::exit(1);
  return s;
}

std::string Enc(const ucx_blob::Key &k) {
  std::string s;
  if (!ucx_blob::EncodeKey(k, &s)) std::exit(1);
  return s;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <dir>\n", argv[0]);
    return 2;
  }
  dir = argv[1];
  ucx_blob::Address a{std::string(79, '\x5a'), std::string(16, '\x11'), {}};
  Write("address_ucp_and_cma", Enc(a));
  Write("address_no_cma", Enc(ucx_blob::Address{std::string(79, '\x5a'), "", {}}));
  Write("address_empty_parts", Enc(ucx_blob::Address{}));
  ucx_blob::Address paths = a;
  paths.paths.push_back({0x0105d50a, 24, std::string(40, '\x33')});
  paths.paths.push_back({0x0105d60a, 24, std::string(40, '\x44')});
  Write("address_two_paths", Enc(paths));

  ucx_blob::Key host;
  host.ucp = std::string(10, '\x07');
  host.flags = ucx_blob::Key::kCmaUsable;
  host.base = 0x7f0000001000;
  host.len = 1 << 20;
  Write("key_host_cma", Enc(host));
  ucx_blob::Key shared = host;
  shared.cma_key = std::string(8, '\x22');
  shared.share_path = "/proc/12345/fd/7";
  shared.offset = 4096;
  Write("key_host_shared", Enc(shared));
  ucx_blob::Key device = host;
  device.flags = ucx_blob::Key::kDevice;
  Write("key_device", Enc(device));

  const std::string addr = Enc(a), key = Enc(shared);
  Write("bad_empty", "");
  Write("bad_trunc_address", addr.substr(0, addr.size() - 1));
  Write("badkey_trunc", key.substr(0, key.size() - 3));
  Write("bad_trunc_length", addr.substr(0, 2));
  Write("bad_trailing_byte", addr + '\0');
  std::string huge = addr;
  huge[0] = huge[1] = huge[2] = huge[3] = '\xff';  // first part claims 4 GiB
  Write("bad_huge_length", huge);
  std::string oversized_inner = key;
  // The HCCS part's cma key length (after [u32][ucp][u32][u8 flags]) past its end.
  const size_t at = 4 + shared.ucp.size() + 4 + 1;
  oversized_inner[at] = '\x40';
  oversized_inner[at + 1] = '\x40';
  Write("badkey_inner_length", oversized_inner);
  ucx_blob::Key nul = shared;
  nul.share_path = std::string("/tmp/a\0b", 8);
  Write("badkey_path_nul", Enc(nul));
  // [part: "ucp"][part: one flags byte]: an HCCS part with nothing after its flags.
  Write("badkey_flags_only", std::string("\x03\0\0\0ucp\x01\0\0\0\x01", 12));
  std::string bad_prefix = Enc(paths);
  // The first path's prefix byte: after [u32][ucp][u32][cma][u32 paths part][4-byte address].
  bad_prefix[4 + a.ucp.size() + 4 + a.cma.size() + 4 + 4] = 33;
  Write("bad_path_prefix", bad_prefix);
  Write("bad_garbage_text", "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  return 0;
}
