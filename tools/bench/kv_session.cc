// --workload kv: one target's part of the kv rows (kv_rows.cc drives them).
// A row is the engine moving the model's plan, the engine moving the plan's
// uniform reference (same keys, calls and descriptors per call, every block
// the plan's average size, contiguous), or the ucp or tcp baseline moving the
// very same (offset, length) list as the engine, or the cma baseline moving
// the plan's or the uniform reference's list.  The verify pass checks the
// whole destination pool against its expected image: the destination
// segments hold the source's bytes and every gap still holds the poison.
#include <cstring>

#include "session.h"

namespace bench {
namespace {

// The plan's descriptors with this run's addresses, built before timing.
std::vector<KvKeyDescs> EngineDescs(const KvPlan &plan, uintptr_t local_base, uint64_t remote_base) {
  std::vector<KvKeyDescs> keys;
  for (const KeyTransfer &key : plan.keys) {
    KvKeyDescs calls;
    for (const SegmentCall &call : key.calls) {
      std::vector<adxl::TransferOpDesc> descs;
      descs.reserve(call.size());
      for (const Segment &s : call) descs.push_back({local_base + s.local, remote_base + s.remote, s.len});
      calls.push_back(std::move(descs));
    }
    keys.push_back(std::move(calls));
  }
  return keys;
}

KvPlanSettings PlanSettings(const Options &o) {
  KvPlanSettings s;
  s.tokens = o.kv_tokens;
  s.keys = o.kv_keys;
  s.call = o.kv_per_layer ? KvCall::kLayer : KvCall::kKey;
  return s;
}

}  // namespace

// Keys one after another; in sync mode a key's calls one after another, in
// async mode all of a key's calls in flight together.  One sample per key:
// from its first call to its last completion.
StepResult Session::RunKvEngineStep(adxl::TransferOp op, const std::vector<KvKeyDescs> &keys, Mode mode) {
  StepResult out;
  const char *remote = target_engine_.c_str();
  const Clock::time_point t0 = Clock::now();
  for (const KvKeyDescs &key : keys) {
    const Clock::time_point k0 = Clock::now();
    if (mode == Mode::kSync) {
      for (const auto &call : key) {
        const adxl::Status st = engine_->TransferSync(remote, op, call, o_.timeout_ms);
        if (st != adxl::SUCCESS) {
          out.Fail(std::string("TransferSync returned ") + StatusName(st));
          break;
        }
      }
    } else {
      std::vector<adxl::TransferReq> reqs;
      for (const auto &call : key) {
        adxl::TransferReq req = nullptr;
        const adxl::Status st = engine_->TransferAsync(remote, op, call, adxl::TransferArgs{}, req);
        if (st != adxl::SUCCESS) {
          out.Fail(std::string("TransferAsync returned ") + StatusName(st));
          break;
        }
        reqs.push_back(req);
      }
      // Collect every posted request, even after a failure.
      const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(o_.timeout_ms);
      while (!reqs.empty()) {
        adxl::TransferStatus ts = adxl::TransferStatus::WAITING;
        const adxl::Status st = engine_->GetTransferStatus(reqs.back(), ts);
        if (st == adxl::SUCCESS && ts == adxl::TransferStatus::WAITING) {
          if (Clock::now() > deadline) {
            out.Fail(std::to_string(reqs.size()) + " async requests still WAITING after " +
                     std::to_string(o_.timeout_ms) + " ms");
            break;
          }
          continue;
        }
        if (st != adxl::SUCCESS) {
          out.Fail(std::string("GetTransferStatus returned ") + StatusName(st));
        } else if (ts != adxl::TransferStatus::COMPLETED) {
          out.Fail(ts == adxl::TransferStatus::TIMEOUT ? "request ended TIMEOUT" : "request ended FAILED");
        }
        reqs.pop_back();
      }
    }
    if (out.errors > 0) break;
    out.call_us.push_back(Micros(Clock::now() - k0));
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

uint64_t Session::KvExpectedHash(const Direction &d, const KvPlan &plan) {
  const size_t pool = static_cast<size_t>(plan.pool_bytes);
  std::string why;
  PageBuffer expected, pattern;
  Check(PageBuffer::Allocate(pool, o_.pages, &expected, &why), why);
  Poison(expected.data(), pool);
  const uint8_t *source = Local(d).data();  // WRITE: this side's buffer holds kWriteSeed
  if (d.op == adxl::READ) {                 // READ: regenerate the target's kReadSeed pattern
    Check(PageBuffer::Allocate(pool, o_.pages, &pattern, &why), why);
    FillPattern(pattern.data(), pool, kReadSeed);
    source = pattern.data();
  }
  for (const KeyTransfer &key : plan.keys) {
    for (const SegmentCall &call : key.calls) {
      for (const Segment &s : call) {
        const uint64_t from = d.op == adxl::WRITE ? s.local : s.remote;
        const uint64_t to = d.op == adxl::WRITE ? s.remote : s.local;
        memcpy(expected.data() + to, source + from, s.len);
      }
    }
  }
  return HashBytes(expected.data(), pool);
}

bool Session::KvHas(KvKind k) const {
  switch (k) {
    case KvKind::kUcp: return ucp_ != nullptr;
    case KvKind::kTcp: return tcp_ != nullptr;
    case KvKind::kCma:
    case KvKind::kCmaUniform: return cma_ != nullptr;
    case KvKind::kEngine:
    case KvKind::kUniform: return true;
    case KvKind::kNixl:
    case KvKind::kNixlPoll:
    case KvKind::kMooncake: return KvPeer(k) != nullptr;
  }
  return false;
}

const KvPlan &Session::KvPlanOf(KvKind k) const {
  return k == KvKind::kUniform || k == KvKind::kCmaUniform ? kv_->uniform : kv_->plan;
}

void Session::KvPrepare(const Direction &d) {
  if (!kv_) {
    KvModel model;
    std::string why;
    Check(LoadKvModel(o_.kv_model, &model, &why), why);
    kv_ = std::make_unique<KvState>();
    kv_->plan = BuildKvPlan(model, PlanSettings(o_));
    kv_->uniform = BuildUniformPlan(kv_->plan);
    Check(kv_->plan.pool_bytes <= buffer_.size(), "kv pool larger than the engine buffer");
    for (Peer &p : peers_) {
      std::string why;
      // A peer that cannot take the plan has no kv rows (its header line says why).
      if (!p.driver->LoadPlan(kv_->plan, &why)) {
        peers_note_ += "; " + p.name + ": no kv plan: " + why;
        p.driver.reset();
      }
    }
  }
  kv_->descs = EngineDescs(kv_->plan, Local(d).addr(), remote_addr_);
  kv_->uniform_descs = EngineDescs(kv_->uniform, Local(d).addr(), remote_addr_);
  PrepareSources(d);
  if (o_.verify) {
    kv_->expected = KvExpectedHash(d, kv_->plan);
    kv_->expected_uniform = KvExpectedHash(d, kv_->uniform);
  }
}

void Session::KvPoison(const Direction &d, KvKind k) {
  if (KvPeer(k) != nullptr) return;  // the peer's driver poisons its own
  if (o_.verify) PoisonDestination(RemoteSideDestination(d), KvPlanOf(k).pool_bytes);
}

bool Session::KvCheck(const Direction &d, KvKind k) {
  if (!o_.verify) return true;
  if (KvPeer(k) != nullptr) return KvPeer(k)->LastCheck();
  const uint64_t expected = &KvPlanOf(k) == &kv_->uniform ? kv_->expected_uniform : kv_->expected;
  return DestinationHash(RemoteSideDestination(d), KvPlanOf(k).pool_bytes) == expected;
}

StepResult Session::KvStep(const Direction &d, KvKind k, Mode m) {
  switch (k) {
    case KvKind::kEngine: return RunKvEngineStep(d.op, kv_->descs, m);
    case KvKind::kUniform: return RunKvEngineStep(d.op, kv_->uniform_descs, m);
    case KvKind::kUcp: return ucp_->RunKeys(d.op, Local(d).addr(), remote_addr_, kv_->plan, o_.timeout_ms);
    case KvKind::kTcp: return tcp_->RunKeys(d.op, Local(d).addr(), kv_->plan);
    case KvKind::kCma: return cma_->RunKeys(d.op, Local(d).addr(), remote_addr_, kv_->plan);
    case KvKind::kCmaUniform: return cma_->RunKeys(d.op, Local(d).addr(), remote_addr_, kv_->uniform);
    case KvKind::kNixl:
    case KvKind::kNixlPoll:
    case KvKind::kMooncake: return KvPeer(k)->RunKeys(d.op, o_.verify);
  }
  return StepResult{};
}

Row Session::KvRow(const std::string &benchmark, const Direction &d, KvKind k) const {
  const KvPlan &plan = KvPlanOf(k);
  Row row = NewRow(benchmark, "kv", d, plan.average_block(), plan.descriptors / std::max<size_t>(1, plan.calls()), 1);
  if (KvPeer(k) != nullptr) row.transport = std::string(LaneName(o_.lane)) + (k == KvKind::kMooncake ? ":mooncake-tcp" : ":nixl-ucx");
  return row;
}

void Session::AppendKvInfo(RunInfo *info) const {
  KvModel model;
  std::string why;
  if (!LoadKvModel(o_.kv_model, &model, &why)) return;
  const KvPlan plan = BuildKvPlan(model, PlanSettings(o_));
  const KvPlan uniform = BuildUniformPlan(plan);
  for (auto &entry : *info) {  // the uniform workload's sizes do not apply
    if (entry.first == "transfer size") entry.second = "the kv pool (below) per side";
    if (entry.first == "block sizes") entry.second = "the kv layout's (below)";
  }
  info->emplace_back("workload", "kv");
  info->emplace_back("kv model", model.name + ": " + DescribeKvModel(model) + " (" + model.source + ")");
  info->emplace_back("kv keys", std::to_string(plan.keys.size()) + " keys of " + std::to_string(o_.kv_tokens) +
                                    " tokens per step (" + std::to_string(plan.blocks_per_key) +
                                    " block ids a key), " + std::to_string(plan.descriptors) + " descriptors, " +
                                    std::to_string(plan.bytes) + " bytes, average block " +
                                    std::to_string(plan.average_block()) + " B");
  info->emplace_back("kv calls", std::string(o_.kv_per_layer ? "one transfer call per layer of a key"
                                                              : "one transfer call per key") +
                                     " (" + std::to_string(plan.calls()) + " calls a step); ucp: one flush per call; "
                                     "tcp: one segment-list step per call");
  info->emplace_back("kv pool", FormatSize(plan.pool_bytes) + " per side, " + std::to_string(plan.pool_blocks) +
                                    " block slots per (layer, kind), block tables drawn at random (gaps), "
                                    "initiator's and target's tables independent");
  info->emplace_back("kv uniform ref", std::to_string(uniform.descriptors) + " contiguous blocks of " +
                                           std::to_string(uniform.average_block()) +
                                           " B, same keys, calls and descriptors per call (uniform_* rows)");
  if (cma_) {
    info->emplace_back("kv cma", "process_vm_writev/readv on the plan's list (cma) and the uniform reference's "
                                 "(uniform_cma), measured in turn with the engine rows; per call, " +
                                     std::to_string(cma_->threads()) +
                                     " part(s) cut by bytes at descriptor boundaries, adjacent ranges merged");
  }
}

}  // namespace bench
