// ge::AscendString: the small immutable string of the vendor's APIs (ADXL,
// HIXL, LLM-DataDist all take it; adxl::AscendString, hixl::AscendString and
// llm_datadist::AscendString are this type).
//
// Contract: constructed from `const char *` (null gives ""), a pointer and a
// length, or a std::string; read back with GetString() (never null,
// NUL-terminated) and GetLength(); compared bytewise; usable as a std::map /
// std::unordered_map key.  Value semantics (copies share the immutable bytes).
//
// Binary layout and symbols are the vendor's (libmetadef.so): the only member
// is a std::shared_ptr<std::string>, and every member function that touches
// the string is out of line, in libmetadef.so (src/metadef/ascend_string.cc).
// So a program built with -D_GLIBCXX_USE_CXX11_ABI=0 (as the vendor's build
// files compile programs) and this library (default ABI) agree: the caller
// only ever copies and destroys the shared_ptr, whose control block, made in
// libmetadef.so, destroys the string with the library's std::string.
#ifndef GE_GRAPH_ASCEND_STRING_H_
#define GE_GRAPH_ASCEND_STRING_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#ifndef GE_FUNC_VISIBILITY_METADEF_
#define GE_FUNC_VISIBILITY_METADEF_ __attribute__((visibility("default")))
#endif

namespace ge {

class AscendStringImpl;

class GE_FUNC_VISIBILITY_METADEF_ AscendString {
 public:
  AscendString() = default;
  ~AscendString() = default;
  AscendString(const char *const name);  // NOLINT: implicit like the vendor's
  AscendString(const char *const name, size_t length);
  // Not the vendor's: a convenience of this implementation, inline, through
  // the (pointer, length) constructor, so it adds no symbol and no ABI.
  AscendString(const std::string &s) : AscendString(s.data(), s.size()) {}  // NOLINT: implicit

  // Never null; a default-constructed or empty string yields "".
  const char *GetString() const;
  size_t GetLength() const;
  // Position of the first occurrence of `ascend_string`, or std::string::npos.
  size_t Find(const AscendString &ascend_string) const;
  size_t Hash() const;

  bool operator<(const AscendString &d) const;
  bool operator>(const AscendString &d) const;
  bool operator<=(const AscendString &d) const;
  bool operator>=(const AscendString &d) const;
  bool operator==(const AscendString &d) const;
  bool operator!=(const AscendString &d) const;
  bool operator==(const char *const d) const;
  bool operator!=(const char *const d) const;

 private:
  std::shared_ptr<std::string> name_;
  friend class AscendStringImpl;
};

}  // namespace ge

namespace std {
template <>
struct hash<ge::AscendString> {
  size_t operator()(const ge::AscendString &name) const { return name.Hash(); }
};
}  // namespace std

#endif  // GE_GRAPH_ASCEND_STRING_H_
