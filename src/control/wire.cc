#include "control/wire.h"

#include <cstring>
#include <type_traits>

namespace adxl {
namespace wire {
namespace {

class Writer {
 public:
  explicit Writer(std::string *out) : out_(out) {}
  void U16(uint16_t v) { Le(v, 2); }
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  bool Str(const std::string &s, size_t max = kMaxString) {
    if (s.size() > max) return false;
    U32(static_cast<uint32_t>(s.size()));
    out_->append(s);
    return true;
  }
  bool MetadataOut(const Metadata &m) {
    if (!Str(m.name, kMaxMetadataName)) return false;
    U64(m.version);
    return Str(m.blob, kMaxMetadataBlob);
  }
  bool RegionOut(const Region &r) {
    if (r.rkey.size() > kMaxString) return false;
    U64(r.id);
    U64(r.addr);
    U64(r.len);
    U32(r.mem_type);
    return Str(r.rkey);
  }
  void Raw(const std::string &bytes) { out_->append(bytes); }

 private:
  void Le(uint64_t v, int n) {
    char b[8];
    for (int i = 0; i < n; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    out_->append(b, static_cast<size_t>(n));
  }
  std::string *out_;
};

class Reader {
 public:
  Reader(const uint8_t *p, size_t n) : p_(p), n_(n) {}
  bool U16(uint16_t *v) { return Le(v, 2); }
  bool U32(uint32_t *v) { return Le(v, 4); }
  bool U64(uint64_t *v) { return Le(v, 8); }
  bool Str(std::string *s, size_t max = kMaxString) {
    uint32_t len = 0;
    if (!U32(&len) || len > max || len > n_ - off_) return false;
    s->assign(reinterpret_cast<const char *>(p_ + off_), len);
    off_ += len;
    return true;
  }
  bool MetadataIn(Metadata *m) {
    return Str(&m->name, kMaxMetadataName) && U64(&m->version) && Str(&m->blob, kMaxMetadataBlob);
  }
  bool RegionIn(Region *r) { return U64(&r->id) && U64(&r->addr) && U64(&r->len) && U32(&r->mem_type) && Str(&r->rkey); }
  bool Done() const { return off_ == n_; }

 private:
  template <typename T>
  bool Le(T *v, int n) {
    if (n_ - off_ < static_cast<size_t>(n)) return false;
    uint64_t x = 0;
    for (int i = 0; i < n; ++i) x |= static_cast<uint64_t>(p_[off_ + i]) << (8 * i);
    off_ += n;
    *v = static_cast<T>(x);
    return true;
  }
  const uint8_t *p_;
  size_t n_;
  size_t off_ = 0;
};

bool EncodeBody(const Body &body, Writer &w) {
  return std::visit(
      [&w](const auto &m) -> bool {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, Hello>) {
          if (!w.Str(m.from_engine) || !w.Str(m.to_engine) || !w.Str(m.node_id)) return false;
          w.U32(m.flags);
          if (!w.Str(m.nonce, kMaxAuthField)) return false;
          if (m.heartbeat_ms != 0 || m.dead_after_ms != 0) {
            w.U32(m.heartbeat_ms);
            w.U32(m.dead_after_ms);
          }
          return true;
        } else if constexpr (std::is_same_v<M, AuthChallenge>) {
          return w.Str(m.nonce, kMaxAuthField);
        } else if constexpr (std::is_same_v<M, AuthResponse>) {
          return w.Str(m.proof, kMaxAuthField);
        } else if constexpr (std::is_same_v<M, HelloAck>) {
          const size_t count = m.regions.size() + m.encoded_regions.size();
          if (count > kMaxRegions) return false;
          w.U32(m.status);
          if (!w.Str(m.node_id) || !w.Str(m.transport_address)) return false;
          w.U32(static_cast<uint32_t>(count));
          for (const Region &r : m.regions) {
            if (!w.RegionOut(r)) return false;
          }
          for (const std::string *r : m.encoded_regions) w.Raw(*r);
          if (!w.Str(m.proof, kMaxAuthField) || m.metadata.size() > kMaxMetadataEntries) return false;
          w.U32(static_cast<uint32_t>(m.metadata.size()));
          for (const Metadata &e : m.metadata) {
            if (!w.MetadataOut(e)) return false;
          }
          return true;
        } else if constexpr (std::is_same_v<M, MetadataUpdate>) {
          return w.MetadataOut(m.entry);
        } else if constexpr (std::is_same_v<M, RegionAdd>) {
          return w.RegionOut(m.region);
        } else if constexpr (std::is_same_v<M, RegionDel>) {
          w.U64(m.id);
          return true;
        } else if constexpr (std::is_same_v<M, Ack>) {
          w.U32(m.status);
          return true;
        } else if constexpr (std::is_same_v<M, Notify>) {
          return w.Str(m.name) && w.Str(m.msg);
        } else {
          return true;  // Ping, Pong, Fence, Bye, TableRequest: empty payloads
        }
      },
      body);
}

}  // namespace

bool EncodeRegion(const Region &r, std::string *out) {
  Writer w(out);
  return w.RegionOut(r);
}

Type TypeOf(const Body &body) {
  static constexpr Type kTypes[] = {Type::kHello,  Type::kHelloAck, Type::kRegionAdd, Type::kRegionDel,
                                    Type::kAck,    Type::kNotify,   Type::kPing,      Type::kPong,
                                    Type::kFence,  Type::kBye,      Type::kAuthChallenge, Type::kAuthResponse,
                                    Type::kTableRequest, Type::kMetadataUpdate};
  return kTypes[body.index()];
}

const char *TypeName(Type t) {
  switch (t) {
    case Type::kHello: return "Hello";
    case Type::kHelloAck: return "HelloAck";
    case Type::kRegionAdd: return "RegionAdd";
    case Type::kRegionDel: return "RegionDel";
    case Type::kAck: return "Ack";
    case Type::kNotify: return "Notify";
    case Type::kPing: return "Ping";
    case Type::kPong: return "Pong";
    case Type::kFence: return "Fence";
    case Type::kBye: return "Bye";
    case Type::kAuthChallenge: return "AuthChallenge";
    case Type::kAuthResponse: return "AuthResponse";
    case Type::kTableRequest: return "TableRequest";
    case Type::kMetadataUpdate: return "MetadataUpdate";
  }
  return "?";
}

bool Encode(uint64_t seq, const Body &body, std::string *out) {
  const size_t start = out->size();
  Writer w(out);
  w.U32(kMagic);
  w.U16(kVersion);
  w.U16(static_cast<uint16_t>(TypeOf(body)));
  w.U32(0);  // length, patched below
  w.U32(0);
  w.U64(seq);
  if (!EncodeBody(body, w) || out->size() - start - kHeaderSize > kMaxPayload) {
    out->resize(start);
    return false;
  }
  const uint32_t len = static_cast<uint32_t>(out->size() - start - kHeaderSize);
  for (int i = 0; i < 4; ++i) (*out)[start + 8 + i] = static_cast<char>((len >> (8 * i)) & 0xff);
  return true;
}

// One message of type M: read(m) reads its fields, then m stands in *out
// (read's result: whether they were well formed).
template <typename M, typename Read>
bool ReadAs(Body *out, Read read) {
  M m;
  const bool ok = read(m);
  *out = std::move(m);
  return ok;
}

bool DecodePayload(uint16_t type, const uint8_t *data, size_t len, Body *out, std::string *why) {
  Reader r(data, len);
  bool ok = false;
  switch (static_cast<Type>(type)) {
    case Type::kHello: {
      Hello m;
      ok = r.Str(&m.from_engine) && r.Str(&m.to_engine) && r.Str(&m.node_id) && r.U32(&m.flags) &&
           r.Str(&m.nonce, kMaxAuthField);
      // The optional liveness pair (wire.h); anything else after it is
      // caught by the exact-length check below.  A pair of zeros is
      // refused: the encoder leaves a zero pair out, so accepting one would
      // give two encodings of one message (the fuzzer checks that every
      // frame re-encodes to itself).
      if (ok && !r.Done()) {
        ok = r.U32(&m.heartbeat_ms) && r.U32(&m.dead_after_ms) && (m.heartbeat_ms != 0 || m.dead_after_ms != 0);
      }
      *out = std::move(m);
      break;
    }
    case Type::kHelloAck: {
      HelloAck m;
      uint32_t n = 0;
      ok = r.U32(&m.status) && r.Str(&m.node_id) && r.Str(&m.transport_address) && r.U32(&n) && n <= kMaxRegions;
      for (uint32_t i = 0; ok && i < n; ++i) {
        Region reg;
        ok = r.RegionIn(&reg);
        m.regions.push_back(std::move(reg));
      }
      ok = ok && r.Str(&m.proof, kMaxAuthField) && r.U32(&n) && n <= kMaxMetadataEntries;
      for (uint32_t i = 0; ok && i < n; ++i) {
        Metadata e;
        ok = r.MetadataIn(&e);
        m.metadata.push_back(std::move(e));
      }
      *out = std::move(m);
      break;
    }
    case Type::kMetadataUpdate:
      ok = ReadAs<MetadataUpdate>(out, [&](auto &m) { return r.MetadataIn(&m.entry); });
      break;
    case Type::kRegionAdd: ok = ReadAs<RegionAdd>(out, [&](auto &m) { return r.RegionIn(&m.region); }); break;
    case Type::kRegionDel: ok = ReadAs<RegionDel>(out, [&](auto &m) { return r.U64(&m.id); }); break;
    case Type::kAck: ok = ReadAs<Ack>(out, [&](auto &m) { return r.U32(&m.status); }); break;
    case Type::kNotify: ok = ReadAs<Notify>(out, [&](auto &m) { return r.Str(&m.name) && r.Str(&m.msg); }); break;
    case Type::kAuthChallenge:
      ok = ReadAs<AuthChallenge>(out, [&](auto &m) { return r.Str(&m.nonce, kMaxAuthField); });
      break;
    case Type::kAuthResponse:
      ok = ReadAs<AuthResponse>(out, [&](auto &m) { return r.Str(&m.proof, kMaxAuthField); });
      break;
    case Type::kPing: *out = Ping{}; ok = true; break;
    case Type::kPong: *out = Pong{}; ok = true; break;
    case Type::kFence: *out = Fence{}; ok = true; break;
    case Type::kBye: *out = Bye{}; ok = true; break;
    case Type::kTableRequest: *out = TableRequest{}; ok = true; break;
    default:
      *why = "unknown message type " + std::to_string(type);
      return false;
  }
  if (!ok || !r.Done()) {
    *why = std::string("malformed ") + TypeName(static_cast<Type>(type)) + " payload of " + std::to_string(len) +
           " bytes";
    return false;
  }
  return true;
}

FrameReader::Result FrameReader::Next(Message *out, std::string *why) {
  if (buf_.size() - pos_ < kHeaderSize) return Result::kNeedMore;
  Reader h(reinterpret_cast<const uint8_t *>(buf_.data() + pos_), kHeaderSize);
  uint32_t magic = 0, len = 0, reserved = 0;
  uint16_t version = 0, type = 0;
  uint64_t seq = 0;
  h.U32(&magic);
  h.U16(&version);
  h.U16(&type);
  h.U32(&len);
  h.U32(&reserved);
  h.U64(&seq);
  if (magic != kMagic) {
    *why = "bad magic (not an ADXL control connection)";
    return Result::kError;
  }
  if (version != kVersion) {
    *why = "wire version " + std::to_string(version) + ", this engine speaks " + std::to_string(kVersion);
    return Result::kError;
  }
  if (len > max_payload_) {
    *why = "payload of " + std::to_string(len) + " bytes exceeds the limit of " + std::to_string(max_payload_);
    return Result::kError;
  }
  if (buf_.size() - pos_ - kHeaderSize < len) return Result::kNeedMore;
  const uint8_t *payload = reinterpret_cast<const uint8_t *>(buf_.data() + pos_ + kHeaderSize);
  if (!DecodePayload(type, payload, len, &out->body, why)) return Result::kError;
  out->seq = seq;
  pos_ += kHeaderSize + len;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > (64u << 10)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return Result::kMessage;
}

}  // namespace wire
}  // namespace adxl
