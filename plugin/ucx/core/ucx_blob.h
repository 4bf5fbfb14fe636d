// The UCX plugin's two wire blobs, as structs with an encoder and a parser:
// the worker address (adxl_plugin_ops_t::get_address) and the packed remote
// key (mem_pack).  Both cross process boundaries through the engine's control
// channel, so the parsers take hostile bytes: every length is checked before
// it is used, nothing is read outside [data, data + len), and a blob with
// bytes left over is refused.  tests/fuzz/blob_fuzzer.cc fuzzes them,
// tests/unit/ucx_blob_test.cc tests them.  No UCX here: the UCP and cma parts
// are opaque bytes to this file.
//
// Formats (integers little-endian, as on every host this plugin builds for;
// "part" is [u32 length][length bytes]):
//   address  [part: UCP worker address][part: cma address (empty: no cma)]
//            [part: network paths], the paths part being zero or more
//            [4 bytes: IPv4 address, network order][u8 prefix length]
//            [part: UCP worker address of that path] (at most kMaxPaths,
//            prefix <= 32)
//   key      [part: ucp_rkey_pack bytes][part: HCCS part], the HCCS part
//            being [u8 flags][part: cma key][u64 base][u64 len][u64 offset]
//            [part: share path (empty: not shared)]; flags bit 0: the cma
//            key is usable, bit 1: the region is device memory.  base and
//            len are the region in the owner's address space, offset where
//            it starts in the file at share path.
//
// Thread-safety: free functions on caller-owned values; no shared state.
#ifndef ADXL_PLUGIN_UCX_CORE_UCX_BLOB_H_
#define ADXL_PLUGIN_UCX_CORE_UCX_BLOB_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ucx_blob {

// One network path of the RDMA lane (net_path.h): the interface's IPv4
// address and prefix length, by which the two sides pair their paths, and
// the path's own UCP worker address.
struct PathAddress {
  uint32_t ipv4 = 0;   // network byte order, as in struct in_addr
  uint8_t prefix = 0;  // subnet prefix length, <= 32
  std::string ucp;

  bool operator==(const PathAddress &o) const { return ipv4 == o.ipv4 && prefix == o.prefix && ucp == o.ucp; }
};

struct Address {
  // Paths one address may list; a blob with more is refused.
  static constexpr size_t kMaxPaths = 16;

  std::string ucp;  // ucp_worker_get_address bytes (empty: no UCP worker address)
  std::string cma;  // CmaTransport::address() (empty: no cma)
  std::vector<PathAddress> paths;  // ADXL_UCX_RDMA_PATHS (empty: one path, `ucp`)
};

struct Key {
  static constexpr uint8_t kCmaUsable = 0x1;
  static constexpr uint8_t kDevice = 0x2;

  std::string ucp;       // ucp_rkey_pack bytes
  uint8_t flags = 0;     // kCmaUsable | kDevice; other bits are kept, unused
  std::string cma_key;   // CmaTransport::Register's packed key (may be empty)
  uint64_t base = 0;     // the region's address at its owner
  uint64_t len = 0;      // the region's length
  uint64_t offset = 0;   // where the region starts in share_path's file
  std::string share_path;  // a file same-node peers may map; empty: none

  bool cma_usable() const { return (flags & kCmaUsable) != 0; }
  bool device() const { return (flags & kDevice) != 0; }
};

// Encoders: false (and *out unchanged) only when a part exceeds 4 GiB or an
// address lists more than kMaxPaths paths or a prefix over 32.
// Parsers: false when the blob is malformed (truncated, a length past its
// end, bytes left over, a share path with a NUL byte, more than kMaxPaths
// paths or a prefix over 32); *out is then
// unspecified.  Parse(Encode(x)) == x, and Encode(Parse(b)) == b byte for byte
// for every b Parse accepts (the encoding is canonical).
bool EncodeAddress(const Address &a, std::string *out);
bool ParseAddress(const void *data, size_t len, Address *out);
bool EncodeKey(const Key &k, std::string *out);
bool ParseKey(const void *data, size_t len, Key *out);

}  // namespace ucx_blob

#endif  // ADXL_PLUGIN_UCX_CORE_UCX_BLOB_H_
