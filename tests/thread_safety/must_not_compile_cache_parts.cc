// Negative check of scripts/thread_safety.sh for the cache layer's split
// state (src/llm_datadist/cache_manager_impl.h): holding the manager's
// life-cycle lock (Impl::mu) does not grant a part's table; the links are
// read under LinkTable::mu only.  The script fails if clang accepts this.
#include "cache_manager_impl.h"

namespace llm_datadist::internal {

size_t LinksUnderTheWrongLock(CacheManager::Impl &impl) {
  adxl::MutexLock lock(&impl.mu);
  return impl.peers.links.size();
}

}  // namespace llm_datadist::internal
