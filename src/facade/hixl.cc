// The public hixl::Hixl: the HIXL facade over the ADXL engine core
// (adxl::Engine, core/engine.h, which it owns like AdxlEngine does) plus the async
// connect pool (connect_pool.h).  Types are converted where HIXL's differ.
#include "hixl/hixl.h"

#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "adxl/adxl_engine.h"
#include "facade/connect_pool.h"
#include "common/thread_annotations.h"
#include "core/engine.h"
#include "common/engine_name.h"
#include "common/log.h"

namespace hixl {

using adxl::ConnectPool;

namespace {
// HIXL's types are its own (as the vendor's), of the same layout as ADXL's:
// the engine core takes ADXL's.
static_assert(sizeof(TransferOpDesc) == sizeof(adxl::TransferOpDesc), "same layout");
std::vector<adxl::TransferOpDesc> ToAdxl(const std::vector<TransferOpDesc> &descs) {
  std::vector<adxl::TransferOpDesc> out;
  out.reserve(descs.size());
  for (const TransferOpDesc &d : descs) out.push_back(adxl::TransferOpDesc{d.local_addr, d.remote_addr, d.len});
  return out;
}
}  // namespace

class Hixl::HixlImpl {
 public:
  HixlImpl() = default;
  ~HixlImpl() { Finalize(); }

  Status Initialize(const AscendString &local_engine, const std::map<AscendString, AscendString> &options) {
    // A Finalize still joining the old pool's workers (with no lock held)
    // ends first: its tasks must not reach the engine's next life.  Checked
    // again under mu_, which every Finalize takes to count itself in, so
    // none can begin after the check while this Initialize runs.
    for (;;) {
      {
        adxl::MutexLock f(&life_mu_);
        life_cv_.Wait(&life_mu_, [&]() ADXL_REQUIRES(life_mu_) { return finalizing_ == 0; });
      }
      adxl::WriterLock l(&mu_);
      {
        adxl::MutexLock f(&life_mu_);
        if (finalizing_ != 0) continue;
      }
      return InitializeLocked(local_engine, options);
    }
  }

  Status InitializeLocked(const AscendString &local_engine, const std::map<AscendString, AscendString> &options)
      ADXL_REQUIRES(mu_) {
    Status st = core_.Initialize(local_engine, options);
    if (st != SUCCESS) return st;
    local_name_ = local_engine.GetString();
    const adxl::EngineOptions &o = core_.options();
    ConnectPool::Ops ops;
    ops.connect = [this](const std::string &r, int32_t t) { return core_.Connect(r.c_str(), t); };
    ops.disconnect = [this](const std::string &r, int32_t t) { return core_.Disconnect(r.c_str(), t); };
    ops.probe = [this](const std::string &r) {
      adxl::ext::LinkInfo info;
      if (core_.GetLinkInfo(r.c_str(), info) != SUCCESS) return ConnectPool::LinkProbe::kNone;
      return info.failed ? ConnectPool::LinkProbe::kFailed : ConnectPool::LinkProbe::kConnected;
    };
    pool_ = std::make_unique<ConnectPool>(std::move(ops), o.connect_threads, o.connect_queue_capacity);
    return SUCCESS;
  }

  // No lock of ours is held while it waits (for the core's Finalize and for
  // the pool's workers): GetAsyncConnectStatus and Submit meanwhile find no
  // pool and return FAILED at once instead of queueing behind the join.
  void Finalize() {
    std::unique_ptr<ConnectPool> pool;
    {
      adxl::WriterLock l(&mu_);
      pool = std::move(pool_);
      adxl::MutexLock f(&life_mu_);
      ++finalizing_;
    }
    if (pool) pool->Close();  // queued tasks are dropped, not run against a finalized engine
    // Ends the running tasks' Connects at once (FAILED, docs/contract.md
    // §3.3), so the join below is short; joining first would wait for each
    // task's own timeout.
    core_.Finalize();
    pool.reset();  // joins the workers
    adxl::MutexLock f(&life_mu_);
    --finalizing_;
    life_cv_.NotifyAll();
    // A concurrent Finalize returns only once the other's workers are
    // joined too, as when they queued on one lock.
    life_cv_.Wait(&life_mu_, [&]() ADXL_REQUIRES(life_mu_) { return finalizing_ == 0; });
  }

  Status Submit(const char *api, const AscendString &remote_engine, bool connect, int32_t timeout_ms) {
    adxl::ReaderLock l(&mu_);
    const std::string remote = remote_engine.GetString();
    if (!pool_) {
      ADXL_ERROR("%s: engine is not initialized", api);
      return FAILED;
    }
    if (timeout_ms <= 0) {
      ADXL_ERROR("%s '%s': timeout %d ms must be > 0", api, remote.c_str(), timeout_ms);
      return PARAM_INVALID;
    }
    adxl::EngineName peer;
    std::string why;
    if (!adxl::ParseEngineName(remote, &peer, &why)) {
      ADXL_ERROR("%s: invalid remote engine name %s", api, why.c_str());
      return PARAM_INVALID;
    }
    if (connect && (!peer.listens() || remote == local_name_)) {
      ADXL_ERROR("%s '%s': %s", api, remote.c_str(),
                 !peer.listens() ? "no port, so that engine is client only and cannot be connected to"
                                 : "an engine cannot connect to itself");
      return PARAM_INVALID;
    }
    const Status st = pool_->Submit(remote, connect, timeout_ms);
    if (st == RESOURCE_EXHAUSTED) {
      ADXL_ERROR("%s '%s': the connect task queue is full (connect_pool.task_queue_capacity %u)", api,
                 remote.c_str(), core_.options().connect_queue_capacity);
    } else if (st != SUCCESS) {
      ADXL_ERROR("%s '%s': the engine is finalizing", api, remote.c_str());
    }
    return st;
  }

  Status GetAsyncConnectStatus(const AscendString &remote, AsyncConnectStatus &status) {
    adxl::ReaderLock l(&mu_);
    if (!pool_) {
      ADXL_ERROR("GetAsyncConnectStatus: engine is not initialized");
      return FAILED;
    }
    status = pool_->Get(remote.GetString());
    return SUCCESS;
  }

  Status GetAsyncConnectStatus(std::map<AscendString, AsyncConnectStatus> &statuses) {
    adxl::ReaderLock l(&mu_);
    if (!pool_) {
      ADXL_ERROR("GetAsyncConnectStatus: engine is not initialized");
      return FAILED;
    }
    statuses.clear();
    for (const auto &kv : pool_->GetAll()) statuses[kv.first] = kv.second;
    return SUCCESS;
  }

  Status GetTransferStatus(const GetTransferStatusArgs &args, std::vector<TransferResult> &results) {
    std::vector<adxl::Engine::RequestResult> got;
    const Status st = core_.GetTransferStatuses(args.max_query_count, args.skip_waiting, &got);
    results.clear();
    results.reserve(got.size());
    for (const auto &g : got) {
      TransferResult r;
      r.req = g.req;
      r.user_data = g.user_data;
      r.status = static_cast<TransferStatus>(g.status);
      results.push_back(r);
    }
    return st;
  }

  adxl::Engine core_;

 private:
  // The pool's lifetime: shared by calls, exclusive in Initialize and for
  // the moment Finalize takes the pool out.  Taken before any lock of the
  // core or the pool.  Held across the core's Initialize, never across a
  // wait on a peer or a join (Finalize joins the pool it took out without
  // it).
  adxl::SharedMutex mu_;
  std::unique_ptr<ConnectPool> pool_ ADXL_GUARDED_BY(mu_);
  std::string local_name_ ADXL_GUARDED_BY(mu_);
  // life_mu_ guards finalizing_, the Finalize calls that took the pool out
  // and have not yet joined its workers; Initialize waits on life_cv_ until
  // there are none.  A leaf, taken alone or under mu_, held for a few
  // instructions (its waits release it).
  adxl::Mutex life_mu_ ADXL_ACQUIRED_AFTER(mu_);
  adxl::CondVar life_cv_;
  int finalizing_ ADXL_GUARDED_BY(life_mu_) = 0;
};

Hixl::Hixl() : impl_(std::make_unique<HixlImpl>()) {}
Hixl::~Hixl() = default;

Status Hixl::Initialize(const AscendString &local_engine, const std::map<AscendString, AscendString> &options) {
  return impl_->Initialize(local_engine, options);
}
void Hixl::Finalize() { impl_->Finalize(); }

Status Hixl::RegisterMem(const MemDesc &mem, MemType type, MemHandle &mem_handle) {
  adxl::MemDesc d{};
  d.addr = mem.addr;
  d.len = mem.len;
  d.local_only = mem.local_only;
  return impl_->core_.RegisterMem(d, static_cast<adxl::MemType>(type), mem_handle);
}
Status Hixl::DeregisterMem(MemHandle mem_handle) { return impl_->core_.DeregisterMem(mem_handle); }

Status Hixl::Connect(const AscendString &remote_engine, int32_t timeout_in_millis) {
  return impl_->core_.Connect(remote_engine, timeout_in_millis);
}
Status Hixl::Disconnect(const AscendString &remote_engine, int32_t timeout_in_millis) {
  return impl_->core_.Disconnect(remote_engine, timeout_in_millis);
}
Status Hixl::ConnectAsync(const AscendString &remote_engine, int32_t timeout_in_millis) {
  return impl_->Submit("ConnectAsync", remote_engine, true, timeout_in_millis);
}
Status Hixl::DisconnectAsync(const AscendString &remote_engine, int32_t timeout_in_millis) {
  return impl_->Submit("DisconnectAsync", remote_engine, false, timeout_in_millis);
}
Status Hixl::GetAsyncConnectStatus(const AscendString &remote_engine, AsyncConnectStatus &status) {
  return impl_->GetAsyncConnectStatus(remote_engine, status);
}
Status Hixl::GetAsyncConnectStatus(std::map<AscendString, AsyncConnectStatus> &statuses) {
  return impl_->GetAsyncConnectStatus(statuses);
}

Status Hixl::TransferSync(const AscendString &remote_engine, TransferOp operation,
                          const std::vector<TransferOpDesc> &op_descs, int32_t timeout_in_millis) {
  return impl_->core_.TransferSync(remote_engine, static_cast<adxl::TransferOp>(operation), ToAdxl(op_descs),
                                   timeout_in_millis);
}
Status Hixl::TransferAsync(const AscendString &remote_engine, TransferOp operation,
                           const std::vector<TransferOpDesc> &op_descs, const TransferArgs &optional_args,
                           TransferReq &req) {
  return impl_->core_.TransferAsync(remote_engine, static_cast<adxl::TransferOp>(operation), ToAdxl(op_descs), req,
                                    optional_args.user_data);
}
Status Hixl::GetTransferStatus(const TransferReq &req, TransferStatus &status) {
  adxl::TransferStatus s = adxl::TransferStatus::WAITING;
  const Status st = impl_->core_.GetTransferStatus(req, s);
  status = static_cast<TransferStatus>(s);
  return st;
}
Status Hixl::GetTransferStatus(const GetTransferStatusArgs &args, std::vector<TransferResult> &results) {
  return impl_->GetTransferStatus(args, results);
}

Status Hixl::SendNotify(const AscendString &remote_engine, const NotifyDesc &notify, int32_t timeout_in_millis) {
  return impl_->core_.SendNotify(remote_engine, adxl::NotifyDesc{notify.name, notify.notify_msg}, timeout_in_millis);
}
Status Hixl::GetNotifies(std::vector<NotifyDesc> &notifies) {
  std::vector<adxl::NotifyDesc> got;
  const Status st = impl_->core_.GetNotifies(got);
  notifies.clear();
  notifies.reserve(got.size());
  for (adxl::NotifyDesc &n : got) notifies.push_back(NotifyDesc{std::move(n.name), std::move(n.notify_msg)});
  return st;
}

Status Hixl::GetCapability(FeatureType feature_type, int32_t &value) {
  return adxl::AdxlEngine::GetCapability(static_cast<adxl::FeatureType>(feature_type), value);
}

}  // namespace hixl
