// AscendString: the small immutable string type of the ADXL API.
//
// The vendor's headers use ge::AscendString; programs only construct it from
// `const char *` / `std::string`, read it back with GetString() / GetLength(),
// compare it and use it as a std::map / std::unordered_map key.  This class
// gives exactly that, with value semantics and no allocation for empty strings.
#ifndef ADXL_ASCEND_STRING_H_
#define ADXL_ASCEND_STRING_H_

#include <cstddef>
#include <functional>
#include <string>

namespace adxl {

class AscendString {
 public:
  AscendString() = default;
  AscendString(const char *s) : str_(s == nullptr ? "" : s) {}  // NOLINT: implicit like the vendor's
  AscendString(const char *s, size_t len) : str_(s == nullptr ? std::string() : std::string(s, len)) {}
  AscendString(const std::string &s) : str_(s) {}  // NOLINT: implicit like the vendor's

  // Never null; a default-constructed string yields "".
  const char *GetString() const { return str_.c_str(); }
  size_t GetLength() const { return str_.size(); }

  bool operator==(const AscendString &o) const { return str_ == o.str_; }
  bool operator!=(const AscendString &o) const { return str_ != o.str_; }
  bool operator<(const AscendString &o) const { return str_ < o.str_; }
  bool operator>(const AscendString &o) const { return str_ > o.str_; }
  bool operator<=(const AscendString &o) const { return str_ <= o.str_; }
  bool operator>=(const AscendString &o) const { return str_ >= o.str_; }

  size_t Hash() const { return std::hash<std::string>()(str_); }

 private:
  std::string str_;
};

}  // namespace adxl

namespace std {
template <>
struct hash<adxl::AscendString> {
  size_t operator()(const adxl::AscendString &s) const { return s.Hash(); }
};
}  // namespace std

#endif  // ADXL_ASCEND_STRING_H_
