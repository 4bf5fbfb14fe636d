#include "facade/connect_pool.h"

#include "common/log.h"

namespace adxl {

using hixl::AsyncConnectStatus;

ConnectPool::ConnectPool(Ops ops, uint32_t threads, uint32_t capacity) : ops_(std::move(ops)), capacity_(capacity) {
  for (uint32_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

Status ConnectPool::Submit(const std::string &remote, bool connect, int32_t timeout_ms) {
  MutexLock l(&mu_);
  if (stop_) return FAILED;
  if (queued_ >= capacity_) return RESOURCE_EXHAUSTED;
  Remote &r = remotes_[remote];
  const uint64_t seq = next_seq_++;
  r.queue.push_back(Task{seq, connect, timeout_ms});
  r.latest = seq;
  r.state = connect ? AsyncConnectStatus::CONNECT_PENDING : AsyncConnectStatus::DISCONNECT_PENDING;
  ++queued_;
  if (!r.busy && r.queue.size() == 1) {
    ready_.push_back(remote);
    cv_.NotifyOne();
  }
  return SUCCESS;
}

void ConnectPool::Work() {
  mu_.Lock();
  while (true) {
    cv_.Wait(&mu_, [&]() ADXL_REQUIRES(mu_) { return stop_ || !ready_.empty(); });
    if (stop_) break;
    const std::string name = ready_.front();
    ready_.pop_front();
    Remote &r = remotes_[name];
    const Task t = r.queue.front();
    r.queue.pop_front();
    --queued_;
    r.busy = true;
    if (t.seq == r.latest) r.state = t.connect ? AsyncConnectStatus::CONNECTING : AsyncConnectStatus::DISCONNECTING;
    mu_.Unlock();  // connecting waits on the peer
    const Status st = t.connect ? ops_.connect(name, t.timeout_ms) : ops_.disconnect(name, t.timeout_ms);
    mu_.Lock();
    auto it = remotes_.find(name);
    if (it == remotes_.end()) continue;  // stopped meanwhile
    Remote &after = it->second;
    after.busy = false;
    if (t.seq == after.latest) {
      if (!t.connect) {
        remotes_.erase(it);  // disconnected remotes leave the map
        continue;
      }
      after.state = (st == SUCCESS || st == ALREADY_CONNECTED) ? AsyncConnectStatus::CONNECTED
                                                               : AsyncConnectStatus::CONNECT_FAILED;
      if (after.state == AsyncConnectStatus::CONNECT_FAILED) {
        ADXL_WARN("ConnectAsync to '%s' failed (status %u)", name.c_str(), st);
      }
    }
    if (!after.queue.empty()) {
      ready_.push_back(name);
      cv_.NotifyOne();
    }
  }
  mu_.Unlock();
}

bool ConnectPool::Reconcile(std::map<std::string, Remote>::iterator it) {
  Remote &r = it->second;
  if (r.state != AsyncConnectStatus::CONNECTED || r.busy || !r.queue.empty()) return true;
  switch (ops_.probe(it->first)) {
    case LinkProbe::kNone:
      remotes_.erase(it);
      return false;
    case LinkProbe::kFailed:
      r.state = AsyncConnectStatus::CONNECT_FAILED;
      return true;
    case LinkProbe::kConnected:
      return true;
  }
  return true;
}

AsyncConnectStatus ConnectPool::Get(const std::string &remote) {
  MutexLock l(&mu_);
  auto it = remotes_.find(remote);
  if (it == remotes_.end() || !Reconcile(it)) return AsyncConnectStatus::NOT_CONNECT;
  return it->second.state;
}

std::map<std::string, AsyncConnectStatus> ConnectPool::GetAll() {
  MutexLock l(&mu_);
  std::map<std::string, AsyncConnectStatus> out;
  for (auto it = remotes_.begin(); it != remotes_.end();) {
    auto next = std::next(it);
    if (Reconcile(it)) out[it->first] = it->second.state;
    it = next;
  }
  return out;
}

void ConnectPool::Close() {
  {
    MutexLock l(&mu_);
    stop_ = true;
    ready_.clear();
    for (auto &kv : remotes_) kv.second.queue.clear();
    queued_ = 0;
  }
  cv_.NotifyAll();  // idle workers leave; busy ones once their task ends
}

void ConnectPool::Stop() {
  MutexLock once(&stop_mu_);
  Close();
  for (auto &t : threads_) t.join();
  threads_.clear();
  MutexLock l(&mu_);
  remotes_.clear();
}

}  // namespace adxl
