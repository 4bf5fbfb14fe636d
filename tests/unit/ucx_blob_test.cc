// The UCX plugin's address and key blobs (plugin/ucx/ucx_blob.h): round
// trips, and truncated, oversized and garbage inputs refused without reading
// outside them.
#include "core/ucx_blob.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

namespace {

using ucx_blob::Address;
using ucx_blob::Key;

std::string EncA(const Address &a) {
  std::string s;
  EXPECT_TRUE(ucx_blob::EncodeAddress(a, &s));
  return s;
}

std::string EncK(const Key &k) {
  std::string s;
  EXPECT_TRUE(ucx_blob::EncodeKey(k, &s));
  return s;
}

// Parses from a heap buffer of exactly `s.size()` bytes, so that a sanitizer
// build catches any read past the end.
bool ParseA(const std::string &s, Address *a) {
  std::unique_ptr<char[]> buf(new char[s.size() + 1]);
  memcpy(buf.get(), s.data(), s.size());
  return ucx_blob::ParseAddress(buf.get(), s.size(), a);
}
bool ParseK(const std::string &s, Key *k) {
  std::unique_ptr<char[]> buf(new char[s.size() + 1]);
  memcpy(buf.get(), s.data(), s.size());
  return ucx_blob::ParseKey(buf.get(), s.size(), k);
}

Key SampleKey() {
  Key k;
  k.ucp = std::string("\x01\x02\x00\x03rkey", 8);
  k.flags = Key::kCmaUsable;
  k.cma_key = "cma-key";
  k.base = 0x7f12345678ull;
  k.len = 1ull << 30;
  k.offset = 8192;
  k.share_path = "/proc/4242/fd/9";
  return k;
}

TEST(UcxBlob, AddressRoundTrip) {
  for (const Address &a : {Address{"ucp-worker-address", "cma", {}}, Address{"ucp", "", {}}, Address{"", "", {}},
                           Address{std::string(4096, '\0'), std::string(1, '\xff'), {}}}) {
    const std::string s = EncA(a);
    EXPECT_EQ(s.size(), 12 + a.ucp.size() + a.cma.size());
    Address b;
    ASSERT_TRUE(ParseA(s, &b));
    EXPECT_EQ(b.ucp, a.ucp);
    EXPECT_EQ(b.cma, a.cma);
    EXPECT_TRUE(b.paths.empty());
  }
}

Address TwoPaths() {
  Address a{"ucp", "cma", {}};
  a.paths.push_back({0x0102a8c0u, 24, "path0-worker"});
  a.paths.push_back({0x0103a8c0u, 32, std::string("p1\0x", 4)});
  return a;
}

TEST(UcxBlob, PathsRoundTrip) {
  const Address a = TwoPaths();
  const std::string s = EncA(a);
  Address b;
  ASSERT_TRUE(ParseA(s, &b));
  EXPECT_EQ(b.ucp, a.ucp);
  EXPECT_EQ(b.cma, a.cma);
  EXPECT_EQ(b.paths, a.paths);
  // The layout the header states: [ipv4][prefix][part] per path.
  const size_t paths_at = 4 + 3 + 4 + 3 + 4;
  uint32_t ip = 0;
  memcpy(&ip, s.data() + paths_at, 4);
  EXPECT_EQ(ip, 0x0102a8c0u);
  EXPECT_EQ(static_cast<uint8_t>(s[paths_at + 4]), 24);
  // Truncated anywhere inside the paths: refused.
  for (size_t n = 0; n < s.size(); ++n) {
    Address out;
    EXPECT_FALSE(ParseA(s.substr(0, n), &out)) << n;
  }
}

TEST(UcxBlob, PathLimitsAreRefused) {
  Address a = TwoPaths();
  std::string s;
  a.paths[1].prefix = 33;
  EXPECT_FALSE(ucx_blob::EncodeAddress(a, &s));
  // A prefix over 32 on the wire.
  a.paths[1].prefix = 32;
  s = EncA(a);
  const size_t prefix1_at = 4 + 3 + 4 + 3 + 4 + (4 + 1 + 4 + a.paths[0].ucp.size()) + 4;
  ASSERT_EQ(static_cast<uint8_t>(s[prefix1_at]), 32);
  s[prefix1_at] = 33;
  Address out;
  EXPECT_FALSE(ParseA(s, &out));
  // More than kMaxPaths paths: not encoded, and refused when sent anyway.
  a.paths.assign(Address::kMaxPaths, ucx_blob::PathAddress{1, 8, "w"});
  s = EncA(a);
  ASSERT_TRUE(ParseA(s, &out));
  EXPECT_EQ(out.paths.size(), Address::kMaxPaths);
  a.paths.push_back(ucx_blob::PathAddress{1, 8, "w"});
  std::string refused;
  EXPECT_FALSE(ucx_blob::EncodeAddress(a, &refused));
  // Append a 17th entry by hand: the paths part grows by 10 bytes.
  const size_t part_at = 4 + 3 + 4 + 3;
  uint32_t n = 0;
  memcpy(&n, s.data() + part_at, 4);
  n += 10;
  memcpy(&s[part_at], &n, 4);
  const uint32_t ip = 1;
  s.append(reinterpret_cast<const char *>(&ip), 4);
  s.push_back(8);
  const uint32_t one = 1;
  s.append(reinterpret_cast<const char *>(&one), 4);
  s.push_back('w');
  EXPECT_FALSE(ParseA(s, &out));
}

TEST(UcxBlob, KeyRoundTrip) {
  Key device = SampleKey();
  device.flags = Key::kDevice;
  device.share_path.clear();
  device.cma_key.clear();
  for (const Key &k : {SampleKey(), device, Key{}}) {
    const std::string s = EncK(k);
    Key b;
    ASSERT_TRUE(ParseK(s, &b));
    EXPECT_EQ(b.ucp, k.ucp);
    EXPECT_EQ(b.flags, k.flags);
    EXPECT_EQ(b.cma_usable(), k.cma_usable());
    EXPECT_EQ(b.device(), k.device());
    EXPECT_EQ(b.cma_key, k.cma_key);
    EXPECT_EQ(b.base, k.base);
    EXPECT_EQ(b.len, k.len);
    EXPECT_EQ(b.offset, k.offset);
    EXPECT_EQ(b.share_path, k.share_path);
    EXPECT_EQ(EncK(b), s);  // canonical
  }
}

// The layout the plugin has always sent: [part: ucp][part: [u8 flags][part:
// cma key][u64 base][u64 len][u64 offset][part: path]].
TEST(UcxBlob, KeyLayout) {
  const Key k = SampleKey();
  const std::string s = EncK(k);
  uint32_t n = 0;
  memcpy(&n, s.data(), 4);
  EXPECT_EQ(n, k.ucp.size());
  const size_t hccs_at = 4 + n;
  memcpy(&n, s.data() + hccs_at, 4);
  EXPECT_EQ(n, 1 + 4 + k.cma_key.size() + 24 + 4 + k.share_path.size());
  EXPECT_EQ(static_cast<uint8_t>(s[hccs_at + 4]), k.flags);
  uint64_t words[3];
  memcpy(words, s.data() + hccs_at + 4 + 1 + 4 + k.cma_key.size(), sizeof(words));
  EXPECT_EQ(words[0], k.base);
  EXPECT_EQ(words[1], k.len);
  EXPECT_EQ(words[2], k.offset);
  EXPECT_EQ(s.substr(s.size() - k.share_path.size()), k.share_path);
}

TEST(UcxBlob, TruncatedIsRefused) {
  const std::string a = EncA(Address{"ucp-address", "cma-address", {}});
  const std::string k = EncK(SampleKey());
  for (size_t n = 0; n < a.size(); ++n) {
    Address out;
    EXPECT_FALSE(ParseA(a.substr(0, n), &out)) << n;
  }
  for (size_t n = 0; n < k.size(); ++n) {
    Key out;
    EXPECT_FALSE(ParseK(k.substr(0, n), &out)) << n;
  }
}

TEST(UcxBlob, TrailingBytesAreRefused) {
  Address a;
  Key k;
  EXPECT_FALSE(ParseA(EncA(Address{"u", "c", {}}) + 'x', &a));
  EXPECT_FALSE(ParseK(EncK(SampleKey()) + std::string(1, '\0'), &k));
  // Bytes after the path inside the HCCS part.
  Key inner = SampleKey();
  std::string s = EncK(inner);
  const size_t hccs_len_at = 4 + inner.ucp.size();
  uint32_t n = 0;
  memcpy(&n, s.data() + hccs_len_at, 4);
  ++n;
  memcpy(&s[hccs_len_at], &n, 4);
  s.push_back('z');
  EXPECT_FALSE(ParseK(s, &k));
}

TEST(UcxBlob, OversizedLengthsAreRefused) {
  std::string a = EncA(Address{"ucp", "cma", {}});
  for (uint32_t bad : {0xffffffffu, 0x80000000u, 8u}) {
    std::string s = a;
    memcpy(&s[0], &bad, 4);
    Address out;
    EXPECT_FALSE(ParseA(s, &out)) << bad;
  }
  // The second part claims one byte more than there is.
  std::string s = a;
  uint32_t n = 4;
  memcpy(&s[4 + 3], &n, 4);
  Address out;
  EXPECT_FALSE(ParseA(s, &out));
  // The cma key inside the HCCS part runs past the part.
  const Key key = SampleKey();
  std::string k = EncK(key);
  const size_t cma_len_at = 4 + key.ucp.size() + 4 + 1;
  const uint32_t big = 0x7fffffff;
  memcpy(&k[cma_len_at], &big, 4);
  Key kout;
  EXPECT_FALSE(ParseK(k, &kout));
}

TEST(UcxBlob, GarbageIsRefused) {
  Address a;
  Key k;
  EXPECT_FALSE(ucx_blob::ParseAddress(nullptr, 0, &a));
  EXPECT_FALSE(ucx_blob::ParseKey(nullptr, 16, &k));
  EXPECT_FALSE(ParseA("", &a));
  EXPECT_FALSE(ParseK("", &k));
  EXPECT_FALSE(ParseA("hello, world", &a));
  EXPECT_FALSE(ParseK(std::string(64, '\xff'), &k));
  // An address is not a key: its second part is no HCCS part.
  EXPECT_FALSE(ParseK(EncA(Address{"ucp", "cma", {}}), &k));
  // A share path with a NUL byte would make open() name another file.
  Key nul = SampleKey();
  nul.share_path = std::string("/tmp/x\0y", 8);
  EXPECT_FALSE(ParseK(EncK(nul), &k));
}

}  // namespace
