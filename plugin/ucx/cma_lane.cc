#include "cma_lane.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr const char kTl[] = "cma";
constexpr const char kDev[] = "memory";

}  // namespace

CmaLane::~CmaLane() {
  for (auto &t : threads_) {
    {
      std::lock_guard<std::mutex> l(t->mu);
      t->stop = true;
    }
    t->cv.notify_one();
    t->thread.join();
  }
  for (auto &st : stripes_) {
    if (st->iface != nullptr) uct_iface_close(st->iface);
    if (st->worker != nullptr) uct_worker_destroy(st->worker);
    if (st->async != nullptr) ucs_async_context_destroy(st->async);
  }
  stripes_.clear();
  if (md_ != nullptr) uct_md_close(md_);
  if (components_ != nullptr) uct_release_component_list(components_);
}

bool CmaLane::Open(unsigned stripes, std::string *why) {
  // Honour a UCX_TLS restriction the way UCP reads it: "^a,b" excludes,
  // otherwise only the listed transports (or the "sm"/"all" aliases) are used.
  if (const char *tls = getenv("UCX_TLS")) {
    const std::string list = std::string(",") + (tls[0] == '^' ? tls + 1 : tls) + ",";
    const bool listed = list.find(",cma,") != std::string::npos;
    const bool allowed = tls[0] == '^' ? !listed
                                       : listed || list.find(",sm,") != std::string::npos ||
                                             list.find(",all,") != std::string::npos;
    if (!allowed) {
      *why = std::string("UCX_TLS=") + tls + " excludes cma";
      return false;
    }
  }
  unsigned n = 0;
  if (uct_query_components(&components_, &n) != UCS_OK) {
    *why = "uct_query_components failed";
    return false;
  }
  // Find the component with an MD of that name (the cma component's MD is "cma").
  for (unsigned i = 0; i < n && md_ == nullptr; ++i) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components_[i], &attr) != UCS_OK) continue;
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (uct_component_query(components_[i], &attr) != UCS_OK) continue;
    for (const auto &md : mds) {
      if (strcmp(md.md_name, kTl) != 0) continue;
      uct_md_config_t *config = nullptr;
      if (uct_md_config_read(components_[i], nullptr, nullptr, &config) != UCS_OK) continue;
      ucs_status_t st = uct_md_open(components_[i], md.md_name, config, &md_);
      uct_config_release(config);
      if (st == UCS_OK) component_ = components_[i];
      break;
    }
  }
  if (md_ == nullptr) {
    *why = "this UCX has no cma transport";
    return false;
  }
  uct_md_attr_t md_attr{};
  if (uct_md_query(md_, &md_attr) != UCS_OK) {
    *why = "uct_md_query(cma) failed";
    return false;
  }
  need_reg_ = (md_attr.cap.flags & UCT_MD_FLAG_REG) != 0;
  rkey_size_ = md_attr.rkey_packed_size;
  for (unsigned i = 0; i < (stripes == 0 ? 1 : stripes); ++i) {
    auto stripe = std::make_unique<Stripe>();
    if (!OpenStripe(stripe.get(), why)) {
      if (stripe->iface != nullptr) uct_iface_close(stripe->iface);
      if (stripe->worker != nullptr) uct_worker_destroy(stripe->worker);
      if (stripe->async != nullptr) ucs_async_context_destroy(stripe->async);
      if (i == 0) return false;
      break;  // fewer stripes than asked: still a working lane
    }
    stripes_.push_back(std::move(stripe));
  }
  for (size_t i = 1; i < stripes_.size(); ++i) {
    threads_.push_back(std::make_unique<CopyThread>());
    CopyThread *t = threads_.back().get();
    t->thread = std::thread([this, t] { RunCopyThread(t); });
  }
  return true;
}

// A worker and a cma interface; the first stripe's address is the lane's.
bool CmaLane::OpenStripe(Stripe *s, std::string *why) {
  if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &s->async) != UCS_OK ||
      uct_worker_create(s->async, UCS_THREAD_MODE_SINGLE, &s->worker) != UCS_OK) {
    *why = "UCT worker for cma could not be created";
    return false;
  }
  uct_iface_config_t *iface_config = nullptr;
  if (uct_md_iface_config_read(md_, kTl, nullptr, nullptr, &iface_config) != UCS_OK) {
    *why = "uct_md_iface_config_read(cma) failed";
    return false;
  }
  uct_iface_params_t params{};
  params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                      UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                      UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
  // Without an error handler UCT treats a vanished peer process (ESRCH) as
  // fatal and aborts; with it the failed copy completes with an error and
  // the engine fails the link.
  params.err_handler = [](void *, uct_ep_h, ucs_status_t) { return UCS_OK; };
  params.err_handler_arg = nullptr;
  params.err_handler_flags = 0;
  params.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
  params.mode.device.tl_name = kTl;
  params.mode.device.dev_name = kDev;
  ucs_status_t st = uct_iface_open(md_, s->worker, &params, iface_config, &s->iface);
  uct_config_release(iface_config);
  if (st != UCS_OK) {
    s->iface = nullptr;
    *why = std::string("uct_iface_open(cma): ") + ucs_status_string(st);
    return false;
  }
  uct_iface_attr_t attr{};
  if (uct_iface_query(s->iface, &attr) != UCS_OK ||
      !(attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY) || !(attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY) ||
      !(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
    *why = "cma interface lacks zero-copy put/get";
    uct_iface_close(s->iface);
    s->iface = nullptr;
    return false;
  }
  max_zcopy_ = std::min(attr.cap.put.max_zcopy, attr.cap.get.max_zcopy);
  dev_addr_len_ = attr.device_addr_len;
  std::string dev(attr.device_addr_len, '\0');
  std::string ifa(attr.iface_addr_len, '\0');
  if (uct_iface_get_device_address(s->iface, reinterpret_cast<uct_device_addr_t *>(dev.data())) != UCS_OK ||
      uct_iface_get_address(s->iface, reinterpret_cast<uct_iface_addr_t *>(ifa.data())) != UCS_OK) {
    *why = "cma address query failed";
    uct_iface_close(s->iface);
    s->iface = nullptr;
    return false;
  }
  if (address_.empty()) address_ = dev + ifa;
  return true;
}

bool CmaLane::Register(void *addr, size_t len, uct_mem_h *memh, std::string *packed, std::string *why) {
  *memh = UCT_MEM_HANDLE_NULL;
  packed->clear();
  if (!available()) return true;
  if (need_reg_) {
    ucs_status_t st = uct_md_mem_reg(md_, addr, len, UCT_MD_MEM_ACCESS_ALL, memh);
    if (st != UCS_OK) {
      *why = std::string("cma registration: ") + ucs_status_string(st);
      return false;
    }
  }
  packed->assign(rkey_size_, '\0');
  if (rkey_size_ > 0 && uct_md_mkey_pack(md_, *memh, packed->data()) != UCS_OK) {
    *why = "cma key packing failed";
    Deregister(*memh);
    return false;
  }
  return true;
}

void CmaLane::Deregister(uct_mem_h memh) {
  if (available() && need_reg_ && memh != UCT_MEM_HANDLE_NULL) uct_md_mem_dereg(md_, memh);
}

bool CmaLane::Unpack(const std::string &packed, uct_rkey_bundle_t *rkey, std::string *why) {
  *rkey = uct_rkey_bundle_t{};
  if (packed.size() != rkey_size_) {
    *why = "cma key of " + std::to_string(packed.size()) + " bytes, expected " + std::to_string(rkey_size_);
    return false;
  }
  if (uct_rkey_unpack(component_, packed.data(), rkey) != UCS_OK) {
    *why = "cma key unpack failed";
    return false;
  }
  return true;
}

void CmaLane::Release(uct_rkey_bundle_t *rkey) {
  if (available() && rkey->handle != nullptr) uct_rkey_release(component_, rkey);
}

CmaLane::Peer *CmaLane::Connect(const std::string &peer_address) {
  if (!available() || peer_address.size() < dev_addr_len_ || peer_address.size() != address_.size()) return nullptr;
  auto *dev = reinterpret_cast<const uct_device_addr_t *>(peer_address.data());
  auto *ifa = reinterpret_cast<const uct_iface_addr_t *>(peer_address.data() + dev_addr_len_);
  if (!uct_iface_is_reachable(stripes_[0]->iface, dev, ifa)) return nullptr;
  auto peer = std::make_unique<Peer>();
  for (auto &stripe : stripes_) {
    uct_ep_params_t p{};
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface = stripe->iface;
    p.dev_addr = dev;
    p.iface_addr = ifa;
    uct_ep_h ep = nullptr;
    if (uct_ep_create(&p, &ep) != UCS_OK) {
      Disconnect(peer.release());
      return nullptr;
    }
    peer->eps.push_back(ep);
  }
  return peer.release();
}

void CmaLane::Disconnect(Peer *peer) {
  if (peer == nullptr) return;
  for (uct_ep_h ep : peer->eps) uct_ep_destroy(ep);
  delete peer;
}

namespace {

// Completion shared by the operations of one CopyOn(): counts down to zero.
struct BatchCompletion {
  uct_completion_t comp;
  ucs_status_t status = UCS_OK;
};

void OnDone(uct_completion_t *comp) {
  auto *b = reinterpret_cast<BatchCompletion *>(comp);
  if (comp->status != UCS_OK && b->status == UCS_OK) b->status = comp->status;
}

}  // namespace

ucs_status_t CmaLane::Copy(bool put, Peer *peer, const Op *ops, size_t count) {
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += ops[i].len;
  const size_t parts = total < kStripeMinBytes ? 1 : stripes_.size();
  if (parts == 1) {
    // The first free stripe, else wait for the first one.
    for (size_t i = 0; i < stripes_.size(); ++i) {
      std::unique_lock<std::mutex> l(stripes_[i]->mu, std::try_to_lock);
      if (l.owns_lock()) return CopyOn(stripes_[i].get(), put, peer->eps[i], ops, count);
    }
    std::lock_guard<std::mutex> l(stripes_[0]->mu);
    return CopyOn(stripes_[0].get(), put, peer->eps[0], ops, count);
  }
  // Cut the batch into `parts` runs of about total / parts bytes each,
  // splitting an operation where a boundary falls inside it.
  std::vector<std::vector<Op>> runs(parts);
  const size_t share = (total + parts - 1) / parts;
  size_t run = 0, in_run = 0;
  for (size_t i = 0; i < count; ++i) {
    Op op = ops[i];
    while (op.len > 0) {
      const size_t n = std::min(op.len, share - in_run);
      runs[run].push_back({op.local, op.memh, n, op.remote, op.rkey});
      op.local = static_cast<char *>(op.local) + n;
      op.remote += n;
      op.len -= n;
      in_run += n;
      if (in_run == share && run + 1 < parts) {
        ++run;
        in_run = 0;
      }
    }
  }
  // Runs 1.. go to the copy threads; run 0 is copied here.
  std::mutex mu;
  std::condition_variable cv;
  size_t pending = 0;
  ucs_status_t status = UCS_OK;
  for (size_t r = 1; r < parts; ++r) {
    if (runs[r].empty()) continue;
    ++pending;
    CopyThread *t = threads_[r - 1].get();
    std::lock_guard<std::mutex> l(t->mu);
    t->jobs.push_back([&, r] {
      ucs_status_t st;
      {
        std::lock_guard<std::mutex> sl(stripes_[r]->mu);
        st = CopyOn(stripes_[r].get(), put, peer->eps[r], runs[r].data(), runs[r].size());
      }
      std::lock_guard<std::mutex> dl(mu);
      if (st != UCS_OK && status == UCS_OK) status = st;
      if (--pending == 0) cv.notify_one();
    });
    t->cv.notify_one();
  }
  ucs_status_t mine;
  {
    std::lock_guard<std::mutex> l(stripes_[0]->mu);
    mine = CopyOn(stripes_[0].get(), put, peer->eps[0], runs[0].data(), runs[0].size());
  }
  // Every run must finish before the caller may reuse the buffers.
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return pending == 0; });
  return mine != UCS_OK ? mine : status;
}

void CmaLane::RunCopyThread(CopyThread *t) {
  std::unique_lock<std::mutex> l(t->mu);
  while (true) {
    t->cv.wait(l, [t] { return t->stop || !t->jobs.empty(); });
    if (t->jobs.empty()) return;  // stop, and nothing left to run
    auto job = std::move(t->jobs.front());
    t->jobs.pop_front();
    l.unlock();
    job();
    l.lock();
  }
}

ucs_status_t CmaLane::CopyOn(Stripe *s, bool put, uct_ep_h ep, const Op *ops, size_t count) {
  BatchCompletion done;
  done.comp.func = OnDone;
  done.comp.count = 1;  // released after the last post
  done.comp.status = UCS_OK;
  ucs_status_t first_error = UCS_OK;
  for (size_t i = 0; i < count && first_error == UCS_OK; ++i) {
    auto *p = static_cast<char *>(ops[i].local);
    uint64_t remote = ops[i].remote;
    size_t left = ops[i].len;
    while (left > 0) {
      const size_t n = left < max_zcopy_ ? left : max_zcopy_;
      uct_iov_t iov{p, n, ops[i].memh, 0, 1};
      ++done.comp.count;
      ucs_status_t st = put ? uct_ep_put_zcopy(ep, &iov, 1, remote, ops[i].rkey, &done.comp)
                            : uct_ep_get_zcopy(ep, &iov, 1, remote, ops[i].rkey, &done.comp);
      if (st == UCS_INPROGRESS) {
        // queued: completes through done.comp
      } else if (st == UCS_ERR_NO_RESOURCE) {
        --done.comp.count;
        uct_worker_progress(s->worker);  // drain, then retry this piece
        continue;
      } else {
        --done.comp.count;
        if (st != UCS_OK) {
          first_error = st;
          break;
        }
      }
      p += n;
      remote += n;
      left -= n;
    }
  }
  // Everything queued must finish (or fail) before the caller may reuse or
  // unregister the buffers, error or not.
  --done.comp.count;
  while (done.comp.count > 0) uct_worker_progress(s->worker);
  return first_error != UCS_OK ? first_error : done.status;
}
