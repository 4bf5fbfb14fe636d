// TransferPlan: a list of ADXL descriptors resolved against local and remote
// registrations into plugin operations (the data path's only validation).
//
// Each descriptor is split where either side crosses from one registration
// into an adjacent one, so that every operation lies inside one local and one
// remote region.  The plan holds a reference to every region it uses, which
// keeps their registrations and keys alive until the transfer is done.
//
// Planning reads both tables and nothing else: the caller holds them
// through read-only locked views (Registrar::RegistryView, Link::RegionsView),
// taken in that order and only for the call, and does nothing under them
// that blocks or calls into the transport.
#ifndef ADXL_SRC_CORE_TRANSFER_PLAN_H_
#define ADXL_SRC_CORE_TRANSFER_PLAN_H_

#include <memory>
#include <string>
#include <vector>

#include "adxl/adxl_types.h"
#include "adxl/plugin/adxl_plugin.h"
#include "core/remote_region.h"
#include "memory/registry.h"

namespace adxl {

struct TransferPlan {
  std::vector<adxl_plugin_iov_t> iov;
  std::vector<std::shared_ptr<LocalRegion>> local_refs;
  std::vector<std::shared_ptr<RemoteRegion>> remote_refs;
  uint64_t bytes = 0;
};

// True when descriptor `i`'s local or remote address + length overflows,
// with *why naming it.  BuildTransferPlan's first check, shared with the
// buffer pool (buffer_pool.h), which copies the caller's local ranges itself
// and plans only its own buffers: one rule and one wording for both paths.
bool DescriptorOverflows(size_t i, const TransferOpDesc &d, std::string *why);

// Builds *plan; PARAM_INVALID with *why naming the descriptor otherwise.
// `local` and `remote` must not change during the call (see above).
Status BuildTransferPlan(const std::vector<TransferOpDesc> &descs, const Registry &local,
                         const RemoteRegionTable &remote, TransferPlan *plan, std::string *why);

}  // namespace adxl

#endif  // ADXL_SRC_CORE_TRANSFER_PLAN_H_
