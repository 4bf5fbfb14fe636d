// The control-channel wire format (src/control/wire.h): encode, incremental decode
// and the rejection of malformed frames.
#include "control/wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "wire_frames.h"

namespace adxl {
namespace wire {
namespace {

using Result = FrameReader::Result;
// The byte-by-byte builders (tests/support/wire_frames.h): independent of
// Encode, so comparing the two checks the encoder against the documented layout.
using adxl_test::wire_frames::Code;
using adxl_test::wire_frames::Frame;
using adxl_test::wire_frames::GetLe;
using adxl_test::wire_frames::Header;
using adxl_test::wire_frames::PutLe;
using adxl_test::wire_frames::Str;

// ------------------------------------------------------------------ helpers

std::string EncodeOrDie(const Message &m) {
  std::string out;
  EXPECT_TRUE(Encode(m, &out)) << "Encode refused a " << TypeName(TypeOf(m.body));
  return out;
}

Message Msg(uint64_t seq, Body body) {
  Message m;
  m.seq = seq;
  m.body = std::move(body);
  return m;
}

void ExpectSameRegion(const Region &a, const Region &b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.addr, b.addr);
  EXPECT_EQ(a.len, b.len);
  EXPECT_EQ(a.mem_type, b.mem_type);
  EXPECT_EQ(a.rkey, b.rkey);
}

void ExpectSameBody(const Body &want, const Body &got) {
  ASSERT_EQ(want.index(), got.index()) << "want " << TypeName(TypeOf(want)) << ", got " << TypeName(TypeOf(got));
  std::visit(
      [&got](const auto &w) {
        using M = std::decay_t<decltype(w)>;
        const M &g = std::get<M>(got);
        if constexpr (std::is_same_v<M, Hello>) {
          EXPECT_EQ(w.from_engine, g.from_engine);
          EXPECT_EQ(w.to_engine, g.to_engine);
          EXPECT_EQ(w.node_id, g.node_id);
          EXPECT_EQ(w.flags, g.flags);
          EXPECT_EQ(w.nonce, g.nonce);
          EXPECT_EQ(w.heartbeat_ms, g.heartbeat_ms);
          EXPECT_EQ(w.dead_after_ms, g.dead_after_ms);
        } else if constexpr (std::is_same_v<M, AuthChallenge>) {
          EXPECT_EQ(w.nonce, g.nonce);
        } else if constexpr (std::is_same_v<M, AuthResponse>) {
          EXPECT_EQ(w.proof, g.proof);
        } else if constexpr (std::is_same_v<M, HelloAck>) {
          EXPECT_EQ(w.status, g.status);
          EXPECT_EQ(w.node_id, g.node_id);
          EXPECT_EQ(w.transport_address, g.transport_address);
          ASSERT_EQ(w.regions.size(), g.regions.size());
          for (size_t i = 0; i < w.regions.size(); ++i) ExpectSameRegion(w.regions[i], g.regions[i]);
          EXPECT_EQ(w.proof, g.proof);
          ASSERT_EQ(w.metadata.size(), g.metadata.size());
          for (size_t i = 0; i < w.metadata.size(); ++i) {
            EXPECT_EQ(w.metadata[i].name, g.metadata[i].name);
            EXPECT_EQ(w.metadata[i].version, g.metadata[i].version);
            EXPECT_EQ(w.metadata[i].blob, g.metadata[i].blob);
          }
        } else if constexpr (std::is_same_v<M, MetadataUpdate>) {
          EXPECT_EQ(w.entry.name, g.entry.name);
          EXPECT_EQ(w.entry.version, g.entry.version);
          EXPECT_EQ(w.entry.blob, g.entry.blob);
        } else if constexpr (std::is_same_v<M, RegionAdd>) {
          ExpectSameRegion(w.region, g.region);
        } else if constexpr (std::is_same_v<M, RegionDel>) {
          EXPECT_EQ(w.id, g.id);
        } else if constexpr (std::is_same_v<M, Ack>) {
          EXPECT_EQ(w.status, g.status);
        } else if constexpr (std::is_same_v<M, Notify>) {
          EXPECT_EQ(w.name, g.name);
          EXPECT_EQ(w.msg, g.msg);
        }
        // Ping, Pong, Fence, Bye: no fields; the index check above suffices.
      },
      want);
}

// A std::string from a literal, embedded NULs included.
template <size_t N>
std::string Bin(const char (&lit)[N]) {
  return std::string(lit, N - 1);
}

// A binary rkey: every byte value, zeros included, some at both ends.
std::string BinaryKey(size_t n, uint8_t salt) {
  std::string k(n, '\0');
  for (size_t i = 0; i < n; ++i) k[i] = static_cast<char>((i * 37 + salt) & 0xff);
  if (n > 0) k[0] = '\0';
  if (n > 1) k[n - 1] = '\0';
  return k;
}

Region MakeRegion(uint64_t id, uint64_t addr, uint64_t len, uint32_t type, std::string rkey) {
  Region r;
  r.id = id;
  r.addr = addr;
  r.len = len;
  r.mem_type = type;
  r.rkey = std::move(rkey);
  return r;
}

// One sample message of every type, with fields that fill every width.
std::vector<Message> AllSamples() {
  std::vector<Message> v;
  v.push_back(Msg(1, Hello{"10.0.0.1:26000", "[::1]:26001", "node-\x01\x02-abc", 0, ""}));
  v.push_back(Msg(1, Hello{"10.0.0.1:26000", "[::1]:26001", "n", 0xffffffffu, std::string(kMaxAuthField, '\0')}));
  // With the optional liveness pair (a Hello without it, above, still decodes).
  v.push_back(Msg(1, Hello{"10.0.0.1:26000", "[::1]:26001", "n", 0, "", 10000, 120000}));
  v.push_back(Msg(1, Hello{"a", "b", "n", 0, "", 0xffffffffu, 0xffffffffu}));
  HelloAck ack;
  ack.status = 103902;
  ack.node_id = "node-b";
  ack.transport_address = Bin("\x00\x01ucx-addr\x00\xff");
  ack.regions.push_back(MakeRegion(1, 0x7f0000001000ull, 4096, 1, BinaryKey(40, 1)));
  ack.regions.push_back(MakeRegion(2, 0xffffffffffffffffull, 0xfffffffffffffffeull, 0, BinaryKey(1, 2)));
  ack.regions.push_back(MakeRegion(0xfedcba9876543210ull, 0, 1, 0xffffffffu, ""));
  ack.regions.push_back(MakeRegion(4, 0x2000, 8192, 1, std::string(16, '\0')));
  v.push_back(Msg(2, ack));
  ack.proof = BinaryKey(32, 9);
  v.push_back(Msg(2, ack));
  ack.metadata.push_back(Metadata{"caches", 7, Bin("blob\0with\0nul")});
  ack.metadata.push_back(Metadata{std::string(kMaxMetadataName, 'n'), 0xffffffffffffffffull, ""});
  v.push_back(Msg(2, ack));
  v.push_back(Msg(0, MetadataUpdate{Metadata{"caches", 8, std::string(kMaxMetadataBlob, 'b')}}));
  v.push_back(Msg(1, AuthChallenge{BinaryKey(32, 3)}));
  v.push_back(Msg(2, AuthResponse{BinaryKey(kMaxAuthField, 4)}));
  v.push_back(Msg(5, AuthChallenge{""}));
  v.push_back(Msg(3, RegionAdd{MakeRegion(9, 0x1234567890abcdefull, 1ull << 40, 0, BinaryKey(300, 7))}));
  v.push_back(Msg(4, RegionDel{0x8000000000000001ull}));
  v.push_back(Msg(0xffffffffffffffffull, Ack{203900}));
  v.push_back(Msg(6, Notify{Bin("name\0with\0nul"), std::string(1024, 'm')}));
  v.push_back(Msg(7, Ping{}));
  v.push_back(Msg(8, Pong{}));
  v.push_back(Msg(9, Fence{}));
  v.push_back(Msg(0, Bye{}));
  v.push_back(Msg(10, TableRequest{}));
  return v;
}

// ------------------------------------------------------------ header layout

TEST(WireTest, HeaderLayoutIsLittleEndianAsDocumented) {
  std::string f = EncodeOrDie(Msg(0x0102030405060708ull, Ack{0xa1b2c3d4}));
  ASSERT_EQ(f.size(), kHeaderSize + 4);
  EXPECT_EQ(f.substr(0, 4), "ADXL");
  EXPECT_EQ(GetLe(f, 0, 4), kMagic);
  EXPECT_EQ(GetLe(f, 4, 2), kVersion);
  EXPECT_EQ(GetLe(f, 6, 2), Code(Type::kAck));
  EXPECT_EQ(GetLe(f, 8, 4), 4u);  // payload length
  EXPECT_EQ(GetLe(f, 12, 4), 0u);  // reserved
  EXPECT_EQ(GetLe(f, 16, 8), 0x0102030405060708ull);
  EXPECT_EQ(GetLe(f, 24, 4), 0xa1b2c3d4u);
}

TEST(WireTest, EmptyBodiesHaveEmptyPayloads) {
  for (Body b : {Body(Ping{}), Body(Pong{}), Body(Fence{}), Body(Bye{}), Body(TableRequest{})}) {
    std::string f = EncodeOrDie(Msg(1, b));
    EXPECT_EQ(f.size(), kHeaderSize) << TypeName(TypeOf(b));
    EXPECT_EQ(GetLe(f, 8, 4), 0u);
  }
}

TEST(WireTest, TypeCodesAreStable) {
  EXPECT_EQ(TypeOf(Hello{}), Type::kHello);
  EXPECT_EQ(TypeOf(HelloAck{}), Type::kHelloAck);
  EXPECT_EQ(TypeOf(RegionAdd{}), Type::kRegionAdd);
  EXPECT_EQ(TypeOf(RegionDel{}), Type::kRegionDel);
  EXPECT_EQ(TypeOf(Ack{}), Type::kAck);
  EXPECT_EQ(TypeOf(Notify{}), Type::kNotify);
  EXPECT_EQ(TypeOf(Ping{}), Type::kPing);
  EXPECT_EQ(TypeOf(Pong{}), Type::kPong);
  EXPECT_EQ(TypeOf(Fence{}), Type::kFence);
  EXPECT_EQ(TypeOf(Bye{}), Type::kBye);
  EXPECT_EQ(TypeOf(AuthChallenge{}), Type::kAuthChallenge);
  EXPECT_EQ(TypeOf(AuthResponse{}), Type::kAuthResponse);
  EXPECT_EQ(TypeOf(TableRequest{}), Type::kTableRequest);
  EXPECT_EQ(TypeOf(MetadataUpdate{}), Type::kMetadataUpdate);
  EXPECT_EQ(Code(Type::kMetadataUpdate), 14);
  EXPECT_EQ(Code(Type::kTableRequest), 13);
  EXPECT_EQ(Code(Type::kHello), 1);
  EXPECT_EQ(Code(Type::kBye), 10);
  EXPECT_EQ(Code(Type::kAuthChallenge), 11);
  EXPECT_EQ(Code(Type::kAuthResponse), 12);
  EXPECT_STREQ(TypeName(Type::kAuthChallenge), "AuthChallenge");
  EXPECT_STREQ(TypeName(Type::kAuthResponse), "AuthResponse");
  EXPECT_STREQ(TypeName(Type::kHelloAck), "HelloAck");
  EXPECT_STREQ(TypeName(Type::kBye), "Bye");
}

// ---------------------------------------------------------------- round trip

TEST(WireTest, EveryTypeRoundTripsFedInOnePiece) {
  for (const Message &m : AllSamples()) {
    SCOPED_TRACE(TypeName(TypeOf(m.body)));
    std::string f = EncodeOrDie(m);
    FrameReader r;
    r.Feed(f.data(), f.size());
    Message got;
    std::string why;
    ASSERT_EQ(r.Next(&got, &why), Result::kMessage) << why;
    EXPECT_EQ(got.seq, m.seq);
    ExpectSameBody(m.body, got.body);
    EXPECT_EQ(r.buffered(), 0u);
    EXPECT_EQ(r.Next(&got, &why), Result::kNeedMore);
  }
}

TEST(WireTest, EveryTypeRoundTripsFedOneByteAtATime) {
  for (const Message &m : AllSamples()) {
    SCOPED_TRACE(TypeName(TypeOf(m.body)));
    std::string f = EncodeOrDie(m);
    FrameReader r;
    Message got;
    std::string why;
    for (size_t i = 0; i + 1 < f.size(); ++i) {
      r.Feed(&f[i], 1);
      ASSERT_EQ(r.Next(&got, &why), Result::kNeedMore) << "after " << i + 1 << " of " << f.size() << " bytes";
      EXPECT_EQ(r.buffered(), i + 1);
    }
    r.Feed(&f[f.size() - 1], 1);
    ASSERT_EQ(r.Next(&got, &why), Result::kMessage) << why;
    EXPECT_EQ(got.seq, m.seq);
    ExpectSameBody(m.body, got.body);
    EXPECT_EQ(r.buffered(), 0u);
  }
}

TEST(WireTest, DecodePayloadDecodesWhatEncodeWrote) {
  for (const Message &m : AllSamples()) {
    SCOPED_TRACE(TypeName(TypeOf(m.body)));
    std::string f = EncodeOrDie(m);
    Body got;
    std::string why;
    ASSERT_TRUE(DecodePayload(Code(TypeOf(m.body)),
                              reinterpret_cast<const uint8_t *>(f.data()) + kHeaderSize, f.size() - kHeaderSize,
                              &got, &why))
        << why;
    ExpectSameBody(m.body, got);
  }
}

TEST(WireTest, HelloAckWithNoRegionsRoundTrips) {
  HelloAck ack;
  ack.status = 0;
  Message m = Msg(5, ack);
  std::string f = EncodeOrDie(m);
  FrameReader r;
  r.Feed(f.data(), f.size());
  Message got;
  std::string why;
  ASSERT_EQ(r.Next(&got, &why), Result::kMessage) << why;
  EXPECT_TRUE(std::get<HelloAck>(got.body).regions.empty());
}

// A server encodes each region once (EncodeRegion) and appends the bytes to
// every HelloAck (HelloAck::encoded_regions): on the wire they are regions
// like any other, after `regions`, and the frame is byte for byte the one
// with all of them in `regions`.
TEST(WireTest, PreEncodedRegionsAreRegionsOnTheWire) {
  const Region a = MakeRegion(1, 0x1000, 64, 0, "key-a");
  const Region b = MakeRegion(2, 0x2000, 128, 1, std::string(300, 'b'));
  const Region c = MakeRegion(3, 0x3000, 256, 0, "");
  std::string enc_b, enc_c;
  ASSERT_TRUE(EncodeRegion(b, &enc_b));
  ASSERT_TRUE(EncodeRegion(c, &enc_c));
  HelloAck mixed;
  mixed.node_id = "node";
  mixed.regions = {a};
  mixed.encoded_regions = {&enc_b, &enc_c};
  HelloAck plain;
  plain.node_id = "node";
  plain.regions = {a, b, c};
  std::string f_mixed, f_plain;
  ASSERT_TRUE(Encode(7, mixed, &f_mixed));
  ASSERT_TRUE(Encode(7, plain, &f_plain));
  EXPECT_EQ(f_mixed, f_plain);
  FrameReader r;
  r.Feed(f_mixed.data(), f_mixed.size());
  Message got;
  std::string why;
  ASSERT_EQ(r.Next(&got, &why), Result::kMessage) << why;
  const HelloAck &ack = std::get<HelloAck>(got.body);
  EXPECT_TRUE(ack.encoded_regions.empty());
  ExpectSameBody(Body{plain}, got.body);
}

TEST(WireTest, EncodeRegionRefusesAnOversizedKeyAndAppendsNothing) {
  std::string out = "prefix";
  EXPECT_FALSE(EncodeRegion(MakeRegion(1, 1, 1, 0, std::string(kMaxString + 1, 'k')), &out));
  EXPECT_EQ(out, "prefix");
}

TEST(WireTest, PreEncodedRegionsCountTowardsMaxRegions) {
  std::string one;
  ASSERT_TRUE(EncodeRegion(MakeRegion(1, 1, 1, 0, "k"), &one));
  HelloAck ack;
  ack.regions.resize(kMaxRegions);
  ack.encoded_regions = {&one};
  std::string out;
  EXPECT_FALSE(Encode(1, ack, &out));
  EXPECT_TRUE(out.empty());
}

TEST(WireTest, SeveralFramesBackToBack) {
  std::vector<Message> all = AllSamples();
  std::string stream;
  for (const Message &m : all) ASSERT_TRUE(Encode(m, &stream));  // Encode appends
  FrameReader r;
  r.Feed(stream.data(), stream.size());
  for (const Message &m : all) {
    SCOPED_TRACE(TypeName(TypeOf(m.body)));
    Message got;
    std::string why;
    ASSERT_EQ(r.Next(&got, &why), Result::kMessage) << why;
    EXPECT_EQ(got.seq, m.seq);
    ExpectSameBody(m.body, got.body);
  }
  Message got;
  std::string why;
  EXPECT_EQ(r.Next(&got, &why), Result::kNeedMore);
  EXPECT_EQ(r.buffered(), 0u);
}

TEST(WireTest, SeveralFramesBackToBackFedOneByteAtATime) {
  std::vector<Message> all = AllSamples();
  std::string stream;
  for (const Message &m : all) ASSERT_TRUE(Encode(m, &stream));
  FrameReader r;
  size_t next = 0;
  for (size_t i = 0; i < stream.size(); ++i) {
    r.Feed(&stream[i], 1);
    Message got;
    std::string why;
    Result res = r.Next(&got, &why);
    ASSERT_NE(res, Result::kError) << why;
    if (res == Result::kMessage) {
      ASSERT_LT(next, all.size());
      EXPECT_EQ(got.seq, all[next].seq);
      ExpectSameBody(all[next].body, got.body);
      ++next;
    }
  }
  EXPECT_EQ(next, all.size());
}

TEST(WireTest, PartialTrailingFrameSurvivesBufferCompaction) {
  // More than 64 KiB of frames followed by half a frame: the reader drops
  // consumed bytes at some point and must keep the unread half intact.
  const std::string big(1000, 'x');
  std::string stream;
  const int kFrames = 100;
  for (int i = 0; i < kFrames; ++i) ASSERT_TRUE(Encode(Msg(i, Notify{"n" + std::to_string(i), big}), &stream));
  std::string last;
  ASSERT_TRUE(Encode(Msg(12345, Notify{"last", BinaryKey(500, 3)}), &last));
  stream += last.substr(0, last.size() / 2);
  FrameReader r;
  r.Feed(stream.data(), stream.size());
  Message got;
  std::string why;
  for (int i = 0; i < kFrames; ++i) {
    ASSERT_EQ(r.Next(&got, &why), Result::kMessage) << why;
    EXPECT_EQ(got.seq, static_cast<uint64_t>(i));
    EXPECT_EQ(std::get<Notify>(got.body).name, "n" + std::to_string(i));
  }
  EXPECT_EQ(r.Next(&got, &why), Result::kNeedMore);
  EXPECT_EQ(r.buffered(), last.size() / 2);
  r.Feed(last.data() + last.size() / 2, last.size() - last.size() / 2);
  ASSERT_EQ(r.Next(&got, &why), Result::kMessage) << why;
  EXPECT_EQ(got.seq, 12345u);
  EXPECT_EQ(std::get<Notify>(got.body).name, "last");
  EXPECT_EQ(std::get<Notify>(got.body).msg, BinaryKey(500, 3));
}

TEST(WireTest, MaxSizedStringsAndRegionsRoundTrip) {
  Message n = Msg(1, Notify{std::string(kMaxString, 'a'), std::string(kMaxString, 'b')});
  HelloAck ack;
  for (size_t i = 0; i < kMaxRegions; ++i) ack.regions.push_back(MakeRegion(i, i * 4096, 4096, 1, "k"));
  Message h = Msg(2, ack);
  for (const Message &m : {n, h}) {
    SCOPED_TRACE(TypeName(TypeOf(m.body)));
    std::string f = EncodeOrDie(m);
    FrameReader r;
    r.Feed(f.data(), f.size());
    Message got;
    std::string why;
    ASSERT_EQ(r.Next(&got, &why), Result::kMessage) << why;
    ExpectSameBody(m.body, got.body);
  }
}

// -------------------------------------------------------------- Encode limits

TEST(WireTest, EncodeRefusesStringOverMaxString) {
  std::string out = "prefix";
  const std::string too_long(kMaxString + 1, 's');
  EXPECT_FALSE(Encode(Msg(1, Notify{too_long, ""}), &out));
  EXPECT_FALSE(Encode(Msg(1, Notify{"", too_long}), &out));
  EXPECT_FALSE(Encode(Msg(1, Hello{"a", "b", too_long, 0, ""}), &out));
  HelloAck ack;
  ack.transport_address = too_long;
  EXPECT_FALSE(Encode(Msg(1, ack), &out));
  EXPECT_FALSE(Encode(Msg(1, RegionAdd{MakeRegion(1, 1, 1, 0, too_long)}), &out));
  EXPECT_EQ(out, "prefix");  // nothing appended by a refused Encode
}

TEST(WireTest, EncodeRefusesMoreThanMaxRegions) {
  HelloAck ack;
  ack.regions.resize(kMaxRegions + 1);
  std::string out = "prefix";
  EXPECT_FALSE(Encode(Msg(1, ack), &out));
  EXPECT_EQ(out, "prefix");
}

TEST(WireTest, EncodeRefusesRegionWithOversizedKey) {
  HelloAck ack;
  ack.regions.push_back(MakeRegion(1, 1, 1, 0, "ok"));
  ack.regions.push_back(MakeRegion(2, 2, 2, 0, std::string(kMaxString + 1, 'k')));
  std::string out;
  EXPECT_FALSE(Encode(Msg(1, ack), &out));
  EXPECT_TRUE(out.empty());
}

TEST(WireTest, EncodeRefusesPayloadOverMaxPayload) {
  // Each field within its limit, the total over kMaxPayload.
  HelloAck ack;
  const size_t n = kMaxPayload / kMaxString + 1;
  for (size_t i = 0; i < n; ++i) ack.regions.push_back(MakeRegion(i, i, 1, 0, std::string(kMaxString, 'k')));
  std::string out = "prefix";
  EXPECT_FALSE(Encode(Msg(1, ack), &out));
  EXPECT_EQ(out, "prefix");
}

// ---------------------------------------------------------- malformed frames

// Feeds `bytes` in one piece and expects kError with a reason.
void ExpectError(const std::string &bytes) {
  FrameReader r;
  r.Feed(bytes.data(), bytes.size());
  Message got;
  std::string why;
  EXPECT_EQ(r.Next(&got, &why), Result::kError);
  EXPECT_FALSE(why.empty());
}

TEST(WireTest, RawFrameHelperMatchesEncode) {
  // Guards the builders the malformed-frame tests use, here and in the
  // multi-process tests (tests/support/wire_frames.h).
  std::string payload;
  PutLe(&payload, 7, 4);
  EXPECT_EQ(Frame(Code(Type::kAck), payload, 3), EncodeOrDie(Msg(3, Ack{7})));
  EXPECT_EQ(Frame(Code(Type::kNotify), Str("a") + Str("bc")),
            EncodeOrDie(Msg(1, Notify{"a", "bc"})));
  EXPECT_EQ(adxl_test::wire_frames::Encoded(3, Ack{7}), EncodeOrDie(Msg(3, Ack{7})));
  EXPECT_EQ(adxl_test::wire_frames::Encoded(1, Notify{std::string(kMaxString + 1, 'n'), ""}), "");
  const auto h = adxl_test::wire_frames::ParseHeader(EncodeOrDie(Msg(0x0102030405060708ull, Notify{"a", "bc"})));
  EXPECT_EQ(h.magic, kMagic);
  EXPECT_EQ(h.version, kVersion);
  EXPECT_EQ(h.type, Code(Type::kNotify));
  EXPECT_EQ(h.length, Str("a").size() + Str("bc").size());
  EXPECT_EQ(h.seq, 0x0102030405060708ull);
}

TEST(WireTest, BadMagicIsError) {
  ExpectError(Frame(Code(Type::kPing), "", 1, kVersion, 0x4c584442));
  ExpectError(Frame(Code(Type::kPing), "", 1, kVersion, 0));
  std::string f = EncodeOrDie(Msg(1, Ping{}));
  f[0] = 'a';
  ExpectError(f);
}

TEST(WireTest, BadMagicIsErrorAsSoonAsHeaderArrives) {
  // An HTTP request, say: refused without waiting for a payload.
  ExpectError("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
}

TEST(WireTest, BadVersionIsError) {
  ExpectError(Frame(Code(Type::kPing), "", 1, 0));
  ExpectError(Frame(Code(Type::kPing), "", 1, kVersion + 1));
  ExpectError(Frame(Code(Type::kPing), "", 1, 0xffff));
}

TEST(WireTest, UnknownTypeIsError) {
  ExpectError(Frame(0, ""));
  ExpectError(Frame(11, ""));
  ExpectError(Frame(15, ""));
  ExpectError(Frame(15, std::string(4, '\0')));
  ExpectError(Frame(Code(Type::kTableRequest), std::string(4, '\0')));  // has no payload
  ExpectError(Frame(0xffff, "abcd"));
}

TEST(WireTest, PayloadLengthOverLimitIsErrorBeforePayloadArrives) {
  std::string h = Header(Code(Type::kNotify), kMaxPayload + 1);
  ExpectError(h);  // header only: must not wait for 4 MiB
  std::string h2 = h;
  h2[8] = h2[9] = h2[10] = h2[11] = '\xff';  // length 0xffffffff
  ExpectError(h2);
}

TEST(WireTest, PayloadLengthAtLimitWaitsForMore) {
  std::string h = Header(Code(Type::kNotify), kMaxPayload);
  FrameReader r;
  r.Feed(h.data(), h.size());
  Message got;
  std::string why;
  EXPECT_EQ(r.Next(&got, &why), Result::kNeedMore);
}

TEST(WireTest, StringLengthPrefixLargerThanRestIsError) {
  // Notify whose first string claims 100 bytes, but only 10 follow.
  ExpectError(Frame(Code(Type::kNotify), [] {
    std::string p;
    PutLe(&p, 100, 4);
    return p + std::string(10, 'x');
  }()));
  // Second string of a Hello claims more than is left.
  ExpectError(Frame(Code(Type::kHello), [] {
    std::string p = Str("a");
    PutLe(&p, 5, 4);
    return p + "abc";
  }()));
  // A string length over kMaxString.
  ExpectError(Frame(Code(Type::kNotify), [] {
    std::string p;
    PutLe(&p, kMaxString + 1, 4);
    return p + std::string(kMaxString + 1, 'x') + Str("");
  }()));
  // A string length of 0xffffffff.
  ExpectError(Frame(Code(Type::kNotify), [] {
    std::string p;
    PutLe(&p, 0xffffffffu, 4);
    return p;
  }()));
}

TEST(WireTest, TruncatedFixedFieldsAreError) {
  ExpectError(Frame(Code(Type::kAck), "abc"));       // u32 needs 4
  ExpectError(Frame(Code(Type::kRegionDel), "abcdefg"));  // u64 needs 8
  ExpectError(Frame(Code(Type::kAck), ""));
  ExpectError(Frame(Code(Type::kHello), ""));
  // RegionAdd cut inside the region.
  std::string f = EncodeOrDie(Msg(1, RegionAdd{MakeRegion(1, 2, 3, 0, "key")}));
  std::string payload = f.substr(kHeaderSize, 20);
  ExpectError(Frame(Code(Type::kRegionAdd), payload));
}

TEST(WireTest, HelloAckRegionCountLargerThanRegionsIsError) {
  std::string p;
  PutLe(&p, 0, 4);  // status
  p += Str("node") + Str("addr");
  PutLe(&p, 2, 4);  // claims two regions
  std::string one = EncodeOrDie(Msg(1, RegionAdd{MakeRegion(1, 2, 3, 0, "k")})).substr(kHeaderSize);
  ExpectError(Frame(Code(Type::kHelloAck), p + one));
}

TEST(WireTest, HelloAckRegionCountOverLimitIsError) {
  // kMaxRegions + 1 well-formed regions: refused for the count alone.
  std::string p;
  PutLe(&p, 0, 4);
  p += Str("") + Str("");
  PutLe(&p, kMaxRegions + 1, 4);
  const std::string one = EncodeOrDie(Msg(1, RegionAdd{MakeRegion(1, 2, 3, 0, "k")})).substr(kHeaderSize);
  for (size_t i = 0; i < kMaxRegions + 1; ++i) p += one;
  ASSERT_LE(p.size(), kMaxPayload);
  ExpectError(Frame(Code(Type::kHelloAck), p));
}

TEST(WireTest, TrailingBytesInsidePayloadAreError) {
  // Declared length larger than the fields: every type must decode exactly.
  for (const Message &m : AllSamples()) {
    SCOPED_TRACE(TypeName(TypeOf(m.body)));
    std::string payload = EncodeOrDie(m).substr(kHeaderSize);
    ExpectError(Frame(Code(TypeOf(m.body)), payload + std::string(1, '\0')));
    ExpectError(Frame(Code(TypeOf(m.body)), payload + "garbage"));
  }
}

TEST(WireTest, HelloLivenessPairOfZerosIsError) {
  // The encoder leaves a (0, 0) pair out, so a frame carrying one would be a
  // second encoding of the same Hello: refused (found by the wire fuzzer).
  const std::string bare = EncodeOrDie(Msg(1, Hello{"a", "b", "n", 0, ""})).substr(kHeaderSize);
  ExpectError(Frame(Code(Type::kHello), bare + std::string(8, '\0')));
  // One of the two set is a real pair and round-trips.
  std::string half = bare + std::string(4, '\0');
  half += std::string("\x10\x27\0\0", 4);  // dead_after_ms = 10000
  Body out;
  std::string why;
  ASSERT_TRUE(DecodePayload(Code(Type::kHello), reinterpret_cast<const uint8_t *>(half.data()),
                            half.size(), &out, &why))
      << why;
  EXPECT_EQ(std::get<Hello>(out).heartbeat_ms, 0u);
  EXPECT_EQ(std::get<Hello>(out).dead_after_ms, 10000u);
  EXPECT_EQ(EncodeOrDie(Msg(1, std::get<Hello>(out))).substr(kHeaderSize), half);
}

TEST(WireTest, ErrorInSecondFrameAfterGoodFirst) {
  std::string stream = EncodeOrDie(Msg(1, Ack{0}));
  stream += Frame(Code(Type::kAck), "toolong");
  FrameReader r;
  r.Feed(stream.data(), stream.size());
  Message got;
  std::string why;
  ASSERT_EQ(r.Next(&got, &why), Result::kMessage) << why;
  EXPECT_EQ(r.Next(&got, &why), Result::kError);
  EXPECT_FALSE(why.empty());
}

TEST(WireTest, DecodePayloadRejectsUnknownTypeAndTrailingBytes) {
  Body out;
  std::string why;
  const uint8_t bytes[8] = {0};
  EXPECT_FALSE(DecodePayload(42, bytes, 0, &out, &why));
  EXPECT_FALSE(why.empty());
  why.clear();
  EXPECT_FALSE(DecodePayload(Code(Type::kPing), bytes, 1, &out, &why));
  EXPECT_FALSE(why.empty());
  why.clear();
  EXPECT_TRUE(DecodePayload(Code(Type::kRegionDel), bytes, 8, &out, &why)) << why;
  EXPECT_EQ(std::get<RegionDel>(out).id, 0u);
}

// ------------------------------------------------ access control (version 2)

TEST(WireTest, AuthFieldsOverLimitAreRefusedBothWays) {
  const std::string too_long(kMaxAuthField + 1, 'x');
  std::string out;
  EXPECT_FALSE(Encode(Msg(1, Hello{"a", "b", "n", kHelloAuth, too_long}), &out));
  EXPECT_FALSE(Encode(Msg(1, AuthChallenge{too_long}), &out));
  EXPECT_FALSE(Encode(Msg(1, AuthResponse{too_long}), &out));
  HelloAck ack;
  ack.proof = too_long;
  EXPECT_FALSE(Encode(Msg(1, ack), &out));
  EXPECT_TRUE(out.empty());
  // The decoder refuses the same fields by hand.
  ExpectError(Frame(Code(Type::kAuthChallenge), Str(too_long)));
  ExpectError(Frame(Code(Type::kAuthResponse), Str(too_long)));
  std::string hello = Str("a") + Str("b") + Str("n");
  PutLe(&hello, kHelloAuth, 4);
  ExpectError(Frame(Code(Type::kHello), hello + Str(too_long)));
  std::string ack_p;
  PutLe(&ack_p, 0, 4);
  ack_p += Str("") + Str("");
  PutLe(&ack_p, 0, 4);
  ExpectError(Frame(Code(Type::kHelloAck), ack_p + Str(too_long)));
  // At the limit: accepted.
  EXPECT_TRUE(Encode(Msg(1, AuthResponse{std::string(kMaxAuthField, 'x')}), &out));
}

TEST(WireTest, Version1LayoutsOfHelloAndHelloAckAreErrors) {
  // Hello without flags and nonce, HelloAck without the proof.
  ExpectError(Frame(Code(Type::kHello), Str("a") + Str("b") + Str("n")));
  std::string ack_p;
  PutLe(&ack_p, 0, 4);
  ack_p += Str("") + Str("");
  PutLe(&ack_p, 0, 4);
  ExpectError(Frame(Code(Type::kHelloAck), ack_p));
  // A version-2 HelloAck (the proof, then no metadata count) is an error too.
  ExpectError(Frame(Code(Type::kHelloAck), ack_p + Str("")));
  // And a frame of wire version 1 is refused by its header.
  ExpectError(Frame(Code(Type::kPing), "", 1, 1));
}

TEST(WireTest, AuthMessagesHaveTheDocumentedLayout) {
  std::string f = EncodeOrDie(Msg(2, AuthResponse{"pq"}));
  EXPECT_EQ(GetLe(f, 6, 2), Code(Type::kAuthResponse));
  EXPECT_EQ(f.substr(kHeaderSize), Str("pq"));
  f = EncodeOrDie(Msg(1, Hello{"f", "t", "n", kHelloAuth, "nonce"}));
  std::string want = Str("f") + Str("t") + Str("n");
  PutLe(&want, kHelloAuth, 4);
  EXPECT_EQ(f.substr(kHeaderSize), want + Str("nonce"));
}

}  // namespace
}  // namespace wire
}  // namespace adxl

namespace adxl {
namespace wire {
namespace {

TEST(WireTest, MetadataOverItsLimitsIsRefusedBothWays) {
  std::string out;
  EXPECT_FALSE(Encode(Msg(0, MetadataUpdate{Metadata{std::string(kMaxMetadataName + 1, 'n'), 1, ""}}), &out));
  EXPECT_FALSE(Encode(Msg(0, MetadataUpdate{Metadata{"n", 1, std::string(kMaxMetadataBlob + 1, 'b')}}), &out));
  HelloAck ack;
  ack.metadata.resize(kMaxMetadataEntries + 1);
  EXPECT_FALSE(Encode(Msg(1, ack), &out));
  EXPECT_TRUE(out.empty());
  std::string p = Str("n");
  PutLe(&p, 1, 8);
  ExpectError(Frame(Code(Type::kMetadataUpdate), p));  // blob missing
  std::string big = Str(std::string(kMaxMetadataName + 1, 'n'));
  PutLe(&big, 1, 8);
  ExpectError(Frame(Code(Type::kMetadataUpdate), big + Str("")));
  std::string ack_p;
  PutLe(&ack_p, 0, 4);
  ack_p += Str("") + Str("");
  PutLe(&ack_p, 0, 4);
  ack_p += Str("");
  PutLe(&ack_p, kMaxMetadataEntries + 1, 4);
  ExpectError(Frame(Code(Type::kHelloAck), ack_p));
}

}  // namespace
}  // namespace wire
}  // namespace adxl
