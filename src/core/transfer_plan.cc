#include "core/transfer_plan.h"

#include <cinttypes>
#include <algorithm>
#include <cstdio>

namespace adxl {
namespace {

std::string Describe(size_t i, const TransferOpDesc &d) {
  char buf[160];
  snprintf(buf, sizeof(buf), "descriptor %zu {local 0x%" PRIxPTR ", remote 0x%" PRIxPTR ", len %zu}", i, d.local_addr,
           d.remote_addr, d.len);
  return buf;
}

}  // namespace

bool DescriptorOverflows(size_t i, const TransferOpDesc &d, std::string *why) {
  if (d.local_addr + d.len >= d.local_addr && d.remote_addr + d.len >= d.remote_addr) return false;
  *why = Describe(i, d) + ": address + length overflows";
  return true;
}

Status BuildTransferPlan(const std::vector<TransferOpDesc> &descs, const Registry &local,
                         const RemoteRegionTable &remote, TransferPlan *plan, std::string *why) {
  plan->iov.reserve(descs.size());
  std::vector<Registry::Table::Piece> lp;
  std::vector<RemoteRegionTable::Piece> rp;
  const LocalRegion *last_local = nullptr;
  const RemoteRegion *last_remote = nullptr;
  for (size_t i = 0; i < descs.size(); ++i) {
    const TransferOpDesc &d = descs[i];
    if (DescriptorOverflows(i, d, why)) return PARAM_INVALID;
    lp.clear();
    rp.clear();
    if (!local.Resolve(d.local_addr, d.len, &lp)) {
      *why = Describe(i, d) + ": local range is not inside registered memory";
      return PARAM_INVALID;
    }
    if (!remote.Resolve(d.remote_addr, d.len, &rp)) {
      *why = Describe(i, d) + ": remote range is not inside memory the peer registered";
      return PARAM_INVALID;
    }
    // Walk both piece lists together; each step stays inside one region on
    // each side.  Usually both lists have one piece and this is one step.
    size_t a = 0, b = 0, off_a = 0, off_b = 0;
    while (a < lp.size() && b < rp.size()) {
      size_t n = std::min(lp[a].len - off_a, rp[b].len - off_b);
      const LocalRegion *l = lp[a].entry->value.get();
      const RemoteRegion *r = rp[b].entry->value.get();
      plan->iov.push_back(adxl_plugin_iov_t{l->mem ? l->mem->get() : nullptr, lp[a].addr + off_a, r->key ? r->key->get() : nullptr,
                                            rp[b].addr + off_b, n});
      if (l != last_local) {
        plan->local_refs.push_back(lp[a].entry->value);
        last_local = l;
      }
      if (r != last_remote) {
        plan->remote_refs.push_back(rp[b].entry->value);
        last_remote = r;
      }
      off_a += n;
      off_b += n;
      if (off_a == lp[a].len) {
        ++a;
        off_a = 0;
      }
      if (off_b == rp[b].len) {
        ++b;
        off_b = 0;
      }
    }
    plan->bytes += d.len;
  }
  return SUCCESS;
}

}  // namespace adxl
