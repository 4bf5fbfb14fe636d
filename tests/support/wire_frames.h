// Control-channel frames for tests: built byte by byte from the layout of
// src/control/wire.h, so that a test can send what no engine would (a wrong
// magic or version, a length that lies, a truncated or malformed payload),
// and read a frame's header without the engine's decoder.  The constants
// (magic, version, header size, limits, message types) are wire.h's own, so
// a change of the format there changes what these build.  Valid messages
// come from the engine's encoder (Encoded); that needs src/control/wire.cc
// in the test's build.  Include path: src/ and tests/support.
//
//   u32 magic "ADXL" | u16 version | u16 type | u32 length | u32 reserved | u64 seq
//   little-endian; payload strings are u32 length + bytes.
#ifndef ADXL_TESTS_SUPPORT_WIRE_FRAMES_H_
#define ADXL_TESTS_SUPPORT_WIRE_FRAMES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "control/wire.h"

namespace adxl_test {
namespace wire_frames {

using adxl::wire::kHeaderSize;
using adxl::wire::kMagic;
using adxl::wire::kVersion;

// Byte offsets of the header's fields.
constexpr size_t kVersionOffset = 4;
constexpr size_t kTypeOffset = 6;
constexpr size_t kLengthOffset = 8;
constexpr size_t kReservedOffset = 12;
constexpr size_t kSeqOffset = 16;

// The type field's value of a message type.
constexpr uint16_t Code(adxl::wire::Type t) { return static_cast<uint16_t>(t); }

// Appends the n low bytes of v, little-endian.
inline void PutLe(std::string *s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// The n-byte little-endian value at off; bytes past the end read as 0.
inline uint64_t GetLe(const std::string &s, size_t off, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n && off + i < s.size(); ++i) {
    v |= static_cast<uint64_t>(static_cast<uint8_t>(s[off + i])) << (8 * i);
  }
  return v;
}

// A payload string: u32 length, then the bytes.
inline std::string Str(const std::string &v) {
  std::string s;
  PutLe(&s, v.size(), 4);
  return s + v;
}

// A header with every field chosen by the caller; `length` need not be the
// length of whatever follows it.
inline std::string Header(uint16_t type, uint32_t length, uint64_t seq = 1, uint16_t version = kVersion,
                          uint32_t magic = kMagic) {
  std::string s;
  PutLe(&s, magic, 4);
  PutLe(&s, version, 2);
  PutLe(&s, type, 2);
  PutLe(&s, length, 4);
  PutLe(&s, 0, 4);  // reserved
  PutLe(&s, seq, 8);
  return s;
}

// A header that states the payload's true length, then the payload.
inline std::string Frame(uint16_t type, const std::string &payload, uint64_t seq = 1, uint16_t version = kVersion,
                         uint32_t magic = kMagic) {
  return Header(type, static_cast<uint32_t>(payload.size()), seq, version, magic) + payload;
}

// A valid frame from the engine's encoder; empty when Encode refuses the
// message (a field over a limit).
inline std::string Encoded(uint64_t seq, const adxl::wire::Body &body) {
  std::string out;
  if (!adxl::wire::Encode(seq, body, &out)) out.clear();
  return out;
}

// The fields of a received header (h holds at least kHeaderSize bytes).
struct HeaderFields {
  uint32_t magic = 0;
  uint16_t version = 0;
  uint16_t type = 0;
  uint32_t length = 0;
  uint64_t seq = 0;
};
inline HeaderFields ParseHeader(const std::string &h) {
  HeaderFields f;
  f.magic = static_cast<uint32_t>(GetLe(h, 0, 4));
  f.version = static_cast<uint16_t>(GetLe(h, kVersionOffset, 2));
  f.type = static_cast<uint16_t>(GetLe(h, kTypeOffset, 2));
  f.length = static_cast<uint32_t>(GetLe(h, kLengthOffset, 4));
  f.seq = GetLe(h, kSeqOffset, 8);
  return f;
}

}  // namespace wire_frames
}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_WIRE_FRAMES_H_
