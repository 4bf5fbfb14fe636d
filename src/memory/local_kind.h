// LocalKind: how the local side of a transfer's descriptors relates to this
// engine's registrations: all inside registered regions (the ordinary data
// path), none (staged through the buffer pool, core/buffer_pool.h), or a
// mix, which no path takes (docs/contract.md §6.2).
//
// Not thread-safe: the caller keeps the registry unchanged during the call
// (Registrar::RegistryView).
#ifndef ADXL_SRC_MEMORY_LOCAL_KIND_H_
#define ADXL_SRC_MEMORY_LOCAL_KIND_H_

#include <vector>

#include "adxl/adxl_types.h"
#include "memory/registry.h"

namespace adxl {

enum class LocalKind { kRegistered, kUnregistered, kMixed };

// Descriptors the ordinary checks reject (zero address or length, overflow)
// are ignored here, so that those checks report them; a list of only such
// descriptors is kRegistered (the ordinary path, which refuses it).
LocalKind ClassifyLocal(const std::vector<TransferOpDesc> &descs, const Registry &registry);

}  // namespace adxl

#endif  // ADXL_SRC_MEMORY_LOCAL_KIND_H_
