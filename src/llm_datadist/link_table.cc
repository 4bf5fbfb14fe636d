// LinkTable (link_table.h): the notifies by which peers announce their
// links and unlinks to this cluster.
#include "link_table.h"

#include <cstdlib>
#include <utility>

#include "cache_manager_impl.h"

namespace llm_datadist::internal {

void LinkTable::DrainNotifiesLocked(adxl::AdxlEngine &engine) {
  std::vector<adxl::NotifyDesc> got;
  if (engine.GetNotifies(got) != adxl::SUCCESS) return;
  for (auto &n : got) {
    const std::string name = n.name.GetString();
    if (name == kLinkNotify || name == kUnlinkNotify) {
      // "<cluster id>[ <listen name>]": the opener's id, and where it listens.
      const char *msg = n.notify_msg.GetString();
      char *end = nullptr;
      const uint64_t id = strtoull(msg, &end, 10);
      // A new link from that cluster, or its unlink, ends the reverse
      // connection made for its earlier link (disconnected outside mu).
      auto l = links.find(id);
      if (l != links.end() && l->second->reverse) {
        stale.push_back(l->second->engine);
        links.erase(l);
      }
      if (name == kLinkNotify) {
        incoming[id] = *end == ' ' ? std::string(end + 1) : std::string();
      } else {
        incoming.erase(id);
      }
    } else {
      kept.push_back(std::move(n));
    }
  }
}

}  // namespace llm_datadist::internal
