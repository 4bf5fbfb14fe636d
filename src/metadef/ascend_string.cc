// ge::AscendString's members, out of line as in the vendor's libmetadef.so
// (include/graph/ascend_string.h says why).  Built with the library's C++
// ABI; callers of either ABI reach the std::string only through these.
#include "graph/ascend_string.h"

#include <cstring>
#include <string_view>

namespace ge {

class AscendStringImpl {
 public:
  static std::string_view View(const AscendString &s) {
    return s.name_ == nullptr ? std::string_view() : std::string_view(*s.name_);
  }
  static void Assign(AscendString &s, const char *p, size_t len) {
    if (p == nullptr) return;  // null: "", as the vendor's
    // No exception leaves this library (the vendor's constructors do not
    // throw either): on allocation failure the string stays "".
    try {
      s.name_ = std::make_shared<std::string>(p, len);
    } catch (...) {
      s.name_.reset();
    }
  }
};

AscendString::AscendString(const char *const name) {
  AscendStringImpl::Assign(*this, name, name == nullptr ? 0 : std::strlen(name));
}
AscendString::AscendString(const char *const name, size_t length) { AscendStringImpl::Assign(*this, name, length); }

const char *AscendString::GetString() const { return name_ == nullptr ? "" : name_->c_str(); }
size_t AscendString::GetLength() const { return name_ == nullptr ? 0 : name_->size(); }
size_t AscendString::Find(const AscendString &ascend_string) const {
  return AscendStringImpl::View(*this).find(AscendStringImpl::View(ascend_string));
}
size_t AscendString::Hash() const { return std::hash<std::string_view>()(AscendStringImpl::View(*this)); }

bool AscendString::operator<(const AscendString &d) const {
  return AscendStringImpl::View(*this) < AscendStringImpl::View(d);
}
bool AscendString::operator>(const AscendString &d) const {
  return AscendStringImpl::View(*this) > AscendStringImpl::View(d);
}
bool AscendString::operator<=(const AscendString &d) const {
  return AscendStringImpl::View(*this) <= AscendStringImpl::View(d);
}
bool AscendString::operator>=(const AscendString &d) const {
  return AscendStringImpl::View(*this) >= AscendStringImpl::View(d);
}
bool AscendString::operator==(const AscendString &d) const {
  return AscendStringImpl::View(*this) == AscendStringImpl::View(d);
}
bool AscendString::operator!=(const AscendString &d) const { return !(*this == d); }
bool AscendString::operator==(const char *const d) const {
  return AscendStringImpl::View(*this) == std::string_view(d == nullptr ? "" : d);
}
bool AscendString::operator!=(const char *const d) const { return !(*this == d); }

}  // namespace ge
