#include "memory/local_kind.h"

namespace adxl {

LocalKind ClassifyLocal(const std::vector<TransferOpDesc> &descs, const Registry &registry) {
  bool registered = false, unregistered = false;
  std::vector<Registry::Table::Piece> pieces;
  for (const TransferOpDesc &d : descs) {
    if (d.local_addr == 0 || d.remote_addr == 0 || d.len == 0 || d.local_addr + d.len < d.local_addr) continue;
    pieces.clear();
    (registry.Resolve(d.local_addr, d.len, &pieces) ? registered : unregistered) = true;
  }
  if (registered && unregistered) return LocalKind::kMixed;
  return unregistered ? LocalKind::kUnregistered : LocalKind::kRegistered;
}

}  // namespace adxl
