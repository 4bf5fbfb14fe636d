// Negative check of scripts/thread_safety.sh: a transfer's plan takes the
// read-only views in the wrong order (the link's regions, then the
// registrations), against the order src/core/engine.h lists and link.h
// declares (Link::regions_mu_ ADXL_ACQUIRED_AFTER Registrar::mu_).  The
// script fails if clang accepts it.
#include "core/link.h"
#include "core/registrar.h"

namespace adxl {

void PlanInTheWrongOrder(const Registrar &registrar, const Link &link) {
  Link::RegionsView remote(link);
  Registrar::RegistryView local(registrar);
}

}  // namespace adxl
