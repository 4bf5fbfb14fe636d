// The control-channel wire format: every byte peers exchange over TCP.
//
// A frame is a 24-byte header followed by `length` payload bytes:
//   u32 magic "ADXL" | u16 version | u16 type | u32 length | u32 reserved | u64 seq
// all little-endian.  `seq` numbers requests; an Ack carries the seq it
// answers.  Payloads are sequences of fixed-width little-endian integers and
// length-prefixed (u32) byte strings.  Limits keep every message bounded:
// payload <= kMaxPayload, strings <= kMaxString, regions <= kMaxRegions.
// A frame with the wrong magic or version, an unknown type, a length over
// the limit, or a payload that does not decode exactly is an error, and the
// connection that sent it is closed.  This module is the only parser; the
// fuzz target in tests/fuzz drives it directly.
//
// Version 2 added access control (adxl.AuthToken): Hello carries flags and
// the client's nonce, AuthChallenge / AuthResponse carry the server's nonce
// and the client's proof, HelloAck the server's proof.  The handshake:
//   C->S Hello{from, to, node, flags, client_nonce}
//   [both have a token]  S->C AuthChallenge{server_nonce}
//                        C->S AuthResponse{client_proof}
//   S->C HelloAck{status, node, address, regions, server_proof}
// Proofs are HMAC-SHA256(token, role | from | to | client_nonce |
// server_nonce) (src/control/auth.h); a refused HelloAck carries no regions.
//
// Version 3 added TableRequest: registrations are pushed to peers without
// waiting for them (RegionAdd), and a peer whose transfer names a range it
// has not seen yet asks for the current table once before refusing it; and
// published metadata: HelloAck ends with the publisher's entries, and
// MetadataUpdate carries each later change.
#ifndef ADXL_SRC_CONTROL_WIRE_H_
#define ADXL_SRC_CONTROL_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace adxl {
namespace wire {

constexpr uint32_t kMagic = 0x4c584441;  // "ADXL" in memory order
constexpr uint16_t kVersion = 3;
constexpr size_t kHeaderSize = 24;
constexpr size_t kMaxPayload = 4u << 20;
constexpr size_t kMaxString = 64u << 10;
constexpr size_t kMaxRegions = 4096;
// Nonces and proofs of the authentication handshake (32 bytes in practice).
constexpr size_t kMaxAuthField = 64;
// Hello flags.
constexpr uint32_t kHelloAuth = 1;  // the client has an adxl.AuthToken
// Published metadata (adxl_ext.h): names, blobs, entries per engine.
constexpr size_t kMaxMetadataName = 256;
constexpr size_t kMaxMetadataBlob = 1u << 20;
constexpr size_t kMaxMetadataEntries = 64;
// What a server accepts from a client: Hello, Notify (<= 2 x 1 KiB), Ping,
// Fence, Bye and Acks are all far below this.
constexpr size_t kMaxClientPayload = 64u << 10;

enum class Type : uint16_t {
  kHello = 1,      // client -> server: who I am, whom I want
  kHelloAck = 2,   // server -> client: status, node, transport address, regions
  kRegionAdd = 3,  // server -> client: a new registration (acked)
  kRegionDel = 4,  // server -> client: a registration is going away (acked)
  kAck = 5,        // answer to any acked request
  kNotify = 6,     // client -> server: a notify (acked)
  kPing = 7,       // client -> server heartbeat
  kPong = 8,       // server -> client heartbeat answer
  kFence = 9,      // client -> server: drain what this link put in flight (acked)
  kBye = 10,       // either side: the link is closing
  kAuthChallenge = 11,  // server -> client: the server's nonce (both sides have a token)
  kAuthResponse = 12,   // client -> server: the client's proof
  kTableRequest = 13,   // client -> server: send me your current region table (acked after it)
  kMetadataUpdate = 14, // server -> client: a published blob, new or replaced
};

struct Region {
  uint64_t id = 0;
  uint64_t addr = 0;
  uint64_t len = 0;
  uint32_t mem_type = 0;
  std::string rkey;  // the plugin's packed key, opaque here
};

struct Hello {
  std::string from_engine;  // client's own name
  std::string to_engine;    // the name the client believes the server has
  std::string node_id;
  uint32_t flags = 0;     // kHelloAuth
  std::string nonce;      // the client's fresh nonce (<= kMaxAuthField)
  // The client's liveness settings, so that the server judges its silence by
  // the client's own period (core/heartbeat.h).  Optional on the wire: a
  // Hello that ends after `nonce` decodes with both 0 ("not said"); sent
  // as a pair, both or neither.
  uint32_t heartbeat_ms = 0;
  uint32_t dead_after_ms = 0;
};
// A named, versioned blob an engine publishes to the peers linked to it
// (adxl_ext.h PublishMetadata).
struct Metadata {
  std::string name;  // <= kMaxMetadataName
  uint64_t version = 0;
  std::string blob;  // <= kMaxMetadataBlob
};
struct HelloAck {
  uint32_t status = 0;
  std::string node_id;
  std::string transport_address;
  std::vector<Region> regions;
  // Sender side only: more regions, each already encoded by EncodeRegion
  // (a server encodes a region once, when it is registered, and appends the
  // bytes to every HelloAck; the pointees must outlive Encode).  They go on
  // the wire after `regions`, as regions; a decoder fills `regions` alone.
  std::vector<const std::string *> encoded_regions;
  std::string proof;  // the server's proof when authenticated, else empty (<= kMaxAuthField)
  std::vector<Metadata> metadata;  // <= kMaxMetadataEntries (version 3)
};
struct AuthChallenge {
  std::string nonce;  // the server's fresh nonce (<= kMaxAuthField)
};
struct AuthResponse {
  std::string proof;  // the client's proof (<= kMaxAuthField)
};
struct MetadataUpdate {  // server -> client: a blob was published or replaced (not acked)
  Metadata entry;
};
struct RegionAdd {
  Region region;
};
struct RegionDel {
  uint64_t id = 0;
};
struct Ack {
  uint32_t status = 0;
};
struct Notify {
  std::string name;
  std::string msg;
};
struct Ping {};
struct Pong {};
struct Fence {};
struct Bye {};
// Answered by a RegionAdd for every current region, then the Ack: a client
// whose transfer names a range it has not seen asks once (refresh on miss).
struct TableRequest {};

using Body = std::variant<Hello, HelloAck, RegionAdd, RegionDel, Ack, Notify, Ping, Pong, Fence, Bye, AuthChallenge,
                          AuthResponse, TableRequest, MetadataUpdate>;

struct Message {
  uint64_t seq = 0;
  Body body;
};

Type TypeOf(const Body &body);
const char *TypeName(Type t);

// Appends one region as it appears on the wire (inside a HelloAck or a
// RegionAdd).  False, nothing appended, when its key is over kMaxString.
bool EncodeRegion(const Region &r, std::string *out);

// Appends one encoded frame to *out.  Fails (false) only when a field is
// over a limit, so a sender can never emit what a receiver would refuse.
bool Encode(uint64_t seq, const Body &body, std::string *out);
inline bool Encode(const Message &msg, std::string *out) { return Encode(msg.seq, msg.body, out); }

// Incremental decoder over a byte stream.
class FrameReader {
 public:
  enum class Result { kMessage, kNeedMore, kError };
  // Appends received bytes.
  void Feed(const void *data, size_t len) { buf_.append(static_cast<const char *>(data), len); }
  // Extracts the next message; on kError *why says what was wrong and the
  // reader must not be used again.
  Result Next(Message *out, std::string *why);
  size_t buffered() const { return buf_.size() - pos_; }
  // Lowers the payload limit (a server reading clients only ever receives
  // small messages, so it refuses big frames before buffering them).
  void set_max_payload(size_t n) { max_payload_ = n < kMaxPayload ? n : kMaxPayload; }

 private:
  std::string buf_;
  size_t pos_ = 0;
  size_t max_payload_ = kMaxPayload;
};

// Decodes one payload of the given type (exposed for the fuzzer and tests).
bool DecodePayload(uint16_t type, const uint8_t *data, size_t len, Body *out, std::string *why);

}  // namespace wire
}  // namespace adxl

#endif  // ADXL_SRC_CONTROL_WIRE_H_
