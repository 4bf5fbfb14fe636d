#include "core/wireup_reaper.h"

#include <thread>

#include "common/log.h"

namespace adxl {

void WireupReaper::Adopt(std::shared_ptr<Endpoint> ep, std::unique_ptr<Batch> flush) {
  MutexLock l(&mu_);
  entries_.push_back(Entry{std::move(ep), std::move(flush), std::chrono::steady_clock::now()});
  count_.store(entries_.size());
}

void WireupReaper::Reap(bool all) {
  std::vector<Entry> mine;
  {
    MutexLock l(&mu_);
    mine.swap(entries_);
  }
  const auto now = std::chrono::steady_clock::now();
  std::vector<Entry> keep;
  for (Entry &e : mine) {
    const bool ended = e.flush->Test() != ADXL_PLUGIN_IN_PROGRESS;
    if (ended || all || now - e.since > kMaxAge) {
      if (!ended) ADXL_WARN("closing an endpoint whose transport wire-up never ended");
      e.flush.reset();
      e.ep.reset();  // the last reference closes it, unless keys still hold it
    } else {
      keep.push_back(std::move(e));
    }
  }
  MutexLock l(&mu_);
  for (Entry &e : keep) entries_.push_back(std::move(e));
  count_.store(entries_.size());
}

void WireupReaper::Drain(std::chrono::milliseconds wait) {
  const auto end = std::chrono::steady_clock::now() + wait;
  while (pending() != 0 && std::chrono::steady_clock::now() < end) {
    Reap();
    if (pending() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Reap(true);
}

}  // namespace adxl
