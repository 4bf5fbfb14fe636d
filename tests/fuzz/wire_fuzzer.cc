// Fuzz target for the control-channel parser (src/control/wire.h): arbitrary bytes,
// as a hostile peer could send them, go through wire::FrameReader.
//
// Checks, for every input:
//   * nothing crashes, leaks or hits undefined behaviour (ASan/UBSan in the
//     libFuzzer build);
//   * the decoder does not depend on how the stream is cut: the input fed in
//     one piece and fed in chunks of sizes derived from the input yield the
//     same messages and end in the same state (kNeedMore or kError);
//   * every decoded message re-encodes (wire::Encode must accept whatever the
//     decoder accepted), the re-encoding is byte for byte the frame that was
//     received (the encoding is canonical; only the reserved header word is
//     not echoed), and it decodes again, alone and completely, to a message
//     that encodes to the same bytes.
//
// Two builds of this file (tests/CMakeLists.txt):
//   wire_fuzzer          clang -fsanitize=fuzzer,address,undefined: libFuzzer
//                        calls LLVMFuzzerTestOneInput (ctest wire_fuzz);
//   wire_corpus_replay   any compiler, ADXL_WIRE_REPLAY_MAIN defined: main()
//                        runs the same checks on every file of the directories
//                        or files named on the command line (ctest
//                        wire_corpus_replay, over tests/fuzz/corpus).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "control/wire.h"

namespace {

using adxl::wire::FrameReader;
using adxl::wire::Message;

[[noreturn]] void Fail(const char *what, const std::string &detail = "") {
  std::fprintf(stderr, "wire_fuzzer: check failed: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

uint64_t Fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

// What one pass over the input produced.
struct Outcome {
  std::vector<std::string> frames;  // re-encoding of each decoded message
  bool error = false;               // ended in kError (else kNeedMore)
  size_t consumed = 0;              // bytes of input covered by decoded frames
};

// Checks one decoded message; `frame` is the exact bytes it was decoded from.
std::string CheckMessage(const Message &msg, const uint8_t *frame, size_t frame_len) {
  std::string enc;
  if (!adxl::wire::Encode(msg, &enc)) Fail("Encode refused a message the decoder accepted");
  if (enc.size() != frame_len) {
    Fail("re-encoding has another size than the received frame",
         std::to_string(enc.size()) + " vs " + std::to_string(frame_len));
  }
  for (size_t i = 0; i < frame_len; ++i) {
    const bool reserved = i >= 12 && i < 16;  // u32 reserved: ignored on receive, 0 on send
    if (!reserved && static_cast<uint8_t>(enc[i]) != frame[i]) {
      Fail("re-encoding differs from the received frame", "at byte " + std::to_string(i));
    }
    if (reserved && enc[i] != 0) Fail("Encode wrote a non-zero reserved word");
  }
  // Decode the re-encoding alone: exactly one message, nothing left over.
  FrameReader again;
  again.Feed(enc.data(), enc.size());
  Message m2;
  std::string why;
  if (again.Next(&m2, &why) != FrameReader::Result::kMessage) Fail("re-encoded frame does not decode", why);
  if (m2.seq != msg.seq) Fail("seq changed in the round trip");
  if (adxl::wire::TypeOf(m2.body) != adxl::wire::TypeOf(msg.body)) Fail("type changed in the round trip");
  if (again.buffered() != 0) Fail("decoding the re-encoded frame left bytes behind");
  if (again.Next(&m2, &why) != FrameReader::Result::kNeedMore) Fail("a second message out of one frame");
  std::string enc2;
  if (!adxl::wire::Encode(m2, &enc2)) Fail("Encode refused the round-tripped message");
  if (enc2 != enc) Fail("encode(decode(encode(m))) != encode(m)");
  return enc;
}

// Drains `r` after a Feed; returns false once it reported kError.
bool Drain(FrameReader *r, const uint8_t *data, size_t fed, Outcome *out) {
  while (true) {
    Message msg;
    std::string why;
    const size_t before = fed - r->buffered();
    switch (r->Next(&msg, &why)) {
      case FrameReader::Result::kMessage: {
        const size_t after = fed - r->buffered();
        if (before != out->consumed || after <= before || after - before < adxl::wire::kHeaderSize) {
          Fail("FrameReader::buffered() is inconsistent with the frames it returned");
        }
        out->frames.push_back(CheckMessage(msg, data + before, after - before));
        out->consumed = after;
        break;
      }
      case FrameReader::Result::kNeedMore:
        if (fed - r->buffered() != out->consumed) Fail("kNeedMore consumed bytes");
        return true;
      case FrameReader::Result::kError:
        if (why.empty()) Fail("kError without a reason");
        out->error = true;
        return false;
    }
  }
}

Outcome OnePiece(const uint8_t *data, size_t size) {
  Outcome out;
  FrameReader r;
  r.Feed(data, size);
  Drain(&r, data, size, &out);
  return out;
}

// Chunk sizes come from a generator seeded with a hash of the input, so that
// each input is always cut the same way and different inputs differently:
// mostly tiny pieces (header and string boundaries), sometimes large ones.
Outcome Chunked(const uint8_t *data, size_t size) {
  Outcome out;
  FrameReader r;
  uint64_t state = Fnv1a(data, size) | 1;
  size_t fed = 0;
  while (fed < size) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    size_t n;
    switch (state % 4) {
      case 0: n = 1; break;
      case 1: n = 1 + (state >> 8) % 8; break;
      case 2: n = 1 + (state >> 8) % 64; break;
      default: n = 1 + (state >> 8) % 4096; break;
    }
    if (n > size - fed) n = size - fed;
    r.Feed(data + fed, n);
    fed += n;
    if (!Drain(&r, data, fed, &out)) break;  // the reader must not be used after kError
  }
  if (size == 0) Drain(&r, data, 0, &out);
  return out;
}

void CheckInput(const uint8_t *data, size_t size) {
  const Outcome a = OnePiece(data, size);
  const Outcome b = Chunked(data, size);
  if (a.frames != b.frames) {
    Fail("chunked feeding decoded other messages than one-piece feeding",
         std::to_string(a.frames.size()) + " vs " + std::to_string(b.frames.size()) + " messages");
  }
  if (a.error != b.error) Fail("chunked feeding ended in another state than one-piece feeding");
  if (a.consumed != b.consumed) Fail("chunked feeding consumed another number of bytes");
  // A stream of only whole valid frames is consumed completely.
  if (!a.error && a.consumed < size && size - a.consumed >= adxl::wire::kHeaderSize) {
    // kNeedMore with a whole header buffered: the header must announce more
    // payload than there is.
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i) len |= static_cast<uint32_t>(data[a.consumed + 8 + i]) << (8 * i);
    if (size - a.consumed - adxl::wire::kHeaderSize >= len) Fail("kNeedMore although a whole frame was buffered");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  CheckInput(data, size);
  return 0;
}

#ifdef ADXL_WIRE_REPLAY_MAIN
#include "corpus_replay.h"

namespace {

bool ReplayFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  const Outcome o = OnePiece(bytes.data(), bytes.size());
  CheckInput(bytes.data(), bytes.size());  // aborts on a failed check
  // The seed files say by their name what the parser must make of them.
  const std::string name = path.substr(path.find_last_of('/') + 1);
  const bool whole = !o.error && o.consumed == bytes.size();
  const bool incomplete = !o.error && o.consumed < bytes.size();
  auto starts = [&name](const char *p) { return name.rfind(p, 0) == 0; };
  const char *expected = nullptr;
  if ((starts("valid_") || starts("stream_")) && !whole) expected = "decoded completely";
  if ((starts("bad_") || starts("garbage_")) && !o.error) expected = "rejected (kError)";
  if (starts("trunc_") && !incomplete) expected = "left incomplete (kNeedMore)";
  if (expected != nullptr) {
    std::fprintf(stderr, "FAIL %s: expected to be %s\n", path.c_str(), expected);
    return false;
  }
  std::printf("ok  %-60s %6zu bytes, %zu message(s), %s\n", path.c_str(), bytes.size(), o.frames.size(),
              o.error ? "then rejected" : (o.consumed == bytes.size() ? "all consumed" : "then incomplete"));
  return true;
}

}  // namespace

// Usage: wire_corpus_replay <dir-or-file>...  Exits non-zero when a file
// cannot be read, when nothing was replayed, when a seed named valid_*,
// stream_*, bad_*, garbage_* or trunc_* is not decoded, rejected or left
// incomplete as its name says, or (abort) when a check fails.
int main(int argc, char **argv) { return ReplayCorpusMain(argc, argv, ReplayFile); }
#endif
