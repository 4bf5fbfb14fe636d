// Encoders and bounds-checked parsers of the UCX plugin's blobs (ucx_blob.h).
#include "core/ucx_blob.h"

#include <cstring>
#include <limits>
#include <utility>

namespace ucx_blob {
namespace {

bool AppendPart(std::string *out, const std::string &part) {
  if (part.size() > std::numeric_limits<uint32_t>::max()) return false;
  const uint32_t n = static_cast<uint32_t>(part.size());
  out->append(reinterpret_cast<const char *>(&n), sizeof(n));
  out->append(part);
  return true;
}

void AppendU64(std::string *out, uint64_t v) { out->append(reinterpret_cast<const char *>(&v), sizeof(v)); }

// Reads fields off [p, end) and never past end; every Read* returns false
// (and leaves the position unspecified) when the field does not fit.
class Reader {
 public:
  Reader(const void *data, size_t len)
      : p_(static_cast<const char *>(data)), left_(data == nullptr ? 0 : len) {}
  bool Bytes(void *out, size_t n) {
    if (left_ < n) return false;
    if (n != 0) memcpy(out, p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  bool U8(uint8_t *v) { return Bytes(v, sizeof(*v)); }
  bool U64(uint64_t *v) { return Bytes(v, sizeof(*v)); }
  bool Part(std::string *out) {
    uint32_t n = 0;
    if (!Bytes(&n, sizeof(n)) || left_ < n) return false;
    out->assign(p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  bool AtEnd() const { return left_ == 0; }

 private:
  const char *p_;
  size_t left_;
};

}  // namespace

bool EncodeAddress(const Address &a, std::string *out) {
  if (a.paths.size() > Address::kMaxPaths) return false;
  std::string paths;
  for (const PathAddress &p : a.paths) {
    if (p.prefix > 32) return false;
    paths.append(reinterpret_cast<const char *>(&p.ipv4), sizeof(p.ipv4));
    paths.push_back(static_cast<char>(p.prefix));
    if (!AppendPart(&paths, p.ucp)) return false;
  }
  std::string s;
  if (!AppendPart(&s, a.ucp) || !AppendPart(&s, a.cma) || !AppendPart(&s, paths)) return false;
  out->swap(s);
  return true;
}

bool ParseAddress(const void *data, size_t len, Address *out) {
  Reader r(data, len);
  std::string paths;
  if (!r.Part(&out->ucp) || !r.Part(&out->cma) || !r.Part(&paths) || !r.AtEnd()) return false;
  out->paths.clear();
  Reader p(paths.data(), paths.size());
  while (!p.AtEnd()) {
    PathAddress a;
    if (out->paths.size() == Address::kMaxPaths || !p.Bytes(&a.ipv4, sizeof(a.ipv4)) || !p.U8(&a.prefix) ||
        a.prefix > 32 || !p.Part(&a.ucp)) {
      return false;
    }
    out->paths.push_back(std::move(a));
  }
  return true;
}

bool EncodeKey(const Key &k, std::string *out) {
  std::string hccs(1, static_cast<char>(k.flags));
  if (!AppendPart(&hccs, k.cma_key)) return false;
  AppendU64(&hccs, k.base);
  AppendU64(&hccs, k.len);
  AppendU64(&hccs, k.offset);
  if (!AppendPart(&hccs, k.share_path)) return false;
  std::string s;
  if (!AppendPart(&s, k.ucp) || !AppendPart(&s, hccs)) return false;
  out->swap(s);
  return true;
}

bool ParseKey(const void *data, size_t len, Key *out) {
  Reader r(data, len);
  std::string hccs;
  if (!r.Part(&out->ucp) || !r.Part(&hccs) || !r.AtEnd()) return false;
  Reader h(hccs.data(), hccs.size());
  if (!h.U8(&out->flags) || !h.Part(&out->cma_key) || !h.U64(&out->base) || !h.U64(&out->len) ||
      !h.U64(&out->offset) || !h.Part(&out->share_path) || !h.AtEnd()) {
    return false;
  }
  // A path is handed to open(): an embedded NUL would name another file.
  return out->share_path.find('\0') == std::string::npos;
}

}  // namespace ucx_blob
