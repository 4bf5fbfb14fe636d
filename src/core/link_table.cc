#include "core/link_table.h"

#include <algorithm>
#include <utility>

namespace adxl {

std::shared_ptr<Link> LinkTable::Find(const std::string &remote) const {
  MutexLock l(&mu_);
  auto it = by_name_.find(remote);
  return it == by_name_.end() ? nullptr : it->second;
}

std::shared_ptr<Link> LinkTable::FindByConn(const ControlConn *conn) const {
  MutexLock l(&mu_);
  auto it = by_conn_.find(conn);
  return it == by_conn_.end() ? nullptr : it->second.lock();
}

std::shared_ptr<Link> LinkTable::Claim(const std::string &remote, bool *created, size_t cap) {
  std::shared_ptr<LinkCounters> stats = stats_.For(remote);  // before mu_: both stay leaves
  MutexLock l(&mu_);
  auto it = by_name_.find(remote);
  *created = it == by_name_.end();
  if (!*created) return it->second;
  if (cap > 0 && by_name_.size() >= cap) {
    *created = false;
    return nullptr;
  }
  auto link = std::make_shared<Link>(remote, std::move(stats));
  by_name_[remote] = link;
  return link;
}

void LinkTable::Bind(const std::shared_ptr<Link> &link) {
  MutexLock l(&mu_);
  by_conn_[link->conn.get()] = link;
}

void LinkTable::Remove(const std::shared_ptr<Link> &link) {
  MutexLock l(&mu_);
  auto it = by_name_.find(link->remote());
  if (it != by_name_.end() && it->second == link) by_name_.erase(it);
  if (link->conn) by_conn_.erase(link->conn.get());
}

std::shared_ptr<Link> LinkTable::TakeSettled(const std::string &remote) {
  MutexLock l(&mu_);
  auto it = by_name_.find(remote);
  if (it == by_name_.end() || it->second->state() == LinkState::kConnecting) return nullptr;
  std::shared_ptr<Link> link = it->second;
  by_name_.erase(it);
  by_conn_.erase(link->conn.get());
  return link;
}

std::vector<std::shared_ptr<Link>> LinkTable::Connected() const {
  MutexLock l(&mu_);
  std::vector<std::shared_ptr<Link>> out;
  for (const auto &kv : by_name_) {
    if (kv.second->state() == LinkState::kConnected) out.push_back(kv.second);
  }
  return out;
}

size_t LinkTable::size() const {
  MutexLock l(&mu_);
  return by_name_.size();
}

std::vector<std::shared_ptr<Link>> LinkTable::TakeEvictable(size_t n, int64_t idle_before_ns) {
  MutexLock l(&mu_);
  // (never used ? 0 : 1, last activity): never-used first, then LRU.
  std::vector<std::pair<std::pair<int, int64_t>, std::string>> candidates;
  for (const auto &kv : by_name_) {
    const Link &link = *kv.second;
    if (kv.second.use_count() != 1 || link.state() != LinkState::kConnected) continue;
    const int64_t used = link.last_used_ns.load();
    const int64_t last = std::max(used, link.connected_ns.load());
    if (last > idle_before_ns) continue;
    candidates.push_back({{used == 0 ? 0 : 1, last}, kv.first});
  }
  std::sort(candidates.begin(), candidates.end());
  std::vector<std::shared_ptr<Link>> out;
  for (size_t i = 0; i < candidates.size() && out.size() < n; ++i) {
    auto it = by_name_.find(candidates[i].second);
    std::shared_ptr<Link> link = std::move(it->second);
    by_name_.erase(it);
    if (link->conn) by_conn_.erase(link->conn.get());
    out.push_back(std::move(link));
  }
  return out;
}

std::vector<std::shared_ptr<Link>> LinkTable::TakeAll() {
  MutexLock l(&mu_);
  std::vector<std::shared_ptr<Link>> out;
  for (auto &kv : by_name_) out.push_back(std::move(kv.second));
  by_name_.clear();
  by_conn_.clear();
  return out;
}

}  // namespace adxl
