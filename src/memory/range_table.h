// RangeTable: non-overlapping address ranges and the lookups transfers need.
//
// Used for this engine's registrations (one table per memory type) and for
// the regions a peer advertised.  Not thread-safe; owners lock.
#ifndef ADXL_SRC_MEMORY_RANGE_TABLE_H_
#define ADXL_SRC_MEMORY_RANGE_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

namespace adxl {

template <typename T>
class RangeTable {
 public:
  struct Entry {
    uintptr_t addr;
    size_t len;
    T value;
  };
  // One contiguous part of a resolved range, lying inside one entry.
  struct Piece {
    uintptr_t addr;
    size_t len;
    const Entry *entry;
  };

  size_t size() const { return by_start_.size(); }
  // Calls f(const Entry &) for every entry, in address order.
  template <typename F>
  void ForEach(F f) const {
    for (const auto &kv : by_start_) f(kv.second);
  }
  bool empty() const { return by_start_.empty(); }

  const Entry *FindExact(uintptr_t addr, size_t len) const {
    auto it = by_start_.find(addr);
    return (it != by_start_.end() && it->second.len == len) ? &it->second : nullptr;
  }

  // True when [addr, addr+len) shares a byte with any entry.  len > 0 and no
  // overflow are the caller's checks.
  bool Overlaps(uintptr_t addr, size_t len) const {
    auto it = by_start_.lower_bound(addr + len);  // first entry starting at/after our end
    if (it == by_start_.begin()) return false;
    --it;  // last entry starting before our end
    return it->second.addr + it->second.len > addr;
  }

  // Inserts an entry; the caller has checked that it does not overlap.
  void Insert(uintptr_t addr, size_t len, T value) { by_start_.emplace(addr, Entry{addr, len, std::move(value)}); }
  bool Erase(uintptr_t addr) { return by_start_.erase(addr) != 0; }

  // Appends to *out the pieces of [addr, addr+len) over entries that are
  // adjacent (each starting where the previous ends).  Returns false, with
  // *out unchanged, when any byte is outside every entry.
  bool Resolve(uintptr_t addr, size_t len, std::vector<Piece> *out) const {
    if (len == 0 || addr + len < addr) return false;
    auto it = by_start_.upper_bound(addr);
    if (it == by_start_.begin()) return false;
    --it;
    const size_t mark = out->size();
    uintptr_t cur = addr;
    size_t left = len;
    while (true) {
      const Entry &e = it->second;
      if (cur < e.addr || cur >= e.addr + e.len) {
        out->resize(mark);
        return false;
      }
      size_t take = e.addr + e.len - cur;
      if (take > left) take = left;
      out->push_back(Piece{cur, take, &e});
      cur += take;
      left -= take;
      if (left == 0) return true;
      ++it;
      if (it == by_start_.end()) {
        out->resize(mark);
        return false;
      }
    }
  }

  void Clear() { by_start_.clear(); }

 private:
  std::map<uintptr_t, Entry> by_start_;
};

}  // namespace adxl

#endif  // ADXL_SRC_MEMORY_RANGE_TABLE_H_
