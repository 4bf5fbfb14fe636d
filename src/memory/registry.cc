#include "memory/registry.h"

#include "transport/transport.h"

namespace adxl {
namespace {

int Index(MemType t) { return t == MEM_DEVICE ? 0 : 1; }

}  // namespace

LocalRegion::~LocalRegion() = default;

Status Registry::Check(uintptr_t addr, size_t len, MemType type, std::shared_ptr<LocalRegion> *existing,
                       std::string *why) const {
  existing->reset();
  const Table &table = tables_[Index(type)];
  if (const Table::Entry *e = table.FindExact(addr, len)) {
    *existing = e->value;
    return SUCCESS;
  }
  if (table.Overlaps(addr, len)) {
    *why = "range overlaps an existing registration of the same type without being identical";
    return PARAM_INVALID;
  }
  if (by_id_.size() >= limits_.max_registrations) {
    *why = "at most " + std::to_string(limits_.max_registrations) + " registrations per process";
    return RESOURCE_EXHAUSTED;
  }
  const uint64_t limit = type == MEM_DEVICE ? limits_.max_device_bytes : limits_.max_host_bytes;
  const uint64_t used = bytes_[Index(type)];
  if (len > limit || used > limit - len) {
    *why = std::string("registered ") + (type == MEM_DEVICE ? "device" : "host") + " memory would exceed " +
           std::to_string(limit) + " bytes (" + std::to_string(used) + " in use)";
    return RESOURCE_EXHAUSTED;
  }
  return SUCCESS;
}

void Registry::Insert(const std::shared_ptr<LocalRegion> &region) {
  region->id = next_id_++;
  tables_[Index(region->type)].Insert(region->addr, region->len, region);
  by_id_[region->id] = region;
  bytes_[Index(region->type)] += region->len;
}

std::shared_ptr<LocalRegion> Registry::Find(uint64_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

std::shared_ptr<LocalRegion> Registry::Erase(uint64_t id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return nullptr;
  std::shared_ptr<LocalRegion> r = it->second;
  by_id_.erase(it);
  tables_[Index(r->type)].Erase(r->addr);
  bytes_[Index(r->type)] -= r->len;
  return r;
}

bool Registry::Resolve(uintptr_t addr, size_t len, std::vector<Table::Piece> *out) const {
  return tables_[1].Resolve(addr, len, out) || tables_[0].Resolve(addr, len, out);
}

std::vector<std::shared_ptr<LocalRegion>> Registry::All() const {
  std::vector<std::shared_ptr<LocalRegion>> v;
  for (const auto &kv : by_id_) v.push_back(kv.second);
  return v;
}

}  // namespace adxl
