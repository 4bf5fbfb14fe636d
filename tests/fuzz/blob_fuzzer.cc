// Fuzz target for the UCX plugin's blob parsers (plugin/ucx/ucx_blob.h): the
// worker address and the packed remote key a peer sends through the control
// channel, as arbitrary bytes.
//
// Checks, for every input, for both parsers:
//   * nothing crashes, leaks or hits undefined behaviour, and nothing is read
//     outside the input (ASan/UBSan in the libFuzzer build; the input is
//     copied into a buffer of exactly its size, so an over-read is caught);
//   * a blob the parser accepts re-encodes byte for byte to itself (the
//     encoding is canonical), and the re-encoding parses to the same struct.
//
// Two builds of this file (tests/CMakeLists.txt), as for wire_fuzzer.cc:
//   blob_fuzzer          clang -fsanitize=fuzzer,address,undefined (ctest blob_fuzz);
//   blob_corpus_replay   any compiler, ADXL_BLOB_REPLAY_MAIN: main() runs the same
//                        checks on every file named (ctest blob_corpus_replay over
//                        tests/fuzz/blob_corpus); a seed named address_* must parse
//                        as an address, key_* as a key, bad_* as neither, badkey_*
//                        not as a key (a key is also a well-formed address).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/ucx_blob.h"

namespace {

[[noreturn]] void Fail(const char *what) {
  std::fprintf(stderr, "blob_fuzzer: check failed: %s\n", what);
  std::abort();
}

bool SameKey(const ucx_blob::Key &a, const ucx_blob::Key &b) {
  return a.ucp == b.ucp && a.flags == b.flags && a.cma_key == b.cma_key && a.base == b.base && a.len == b.len &&
         a.offset == b.offset && a.share_path == b.share_path;
}

struct Outcome {
  bool address = false;
  bool key = false;
};

Outcome CheckInput(const uint8_t *data, size_t size) {
  // Exactly `size` bytes on the heap: ASan flags any read past them.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size == 0 ? 1 : size]);
  if (size != 0) memcpy(copy.get(), data, size);
  const std::string in(reinterpret_cast<const char *>(data), size);
  Outcome o;

  ucx_blob::Address a;
  o.address = ucx_blob::ParseAddress(copy.get(), size, &a);
  if (o.address) {
    std::string enc;
    if (!ucx_blob::EncodeAddress(a, &enc)) Fail("EncodeAddress refused a parsed address");
    if (enc != in) Fail("address re-encoding differs from the input");
    ucx_blob::Address b;
    if (!ucx_blob::ParseAddress(enc.data(), enc.size(), &b)) Fail("re-encoded address does not parse");
    if (b.ucp != a.ucp || b.cma != a.cma || !(b.paths == a.paths)) Fail("address changed in the round trip");
  }

  ucx_blob::Key k;
  o.key = ucx_blob::ParseKey(copy.get(), size, &k);
  if (o.key) {
    std::string enc;
    if (!ucx_blob::EncodeKey(k, &enc)) Fail("EncodeKey refused a parsed key");
    if (enc != in) Fail("key re-encoding differs from the input");
    ucx_blob::Key k2;
    if (!ucx_blob::ParseKey(enc.data(), enc.size(), &k2)) Fail("re-encoded key does not parse");
    if (!SameKey(k, k2)) Fail("key changed in the round trip");
    if (k.share_path.find('\0') != std::string::npos) Fail("a share path with a NUL byte was accepted");
  }
  // Every prefix of an accepted blob is refused (the lengths account for
  // every byte); checked on short inputs only, to keep the fuzzer fast.
  if ((o.address || o.key) && size <= 256) {
    for (size_t n = 0; n < size; ++n) {
      ucx_blob::Address pa;
      ucx_blob::Key pk;
      if (o.address && ucx_blob::ParseAddress(copy.get(), n, &pa)) Fail("a truncated address parsed");
      if (o.key && ucx_blob::ParseKey(copy.get(), n, &pk)) Fail("a truncated key parsed");
    }
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  CheckInput(data, size);
  return 0;
}

#ifdef ADXL_BLOB_REPLAY_MAIN
#include "corpus_replay.h"

namespace {

bool ReplayFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  const Outcome o = CheckInput(bytes.data(), bytes.size());  // aborts on a failed check
  const std::string name = path.substr(path.find_last_of('/') + 1);
  auto starts = [&name](const char *p) { return name.rfind(p, 0) == 0; };
  const char *expected = nullptr;
  if (starts("address_") && !o.address) expected = "parsed as an address";
  if (starts("key_") && !o.key) expected = "parsed as a key";
  if (starts("bad_") && (o.address || o.key)) expected = "refused by both parsers";
  if (starts("badkey_") && o.key) expected = "refused as a key";
  if (expected != nullptr) {
    std::fprintf(stderr, "FAIL %s: expected to be %s\n", path.c_str(), expected);
    return false;
  }
  std::printf("ok  %-60s %6zu bytes, address %s, key %s\n", path.c_str(), bytes.size(), o.address ? "yes" : "no",
              o.key ? "yes" : "no");
  return true;
}

}  // namespace

// Usage: blob_corpus_replay <dir-or-file>...  Non-zero exit when a file
// cannot be read, nothing was replayed or a seed is not parsed as its name
// says; abort when a check fails.
int main(int argc, char **argv) { return ReplayCorpusMain(argc, argv, ReplayFile); }
#endif
