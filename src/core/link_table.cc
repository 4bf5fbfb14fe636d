#include "core/link_table.h"

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

std::shared_ptr<Link> LinkTable::Claim(const std::string &remote, bool *created) {
  std::shared_ptr<LinkCounters> stats = stats_.For(remote);  // before mu_: both stay leaves
  MutexLock l(&mu_);
  auto it = by_name_.find(remote);
  *created = it == by_name_.end();
  if (!*created) return it->second;
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

std::vector<std::shared_ptr<Link>> LinkTable::TakeAll() {
  MutexLock l(&mu_);
  std::vector<std::shared_ptr<Link>> out;
  for (auto &kv : by_name_) out.push_back(std::move(kv.second));
  by_name_.clear();
  by_conn_.clear();
  return out;
}

}  // namespace adxl
