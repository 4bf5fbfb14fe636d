// ge::AscendString: the small immutable string of the vendor's APIs (ADXL,
// HIXL, LLM-DataDist all take it; adxl::AscendString, hixl::AscendString and
// llm_datadist::AscendString are this type).
//
// Contract: constructed from `const char *` (null gives ""), a pointer and a
// length, or a std::string; read back with GetString() (never null,
// NUL-terminated) and GetLength(); compared bytewise; usable as a std::map /
// std::unordered_map key.  Value semantics.
//
// Why not a std::string member: the vendor's build files compile programs
// with -D_GLIBCXX_USE_CXX11_ABI=0, which changes std::string's layout, while
// this library is built with the default ABI.  Every member function is
// inline and the only member is a std::vector<char> (whose layout does not
// depend on that macro), so an AscendString built in a program of either ABI
// reads the same inside the library.
#ifndef GE_GRAPH_ASCEND_STRING_H_
#define GE_GRAPH_ASCEND_STRING_H_

#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ge {

class AscendString {
 public:
  AscendString() = default;
  AscendString(const char *s) { Assign(s, s == nullptr ? 0 : std::strlen(s)); }  // NOLINT: implicit like the vendor's
  AscendString(const char *s, size_t len) { Assign(s, s == nullptr ? 0 : len); }
  AscendString(const std::string &s) { Assign(s.data(), s.size()); }  // NOLINT: implicit, for convenience

  // Never null; a default-constructed or empty string yields "".
  const char *GetString() const { return chars_.empty() ? "" : chars_.data(); }
  size_t GetLength() const { return chars_.empty() ? 0 : chars_.size() - 1; }

  bool operator==(const AscendString &o) const { return View() == o.View(); }
  bool operator!=(const AscendString &o) const { return View() != o.View(); }
  bool operator<(const AscendString &o) const { return View() < o.View(); }
  bool operator>(const AscendString &o) const { return View() > o.View(); }
  bool operator<=(const AscendString &o) const { return View() <= o.View(); }
  bool operator>=(const AscendString &o) const { return View() >= o.View(); }

  // Position of the first occurrence of `s`, or std::string::npos.
  size_t Find(const AscendString &s) const { return View().find(s.View()); }
  size_t Hash() const { return std::hash<std::string_view>()(View()); }

 private:
  std::string_view View() const { return std::string_view(GetString(), GetLength()); }
  void Assign(const char *s, size_t len) {
    if (len == 0) return;  // empty strings allocate nothing
    chars_.assign(s, s + len);
    chars_.push_back('\0');
  }

  std::vector<char> chars_;  // the bytes and a terminating NUL; empty for ""
};

}  // namespace ge

namespace std {
template <>
struct hash<ge::AscendString> {
  size_t operator()(const ge::AscendString &s) const { return s.Hash(); }
};
}  // namespace std

#endif  // GE_GRAPH_ASCEND_STRING_H_
