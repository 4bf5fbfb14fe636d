#include "engine_runner.h"

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <functional>
#include <thread>

// The extension header (link lane and transports) is newer than the ADXL API;
// build without it where it is absent.
#if __has_include("adxl/adxl_ext.h")
#include "adxl/adxl_ext.h"
#define ADXL_BENCH_HAVE_LINK_INFO 1
#endif

namespace bench {

StepResult RunParallel(int n, const std::function<void(int, StepResult *)> &body) {
  std::vector<StepResult> parts(static_cast<size_t>(n));
  std::vector<Clock::time_point> ends(static_cast<size_t>(n));
  Clock::time_point start;
  if (n == 1) {
    start = Clock::now();
    body(0, &parts[0]);
    ends[0] = Clock::now();
  } else {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    threads.reserve(parts.size());
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        body(i, &parts[static_cast<size_t>(i)]);
        ends[static_cast<size_t>(i)] = Clock::now();
      });
    }
    while (ready.load() < n) std::this_thread::yield();
    start = Clock::now();
    go.store(true, std::memory_order_release);
    for (auto &t : threads) t.join();
  }
  StepResult total;
  total.seconds = std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) - start).count();
  for (const StepResult &p : parts) {
    total.call_us.insert(total.call_us.end(), p.call_us.begin(), p.call_us.end());
    if (p.errors > 0 && total.errors == 0) total.first_error = p.first_error;
    total.errors += p.errors;
  }
  return total;
}

size_t EngineRunner::CallSize(const BlockBatch &b, const EngineSettings &s) {
  size_t per_thread = (b.count + static_cast<size_t>(s.threads) - 1) / static_cast<size_t>(s.threads);
  if (s.mode == Mode::kAsync) per_thread = std::min(per_thread, static_cast<size_t>(s.async_batch));
  return per_thread;
}

std::vector<std::vector<EngineRunner::Call>> EngineRunner::Plan(const BlockBatch &b, const EngineSettings &s) {
  // Thread t takes a contiguous slice of the blocks; in async mode the slice
  // is cut into requests of at most async_batch descriptors.
  const size_t threads = static_cast<size_t>(s.threads);
  const size_t per_call = CallSize(b, s);
  std::vector<std::vector<Call>> plan(threads);
  for (size_t t = 0; t < threads; ++t) {
    size_t first = b.count * t / threads, last = b.count * (t + 1) / threads;
    for (size_t i = first; i < last; i += per_call) {
      Call call;
      for (size_t j = i; j < std::min(last, i + per_call); ++j) {
        call.push_back({b.local + j * b.block, b.remote + j * b.block, b.block});
      }
      plan[t].push_back(std::move(call));
    }
  }
  return plan;
}

void EngineRunner::RunSyncCalls(adxl::TransferOp op, const std::vector<Call> &calls, int timeout_ms,
                                StepResult *out) {
  for (const Call &call : calls) {
    const Clock::time_point t0 = Clock::now();
    adxl::Status st = engine_.TransferSync(remote_.c_str(), op, call, timeout_ms);
    out->call_us.push_back(Micros(Clock::now() - t0));
    if (st != adxl::SUCCESS) {
      out->Fail(std::string("TransferSync returned ") + StatusName(st));
      return;  // the link is failed now; later calls would only repeat it
    }
  }
}

void EngineRunner::RunAsyncCalls(adxl::TransferOp op, const std::vector<Call> &calls, int timeout_ms,
                                 StepResult *out) {
  struct Pending {
    adxl::TransferReq req;
    Clock::time_point posted;
  };
  // Post everything first: the requests are in flight together.
  std::vector<Pending> pending;
  pending.reserve(calls.size());
  const adxl::TransferArgs args{};
  for (const Call &call : calls) {
    Pending p{nullptr, Clock::now()};
    adxl::Status st = engine_.TransferAsync(remote_.c_str(), op, call, args, p.req);
    if (st != adxl::SUCCESS) {
      out->Fail(std::string("TransferAsync returned ") + StatusName(st));
      break;  // still collect what was posted
    }
    pending.push_back(p);
  }
  // Then poll every request until each reports its final status.
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!pending.empty()) {
    for (size_t i = 0; i < pending.size();) {
      adxl::TransferStatus ts = adxl::TransferStatus::WAITING;
      adxl::Status st = engine_.GetTransferStatus(pending[i].req, ts);
      if (st == adxl::SUCCESS && ts == adxl::TransferStatus::WAITING) {
        ++i;
        continue;
      }
      if (st != adxl::SUCCESS) {
        out->Fail(std::string("GetTransferStatus returned ") + StatusName(st));
      } else if (ts == adxl::TransferStatus::COMPLETED) {
        out->call_us.push_back(Micros(Clock::now() - pending[i].posted));
      } else {
        out->Fail(ts == adxl::TransferStatus::TIMEOUT ? "request ended TIMEOUT" : "request ended FAILED");
      }
      pending[i] = pending.back();
      pending.pop_back();
    }
    if (!pending.empty() && Clock::now() > deadline) {
      // The engine keeps them; we cannot cancel through the API.  The step
      // is reported failed and the link is reset before the next row.
      out->Fail(std::to_string(pending.size()) + " async requests still WAITING after " +
                std::to_string(timeout_ms) + " ms");
      return;
    }
  }
}

StepResult EngineRunner::RunStep(const BlockBatch &batch, const EngineSettings &s) {
  const std::vector<std::vector<Call>> plan = Plan(batch, s);
  return RunParallel(s.threads, [&](int t, StepResult *out) {
    const std::vector<Call> &calls = plan[static_cast<size_t>(t)];
    if (s.mode == Mode::kSync) {
      RunSyncCalls(batch.op, calls, s.timeout_ms, out);
    } else {
      RunAsyncCalls(batch.op, calls, s.timeout_ms, out);
    }
  });
}

StepResult EngineRunner::RunLatency(const BlockBatch &one, int iters, int timeout_ms) {
  const std::vector<adxl::TransferOpDesc> call = {{one.local, one.remote, one.block}};
  StepResult out;
  out.call_us.reserve(static_cast<size_t>(iters));
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    const Clock::time_point t0 = Clock::now();
    adxl::Status st = engine_.TransferSync(remote_.c_str(), one.op, call, timeout_ms);
    out.call_us.push_back(Micros(Clock::now() - t0));
    if (st != adxl::SUCCESS) {
      out.Fail(std::string("TransferSync returned ") + StatusName(st));
      break;
    }
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

std::string EngineRunner::LinkDescription() const {
#ifdef ADXL_BENCH_HAVE_LINK_INFO
  adxl::ext::LinkInfo info;
  if (adxl::ext::GetLinkInfo(engine_, remote_.c_str(), info) == adxl::SUCCESS) {
    return info.lane + " over " + info.transports;
  }
#endif
  return "";
}

std::string EngineRunner::EngineCounters() const {
#ifdef ADXL_BENCH_HAVE_LINK_INFO
  adxl::ext::LinkStats s;
  if (adxl::ext::GetLinkStats(engine_, remote_.c_str(), s) != adxl::SUCCESS) return "";
  char buf[512];
  std::string text;
  for (int i = 0; i < 2; ++i) {
    const adxl::ext::DirectionStats &d = i == 0 ? s.read : s.write;
    snprintf(buf, sizeof(buf),
             "  %-5s %llu transfers, %llu descriptors, %.1f MiB, %llu errors, %llu timeouts; latency p50 %.1f us, "
             "p99 %.1f us, max %.1f us\n",
             i == 0 ? "READ" : "WRITE", static_cast<unsigned long long>(d.transfers),
             static_cast<unsigned long long>(d.descriptors), static_cast<double>(d.bytes) / (1 << 20),
             static_cast<unsigned long long>(d.errors), static_cast<unsigned long long>(d.timeouts),
             d.latency.p50_ns / 1e3, d.latency.p99_ns / 1e3, d.latency.max_ns / 1e3);
    text += buf;
  }
  snprintf(buf, sizeof(buf),
           "  connects %llu (failed %llu); last connect: tcp %.2f ms, handshake %.2f ms, wire-up %.2f ms\n",
           static_cast<unsigned long long>(s.connects), static_cast<unsigned long long>(s.connect_failures),
           s.tcp_connect.last_ns / 1e6, s.handshake.last_ns / 1e6, s.wireup.last_ns / 1e6);
  return text + buf;
#else
  return "";
#endif
}

bool EngineRunner::Reconnect(int timeout_ms, std::string *why) {
  engine_.Disconnect(remote_.c_str(), timeout_ms);  // NOT_CONNECTED is fine here
  adxl::Status st = engine_.Connect(remote_.c_str(), timeout_ms);
  if (st != adxl::SUCCESS) {
    *why = "Connect to '" + remote_ + "' returned " + StatusName(st);
    return false;
  }
  return true;
}

}  // namespace bench
