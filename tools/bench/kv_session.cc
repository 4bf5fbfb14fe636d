// --workload kv: the Session's rows for KV-cache keys.  Per direction, one
// group: the engine moving the model's plan (per mode), the engine moving the
// plan's uniform reference (same keys, calls and descriptors per call, every
// block the plan's average size, contiguous), and the ucp and tcp baselines
// moving the very same (offset, length) list as the engine.  Every step of
// every row is verified against the expected image of the whole destination
// pool (with --verify / --quick): the destination segments hold the source's
// bytes and every gap still holds the poison.
#include <cstring>

#include "session.h"

namespace bench {
namespace {

using KeyDescs = std::vector<std::vector<adxl::TransferOpDesc>>;  // one key: its calls

// The plan's descriptors with this run's addresses, built before timing.
std::vector<KeyDescs> EngineDescs(const KvPlan &plan, uintptr_t local_base, uint64_t remote_base) {
  std::vector<KeyDescs> keys;
  for (const KeyTransfer &key : plan.keys) {
    KeyDescs calls;
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
StepResult Session::RunKvEngineStep(adxl::TransferOp op, const std::vector<KeyDescs> &keys, Mode mode) {
  StepResult out;
  const char *remote = target_engine_.c_str();
  const Clock::time_point t0 = Clock::now();
  for (const KeyDescs &key : keys) {
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
  Check(PageBuffer::Allocate(pool, &expected, &why), why);
  Poison(expected.data(), pool);
  const uint8_t *source = Local(d).data();  // WRITE: this side's buffer holds kWriteSeed
  if (d.op == adxl::READ) {                 // READ: regenerate the target's kReadSeed pattern
    Check(PageBuffer::Allocate(pool, &pattern, &why), why);
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

Row Session::NewKvRow(const std::string &benchmark, const Direction &d, const KvPlan &plan) const {
  Row row = NewRow(benchmark, "kv", d, plan.average_block(), plan.descriptors / std::max<size_t>(1, plan.calls()), 1);
  return row;
}

Row Session::MeasureKvEngine(const Direction &d, const KvPlan &plan, bool uniform, Mode mode, uint64_t expected) {
  Row row = NewKvRow(std::string(uniform ? "uniform_" : "engine_") + ModeName(mode), d, plan);
  const std::vector<KeyDescs> keys = EngineDescs(plan, Local(d).addr(), remote_addr_);
  RowAccumulator acc;
  RunSteps(RemoteSideDestination(d), expected, plan.pool_bytes, plan.bytes, plan.keys.size(),
           [&] { return RunKvEngineStep(d.op, keys, mode); }, &acc);
  acc.FillRow(&row);
  return row;
}

Row Session::MeasureKvUcp(const Direction &d, const KvPlan &plan, uint64_t expected) {
  Row row = NewKvRow("ucp", d, plan);
  RowAccumulator acc;
  RunSteps(RemoteSideDestination(d), expected, plan.pool_bytes, plan.bytes, plan.keys.size(),
           [&] { return ucp_->RunKeys(d.op, Local(d).addr(), remote_addr_, plan, o_.timeout_ms); }, &acc);
  acc.FillRow(&row);
  return row;
}

Row Session::MeasureKvTcp(const Direction &d, const KvPlan &plan, uint64_t expected) {
  Row row = NewKvRow("tcp", d, plan);
  RowAccumulator acc;
  RunSteps(RemoteSideDestination(d), expected, plan.pool_bytes, plan.bytes, plan.keys.size(),
           [&] { return tcp_->RunKeys(d.op, Local(d).addr(), plan); }, &acc);
  acc.FillRow(&row);
  return row;
}

void Session::RunKv(std::vector<Row> *rows) {
  KvModel model;
  std::string why;
  Check(LoadKvModel(o_.kv_model, &model, &why), why);
  const KvPlan plan = BuildKvPlan(model, PlanSettings(o_));
  const KvPlan uniform = BuildUniformPlan(plan);
  Check(plan.pool_bytes <= buffer_.size(), "kv pool larger than the engine buffer");
  const int per_direction = 2 * static_cast<int>(o_.modes.size()) + (ucp_ ? 1 : 0) + (tcp_ ? 1 : 0);
  Progress progress(per_direction * static_cast<int>(o_.directions.size()));
  for (const std::string &name : o_.directions) {
    const Direction &d = *FindDirection(name.c_str());
    PrepareSources(d);
    const uint64_t expected = o_.verify ? KvExpectedHash(d, plan) : 0;
    const uint64_t expected_uniform = o_.verify ? KvExpectedHash(d, uniform) : 0;
    const std::string label = std::string(d.name) + " kv ";
    std::vector<Row> group;
    for (Mode m : o_.modes) {
      progress.Row(label + "engine_" + ModeName(m));
      group.push_back(MeasureKvEngine(d, plan, false, m, expected));
      progress.Row(label + "uniform_" + ModeName(m));
      group.push_back(MeasureKvEngine(d, uniform, true, m, expected_uniform));
    }
    if (ucp_) {
      progress.Row(label + "ucp");
      group.push_back(MeasureKvUcp(d, plan, expected));
    }
    if (tcp_) {
      progress.Row(label + "tcp");
      group.push_back(MeasureKvTcp(d, plan, expected));
    }
    EndGroup(&group, rows);
  }
}

void Session::AppendKvInfo(RunInfo *info) const {
  KvModel model;
  std::string why;
  if (!LoadKvModel(o_.kv_model, &model, &why)) return;
  const KvPlan plan = BuildKvPlan(model, PlanSettings(o_));
  const KvPlan uniform = BuildUniformPlan(plan);
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
}

}  // namespace bench
