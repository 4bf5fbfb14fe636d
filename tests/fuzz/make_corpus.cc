// Writes the seed corpus of the wire fuzzer (tests/fuzz/corpus/): one valid
// frame of every message type, a stream of several frames, and truncated or
// malformed frames.  The files are checked in; this program is how they were
// made, and how to remake them after a change of the wire format:
//
//   g++ -std=c++17 -I src -I tests/support tests/fuzz/make_corpus.cc src/control/wire.cc -o /tmp/make_corpus
//   /tmp/make_corpus tests/fuzz/corpus
//
// (from the repository root; not part of the CMake build).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "control/wire.h"
#include "wire_frames.h"

using namespace adxl::wire;

namespace {

std::string Enc(uint64_t seq, Body body) {
  std::string out;
  if (!Encode(Message{seq, std::move(body)}, &out)) {
    std::fprintf(stderr, "Encode refused a corpus message\n");
    std::exit(1);
  }
  return out;
}

// Malformed frames byte by byte (tests/support/wire_frames.h).
using adxl_test::wire_frames::Header;
using adxl_test::wire_frames::PutLe;

Region MakeRegion(uint64_t id, uint64_t addr, uint64_t len, uint32_t type, std::string rkey) {
  Region r;
  r.id = id;
  r.addr = addr;
  r.len = len;
  r.mem_type = type;
  r.rkey = std::move(rkey);
  return r;
}

void Write(const std::string &dir, const std::string &name, const std::string &bytes) {
  const std::string path = dir + "/" + name;
  FILE *f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::printf("%-28s %5zu bytes\n", name.c_str(), bytes.size());
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];

  // One valid frame of every type.
  const std::string hello = Enc(1, Hello{"127.0.0.1", "127.0.0.1:26000", "node-0123456789abcdef"});
  HelloAck ack;
  ack.status = 0;
  ack.node_id = "node-0123456789abcdef";
  ack.transport_address = std::string("\x01\x00\x02ucx-worker-address\xff", 22);
  ack.regions.push_back(MakeRegion(1, 0x7f0000001000ull, 4096, 1, std::string("\x00\x01rkey\x02", 7)));
  ack.regions.push_back(MakeRegion(2, 0x7f0000400000ull, 1u << 20, 0, ""));
  const std::string hello_ack = Enc(1, ack);
  HelloAck refused;
  refused.status = 103900;  // PARAM_INVALID: wrong engine name
  refused.node_id = "n";
  const std::string notify = Enc(7, Notify{"kv_ready", "req-42 layer 0..31"});
  Write(dir, "valid_hello", hello);
  Write(dir, "valid_hello_ack", hello_ack);
  Write(dir, "valid_hello_ack_refused", Enc(1, refused));
  Write(dir, "valid_region_add", Enc(3, RegionAdd{MakeRegion(9, 0x1234567890abcdefull, 1ull << 40, 1, "k")}));
  Write(dir, "valid_region_del", Enc(4, RegionDel{9}));
  Write(dir, "valid_ack", Enc(3, Ack{0}));
  Write(dir, "valid_notify", notify);
  Write(dir, "valid_ping", Enc(0, Ping{}));
  Write(dir, "valid_pong", Enc(0, Pong{}));
  Write(dir, "valid_fence", Enc(11, Fence{}));
  Write(dir, "valid_bye", Enc(0, Bye{}));
  Write(dir, "valid_table_request", Enc(9, TableRequest{}));
  Write(dir, "valid_metadata_update", Enc(0, MetadataUpdate{Metadata{"caches", 3, std::string("t\0able", 6)}}));
  // Access control (wire version 2): a client with a token, the server's
  // challenge, the client's proof, the server's answer with its proof, and a
  // refusal (FAILED, no regions).
  const std::string nonce_c = std::string("\x00\x11\x22\x33\x44\x55\x66\x77", 8) + std::string(24, '\xa5');
  const std::string nonce_s = std::string(31, '\x5a') + std::string("\x00", 1);
  const std::string proof = std::string(32, '\xc3');
  Hello hello_auth_msg{"127.0.0.1", "127.0.0.1:26000", "node-0123456789abcdef", kHelloAuth, nonce_c};
  const std::string hello_auth = Enc(1, hello_auth_msg);
  const std::string auth_response = Enc(2, AuthResponse{proof});
  HelloAck ack_auth = ack;
  ack_auth.proof = std::string(32, '\x3c');
  HelloAck auth_refused;
  auth_refused.status = 503900;  // FAILED: authentication refused
  auth_refused.node_id = "n";
  Write(dir, "valid_hello_auth", hello_auth);
  Write(dir, "valid_auth_challenge", Enc(1, AuthChallenge{nonce_s}));
  Write(dir, "valid_auth_response", auth_response);
  Write(dir, "valid_hello_ack_auth", Enc(2, ack_auth));
  Write(dir, "valid_hello_ack_auth_refused", Enc(2, auth_refused));
  // An authenticating client's session.
  Write(dir, "stream_auth_session", hello_auth + auth_response + Enc(0, Ping{}) + notify + Enc(0, Bye{}));
  // A client's session: Hello, Ping, Notify, Fence, Bye back to back.
  Write(dir, "stream_session", hello + Enc(0, Ping{}) + notify + Enc(12, Fence{}) + Enc(0, Bye{}));

  // Truncated frames.
  Write(dir, "trunc_header", hello.substr(0, 13));
  Write(dir, "trunc_payload", hello.substr(0, hello.size() - 5));
  Write(dir, "trunc_second_frame", Enc(0, Ping{}) + hello_ack.substr(0, 40));

  // Malformed frames.
  Write(dir, "bad_magic", Header(7, 0, 1, kVersion, 0x50545448 /* "HTTP" */));
  Write(dir, "bad_version", Header(7, 0, 1, kVersion + 1));
  Write(dir, "bad_version_1", Header(7, 0, 1, 1));  // a peer of wire version 1 (no access control)
  Write(dir, "bad_type_0", Header(0, 0));
  Write(dir, "bad_type_14", Header(14, 4) + std::string(4, '\0'));
  Write(dir, "bad_version_2", Header(7, 0, 1, 2));  // a peer of wire version 2 (no TableRequest)
  Write(dir, "bad_table_request_payload", Header(13, 1) + "x");
  Write(dir, "bad_huge_length", Header(1, 0xfffffff0u));
  Write(dir, "bad_length_over_limit", Header(1, static_cast<uint32_t>(kMaxPayload + 1)));
  Write(dir, "bad_ping_with_payload", Header(7, 1) + "x");
  Write(dir, "bad_ack_short", Header(5, 3) + std::string(3, '\0'));
  // Three empty strings, flags, an empty nonce, then one byte too many.
  Write(dir, "bad_hello_trailing_byte", Header(1, 21) + std::string(20, '\0') + "!");
  {
    std::string p(16, '\0');  // Hello whose nonce is over kMaxAuthField
    PutLe(&p, kMaxAuthField + 1, 4);
    p += std::string(kMaxAuthField + 1, 'n');
    Write(dir, "bad_hello_nonce_limit", Header(1, static_cast<uint32_t>(p.size())) + p);
  }
  {
    std::string p;  // AuthChallenge whose nonce is over kMaxAuthField
    PutLe(&p, kMaxAuthField + 1, 4);
    p += std::string(kMaxAuthField + 1, 'n');
    Write(dir, "bad_auth_challenge_nonce_limit", Header(11, static_cast<uint32_t>(p.size())) + p);
  }
  {
    std::string p;  // AuthResponse with a byte after its proof
    PutLe(&p, 2, 4);
    p += "pp!";
    Write(dir, "bad_auth_response_trailing", Header(12, static_cast<uint32_t>(p.size())) + p);
  }
  {
    std::string p(16, '\0');  // HelloAck without the proof field (wire version 1 layout)
    Write(dir, "bad_hello_ack_no_proof", Header(2, static_cast<uint32_t>(p.size())) + p);
  }
  {
    std::string p;  // Hello whose first string claims more bytes than the payload holds
    PutLe(&p, 1000, 4);
    p += "abc";
    Write(dir, "bad_hello_string_overrun", Header(1, static_cast<uint32_t>(p.size())) + p);
  }
  {
    std::string p;  // Notify whose name is over kMaxString
    PutLe(&p, kMaxString + 1, 4);
    Write(dir, "bad_notify_string_limit", Header(6, static_cast<uint32_t>(p.size())) + p);
  }
  {
    std::string p;  // HelloAck announcing more than kMaxRegions regions
    PutLe(&p, 0, 4);
    PutLe(&p, 0, 4);
    PutLe(&p, 0, 4);
    PutLe(&p, kMaxRegions + 1, 4);
    Write(dir, "bad_hello_ack_region_count", Header(2, static_cast<uint32_t>(p.size())) + p);
  }
  {
    std::string p;  // HelloAck announcing 3 regions, carrying 1
    PutLe(&p, 0, 4);
    PutLe(&p, 0, 4);
    PutLe(&p, 0, 4);
    PutLe(&p, 3, 4);
    PutLe(&p, 1, 8);
    PutLe(&p, 4096, 8);
    PutLe(&p, 4096, 8);
    PutLe(&p, 1, 4);
    PutLe(&p, 0, 4);
    Write(dir, "bad_hello_ack_regions_short", Header(2, static_cast<uint32_t>(p.size())) + p);
  }
  Write(dir, "bad_after_valid", Enc(0, Ping{}) + Header(7, 0, 1, 0));
  Write(dir, "garbage_text", "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  {
    std::string g;  // deterministic binary noise
    uint32_t x = 0x12345678;
    for (int i = 0; i < 96; ++i) {
      x = x * 1103515245u + 12345u;
      g.push_back(static_cast<char>(x >> 24));
    }
    Write(dir, "garbage_binary", g);
  }
  return 0;
}
