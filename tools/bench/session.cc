#include "session.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <ctime>

#include "kv_rows.h"
#include "memcpy_baseline.h"

namespace bench {
namespace {

constexpr size_t kLatencyBlock = 4096;
// The initiator is started after its target (or spawns it): a target that
// does not answer within this time is not coming.
constexpr int kSideChannelConnectMs = 10000;

}  // namespace

// Engine rows get their ratios to the baselines of the same group (none to
// a baseline that failed: its row has no bandwidth).
void FillRatios(std::vector<Row> *group) {
  double memcpy_gbps = 0, ucp_gbps = 0, tcp_gbps = 0, cma_gbps = 0, nixl_gbps = 0, mooncake_gbps = 0;
  for (const Row &r : *group) {
    if (r.benchmark.rfind("nixl", 0) == 0) nixl_gbps = std::max(nixl_gbps, r.bandwidth_gbps);  // its best
    if (r.benchmark == "mooncake") mooncake_gbps = r.bandwidth_gbps;
    if (r.benchmark == "cma") cma_gbps = r.bandwidth_gbps;
    if (r.benchmark == "memcpy") memcpy_gbps = r.bandwidth_gbps;
    if (r.benchmark == "ucp") ucp_gbps = r.bandwidth_gbps;
    if (r.benchmark == "tcp") tcp_gbps = r.bandwidth_gbps;
  }
  for (Row &r : *group) {
    if (r.benchmark.rfind("engine", 0) != 0) continue;
    if (memcpy_gbps > 0) r.vs_memcpy = r.bandwidth_gbps / memcpy_gbps;
    if (ucp_gbps > 0) r.vs_ucp = r.bandwidth_gbps / ucp_gbps;
    if (tcp_gbps > 0) r.vs_tcp = r.bandwidth_gbps / tcp_gbps;
    if (cma_gbps > 0) r.vs_cma = r.bandwidth_gbps / cma_gbps;
    if (nixl_gbps > 0) r.vs_nixl = r.bandwidth_gbps / nixl_gbps;
    if (mooncake_gbps > 0) r.vs_mooncake = r.bandwidth_gbps / mooncake_gbps;
  }
}

Session::~Session() {
  peers_.clear();
  tcp_limit_.reset();
  tcp_.reset();
  ucp_.reset();
  if (engine_ != nullptr) {
    if (handle_ != nullptr) engine_->DeregisterMem(handle_);
    if (device_handle_ != nullptr) engine_->DeregisterMem(device_handle_);
    if (own_engine_) engine_->Finalize();  // a shared engine is its owner's to end
  }
}

bool Session::DeviceHere() const {
  for (const std::string &name : o_.directions) {
    if (FindDirection(name.c_str())->initiator_memory == adxl::MEM_DEVICE) return true;
  }
  return false;
}

bool Session::DeviceThere() const {
  for (const std::string &name : o_.directions) {
    if (FindDirection(name.c_str())->target_memory == adxl::MEM_DEVICE) return true;
  }
  return false;
}

Message Session::TargetCommand(const char *verb, size_t len, bool device) {
  Message m(verb);
  m.Set("len", len);
  if (device) m.Set("mem", "device");
  return m;
}

Message Session::Call(const Message &request) {
  Message reply;
  std::string why;
  Check(ch_.Call(request, &reply, o_.timeout_ms, &why), why);
  return reply;
}

// ---------------------------------------------------------------- set-up

void Session::SetUp(const std::function<bool()> &keep_trying) {
  std::string why;
  Check(SideChannel::Connect(o_.side_channel, kSideChannelConnectMs, keep_trying, &ch_, &why), why);
  // UCX reads UCX_TLS when a context is created: before the engine starts.
  tls_ = ApplyTls(LaneTls(o_.lane));
  Hello();
  Check(PageBuffer::Allocate(o_.transfer_size, o_.memory, o_.pages, &buffer_, &why), why);
  // The memcpy baseline's own side stays plain mmap whatever --memory says.
  if (o_.memcpy_baseline) Check(PageBuffer::Allocate(o_.transfer_size, o_.pages, &scratch_, &why), why);
  if (DeviceHere()) Check(PageBuffer::AllocateDevice(o_.transfer_size, &device_, &why), why);
  if (DeviceThere() && o_.memcpy_baseline) Check(PageBuffer::AllocateDevice(o_.transfer_size, &device_scratch_, &why), why);
  StartEngine();
  if (o_.ucp_baseline) StartUcp();
  if (o_.cma_baseline) {
    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    // Another host's PID means nothing here: no cma row then.
    if (target_pid_ != 0 && target_host_ == host) {
      cma_ = std::make_unique<CmaBaseline>(static_cast<pid_t>(target_pid_), CmaBaseline::LaneThreads());
    }
  }
  if (o_.tcp_baseline) StartTcp();
  StartPeers();
}

void Session::Hello() {
  Message hello("HELLO");
  hello.Set("version", kSideChannelVersion).Set("size", o_.transfer_size).Set("ucp", o_.ucp_baseline ? 1 : 0);
  hello.Set("tcp", o_.tcp_baseline ? 1 : 0);
  hello.Set("tls", tls_.value.empty() ? "-" : tls_.value);
  hello.Set("progress", o_.target_progress == TargetProgress::kPoll ? "poll" : "event");
  hello.Set("memory", MemoryOptionName(o_.memory));
  hello.Set("pages", PagesOptionName(o_.pages));
  hello.Set("device", DeviceThere() ? 1 : 0);
  Message ready = Call(hello);
  // The target echoes its memory: one that predates --memory says nothing,
  // and its host buffer must not pass for MallocMem memory.
  const std::string target_memory = ready.Get("memory").empty() ? "host" : ready.Get("memory");
  Check(target_memory == MemoryOptionName(o_.memory),
        std::string("the target uses --memory ") + target_memory + ", this side " + MemoryOptionName(o_.memory) +
            " (use the same adxl-bench on both hosts)");
  uint64_t size = 0;
  target_engine_ = ready.Get("engine");
  Check(!target_engine_.empty() && ready.GetU64("addr", &remote_addr_) && ready.GetU64("size", &size),
        "target's READY lacks engine, addr or size");
  Check(size >= o_.transfer_size, "target buffer is smaller than --transfer-size");
  Check(!DeviceThere() || ready.GetU64("daddr", &remote_device_addr_), "target's READY lacks its device buffer (daddr)");
  const std::string target_tls = ready.Get("tls");
  target_tls_ = (target_tls == "-" ? "UCX default" : "UCX_TLS=" + target_tls) + " (" + ready.Get("tls_source") + ")";
  if (target_tls != (tls_.value.empty() ? "-" : tls_.value)) {
    fprintf(stderr, "adxl-bench: warning: the target uses UCX_TLS=%s, this side %s\n", target_tls.c_str(),
            tls_.value.empty() ? "the UCX default" : tls_.value.c_str());
  }
  if (o_.ucp_baseline) {
    Check(FromHex(ready.Get("ucp_addr"), &ucp_worker_address_) && FromHex(ready.Get("ucp_rkey"), &ucp_rkey_) &&
              !ucp_worker_address_.empty() && !ucp_rkey_.empty(),
          "target's READY lacks a valid UCP worker address or remote key");
  }
  target_pid_ = 0;
  ready.GetU64("pid", &target_pid_);
  target_host_ = ready.Get("host");
  if (o_.tcp_baseline) {
    uint64_t port = 0;
    Check(ready.GetU64("tcp_port", &port) && port > 0 && port <= 65535, "target's READY lacks a valid tcp_port");
    tcp_port_ = static_cast<uint16_t>(port);
    std::istringstream ports(ready.Get("tcp_limit_ports"));  // "p1,p2,..."; absent from an older target
    std::string p;
    while (std::getline(ports, p, ',')) {
      const unsigned long v = strtoul(p.c_str(), nullptr, 10);
      if (v > 0 && v <= 65535) tcp_limit_ports_.push_back(static_cast<uint16_t>(v));
    }
  }
}

void Session::StartEngine() {
  // A client-only name (no port) is enough: the initiator only connects.
  local_engine_ = o_.local_engine.empty() ? "127.0.0.1" : o_.local_engine;
  adxl::Status st = adxl::SUCCESS;
  if (engine_ == nullptr) {  // else another Session's engine, started already (--peers)
    own_engine_ = std::make_unique<adxl::AdxlEngine>();
    engine_ = own_engine_.get();
    st = engine_->Initialize(local_engine_.c_str(), EngineOptions(o_.memory));
    Check(st == adxl::SUCCESS, "engine Initialize('" + local_engine_ + "') returned " + StatusName(st));
  }
  st = engine_->RegisterMem({buffer_.addr(), buffer_.size()}, adxl::MEM_HOST, handle_);
  Check(st == adxl::SUCCESS, std::string("engine RegisterMem returned ") + StatusName(st));
  if (device_.data() != nullptr) {
    st = engine_->RegisterMem({device_.addr(), device_.size()}, adxl::MEM_DEVICE, device_handle_);
    Check(st == adxl::SUCCESS,
          std::string("engine RegisterMem(MEM_DEVICE) returned ") + StatusName(st) +
              (st == adxl::UNSUPPORTED ? ": UCX here cannot move device memory (the engine's log says what is missing)"
                                       : ""));
  }
  st = engine_->Connect(target_engine_.c_str(), o_.timeout_ms);
  Check(st == adxl::SUCCESS, "engine Connect('" + target_engine_ + "') returned " + StatusName(st));
  connected_ = true;
  runner_ = std::make_unique<EngineRunner>(*engine_, target_engine_);
  engine_link_ = runner_->LinkDescription();
}

void Session::StartUcp() {
  std::string why;
  ucp_ = UcpInitiator::Create(buffer_.data(), buffer_.size(), ucp_worker_address_, ucp_rkey_, remote_addr_,
                              o_.timeout_ms, &why);
  Check(ucp_ != nullptr, "ucp baseline: " + why);
  transport_ = ucp_->transports();
  rma_note_ = ucp_->peer_mapped() ? "one-sided (ucp_rkey_ptr maps the target buffer)"
                                  : "emulated or network (no direct mapping; the target must progress)";
}

// The tcp baseline connects to the IP of the target's engine name: the
// address the engine itself connects to.
void Session::StartTcp() {
  std::string host, why;
  uint16_t engine_port = 0;
  Check(SplitHostPort(target_engine_, &host, &engine_port, &why), "tcp baseline: target engine name " + why);
  tcp_ = TcpInitiator::Create(host, tcp_port_, remote_addr_, o_.timeout_ms, &why);
  Check(tcp_ != nullptr, why);
  tcp_stream_ = tcp_->description();
  if (tcp_limit_ports_.empty()) {
    tcp_limit_note_ = "n/a (the target offers no limit streams)";
    return;
  }
  tcp_limit_ = TcpLimit::Create(host, tcp_limit_ports_, remote_addr_, o_.timeout_ms, &why);
  Check(tcp_limit_ != nullptr, why);
  tcp_limit_note_ = tcp_limit_->description() + "; MSG_ZEROCOPY: " + ProbeZeroCopy(host);
}

void Session::Finish() {
  if (finished_) return;
  finished_ = true;
  peers_.clear();
  tcp_limit_.reset();
  tcp_.reset();
  ucp_.reset();  // graceful close needs the target still up
  if (connected_ && runner_) engine_counters_ = runner_->EngineCounters();  // before the link goes
  if (connected_) engine_->Disconnect(target_engine_.c_str(), o_.timeout_ms);
  connected_ = false;
  Call(Message("BYE"));
}

std::string Session::MemoryDescription() const {
  std::string text = o_.memory == Memory::kHost
                         ? "host (mmap, both sides)"
                         // The baselines do not go through the engine: no mapping for them (--help).
                         : "adxl (AdxlEngine::MallocMem + EnableUseFabricMem=1, both engines; baselines unchanged)";
  text += std::string("; mmap pages ") + PagesOptionName(o_.pages) + " (transparent huge pages here: " +
          TransparentHugePagesSetting() + ")";
  if (DeviceHere() || DeviceThere()) {
    text += "; device: AdxlEngine::MallocMem(MEM_DEVICE), memcpy baseline by cudaMemcpy, no ucp or tcp baseline";
  }
  return text;
}

RunInfo Session::Info() const {
  std::vector<std::string> blocks, modes;
  for (size_t b : o_.block_sizes) blocks.push_back(FormatSize(b));
  for (Mode m : o_.modes) modes.push_back(ModeName(m));
  std::vector<std::string> baselines;
  if (o_.memcpy_baseline) baselines.push_back("memcpy (1 thread)");
  if (o_.ucp_baseline) baselines.push_back("ucp (1 thread)");
  if (o_.tcp_baseline) baselines.push_back("tcp (the limit: best of tcp_1stream and tcp_x2/x4/x1_poll/x2_poll)");
  if (cma_) {
    baselines.push_back("cma (process_vm_readv/writev, " + std::to_string(IOV_MAX) + " descriptors a call, " +
                        std::to_string(cma_->threads()) + " thread" + (cma_->threads() > 1 ? "s" : "") + ")");
  } else if (o_.cma_baseline) {
    baselines.push_back("cma off (the target runs on another host)");
  }
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  char when[64];
  time_t now = time(nullptr);
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S%z", localtime(&now));
  RunInfo info = {
      {"date", when},
      {"host", host},
      {"command", Join(o_.argv, " ")},
      {"engines", local_engine_ + " -> " + target_engine_},
      {"lane", LaneName(o_.lane)},
      {"memory", MemoryDescription()},
      {"initiator UCX_TLS", tls_.Describe()},
      {"target UCX_TLS", target_tls_},
      {"engine link", engine_link_.empty() ? "unknown (engine without adxl/adxl_ext.h)" : engine_link_},
      {"ucp transport", transport_.empty() ? "unknown (ucp baseline off)" : transport_ + " (lanes of the ucp endpoint)"},
      {"ucp rma", rma_note_},
      {"tcp stream", tcp_stream_.empty() ? "n/a (tcp baseline off)" : tcp_stream_},
      {"tcp limit", tcp_limit_note_},
      {"peers", peers_note_},
      {"directions", Join(o_.directions, ",")},
      {"transfer size", FormatSize(o_.transfer_size) + " per step"},
      {"block sizes", Join(blocks, ",")},
      {"loops", std::to_string(o_.loops) + " timed + 1 warm-up per row"},
      {"mode", Join(modes, ",")},
      {"threads", std::to_string(o_.threads) + " (engine rows)"},
      {"async batch", std::to_string(o_.async_batch) + " descriptors per request"},
      {"baselines", baselines.empty() ? "none" : Join(baselines, ", ")},
      {"target progress", o_.target_progress == TargetProgress::kPoll
                              ? "poll (ucp baseline's target)"
                              : "event (ucp baseline's target, as the engine: polls 200 us after the last event, "
                                "then ucp_worker_arm + efd)"},
      {"verify", o_.verify ? "on" : "off"},
  };
  if (o_.workload == Workload::kKv) AppendKvInfo(&info);
  if (o_.run_latency) {
    info.emplace_back("latency", std::to_string(o_.latency_iters) + " x TransferSync of one 4K descriptor");
  }
  return info;
}

// ---------------------------------------------------------------- verification

void Session::PrepareSources(const Direction &d) {
  if (!o_.verify) return;
  std::string why;
  if (d.op == adxl::WRITE) {
    Check(FillBuffer(Local(d), Local(d).size(), kWriteSeed, &why), why);
  } else {
    const bool device = d.target_memory == adxl::MEM_DEVICE;
    Call(TargetCommand("FILL", o_.transfer_size, device).Set("seed", kReadSeed));
    // The memcpy baseline's READ source holds the same pattern.
    const PageBuffer &scratch = Scratch(d);
    if (scratch.data() != nullptr) Check(FillBuffer(scratch, scratch.size(), kReadSeed, &why), why);
  }
}

uint64_t Session::SourceHash(const Direction &d, size_t len) {
  uint64_t h = 0;
  std::string why;
  if (d.op == adxl::WRITE) {
    Check(HashBuffer(Local(d), len, &h, &why), why);
    return h;
  }
  Check(Call(TargetCommand("HASH", len, d.target_memory == adxl::MEM_DEVICE)).GetU64("hash", &h),
        "target's HASH answer lacks a hash");
  return h;
}

uint64_t Session::SourceHashOf(const PageBuffer &src, size_t len) {
  uint64_t h = 0;
  std::string why;
  Check(HashBuffer(src, len, &h, &why), why);
  return h;
}

void Session::PoisonDestination(const Destination &dest, size_t len) {
  if (dest.remote) {
    Call(TargetCommand("CLEAR", len, dest.device));
  } else {
    std::string why;
    Check(PoisonBuffer(*dest.local, len, &why), why);
  }
}

uint64_t Session::DestinationHash(const Destination &dest, size_t len) {
  uint64_t h = 0;
  std::string why;
  if (!dest.remote) {
    Check(HashBuffer(*dest.local, len, &h, &why), why);
    return h;
  }
  Check(Call(TargetCommand("HASH", len, dest.device)).GetU64("hash", &h), "target's HASH answer lacks a hash");
  return h;
}

// ---------------------------------------------------------------- measuring

// The rows of a group in turn (MeasureInTurn: measured one after the other,
// a 2-core VM moved the engine / TCP ratio at 256 KiB between 0.5 and 1.5
// from run to run).  With --verify, every step (warm-up included) starts
// from a poisoned destination and ends with a hash comparison.
void Session::RunInTurn(const BlockBatch &b, std::vector<Turn> *turns) {
  const size_t span = b.block * b.count;
  std::vector<TurnRow> rows;
  for (const Turn &t : *turns) {
    TurnRow r;
    r.step = [this, &t, span] {
      if (o_.verify && !t.check) PoisonDestination(t.dest, span);
      // CPU time per GB: both bench processes around the step, unless the
      // step measured its own (the peers: their two processes).
      const double cpu0 = BenchCpuSeconds();
      StepResult s = t.step();
      if (s.cpu_seconds < 0) s.cpu_seconds = BenchCpuSeconds() - cpu0;
      return s;
    };
    if (o_.verify && t.check) r.check = t.check;
    if (o_.verify && !t.check) r.check = [this, &t, span] { return DestinationHash(t.dest, span) == t.expected; };
    r.bytes = span;
    r.ops = b.count;
    rows.push_back(std::move(r));
  }
  const std::vector<RowAccumulator> acc = MeasureInTurn(o_.loops, rows);
  for (size_t k = 0; k < turns->size(); ++k) acc[k].FillRow(&(*turns)[k].row);
}

Row Session::NewRow(const std::string &benchmark, const char *pattern, const Direction &d, size_t block,
                    size_t batch, int threads) const {
  Row r;
  r.benchmark = benchmark;
  r.pattern = pattern;
  r.block_size = block;
  r.batch_size = batch;
  r.threads = threads;
  // "<--lane>:<transports>", the engine's own account first.
  std::string used = engine_link_.empty() ? transport_ : engine_link_.substr(engine_link_.rfind(' ') + 1);
  r.transport = std::string(LaneName(o_.lane)) + ":" + (used.empty() ? "unknown" : used);
  for (char &c : r.transport) c = c == ',' ? '+' : c;  // keep the CSV field plain
  r.direction = d.name;
  r.initiator_memory = MemoryLabel(d.initiator_memory, o_.memory);
  // memcpy's stand-in for the target is its own mmap scratch buffer.
  r.target_memory = MemoryLabel(d.target_memory, benchmark == "memcpy" ? Memory::kHost : o_.memory);
  return r;
}

// Ends a group of rows: ratios, then into the report; then, since a failed
// transfer leaves the engine link failed (ADXL semantics), a fresh link for
// the next group.
void Session::EndGroup(std::vector<Row> *group, std::vector<Row> *rows) {
  FillRatios(group);
  rows->insert(rows->end(), group->begin(), group->end());
  ResetLinkAfterFailure(*group);
}

void Session::ResetLinkAfterFailure(const std::vector<Row> &group) {
  bool engine_failed = false;
  for (const Row &r : group) {
    // uniform_*: the engine too (the kv workload's reference rows).
    engine_failed |= (r.benchmark.rfind("engine", 0) == 0 || r.benchmark.rfind("uniform", 0) == 0) && r.error_count > 0;
  }
  if (!engine_failed) return;
  std::string why;
  const bool reconnected = runner_->Reconnect(o_.timeout_ms, &why);
  Check(reconnected, "after a failed step, the engine cannot reconnect: " + why);
}


void Session::RunBandwidth(const Direction &d, Progress &progress, std::vector<Row> *rows) {
  for (size_t block : o_.block_sizes) {
    const BlockBatch b{d.op, Local(d).addr(), RemoteAddr(d), block, o_.transfer_size / block};
    const size_t span = b.block * b.count;
    const Destination remote_side = RemoteSideDestination(d);
    const uint64_t expected = o_.verify ? SourceHash(d, span) : 0;
    const bool host_only = !UsesDevice(d);  // the ucp, tcp and cma baselines have host buffers only
    std::vector<Turn> turns;
    for (Mode m : o_.modes) {
      EngineSettings s{m, o_.threads, o_.async_batch, o_.timeout_ms};
      turns.push_back({NewRow(std::string("engine_") + ModeName(m), "seq", d, block, EngineRunner::CallSize(b, s),
                              o_.threads),
                       remote_side, expected, [this, b, s] { return runner_->RunStep(b, s); }});
    }
    if (ucp_ && host_only) {
      turns.push_back({NewRow("ucp", "seq", d, block, b.count, 1), remote_side, expected,
                       [this, b] { return ucp_->RunStep(b, o_.timeout_ms); }});
    }
    if (tcp_ && host_only) {
      // The old one-stream row; the group's `tcp` row is the limit (best of all).
      turns.push_back({NewRow("tcp_1stream", "seq", d, block, b.count, 1), remote_side, expected,
                       [this, b] { return tcp_->RunStep(b); }});
      AddTcpLimitTurns(b, d, remote_side, expected, &turns);
    }
    if (cma_ && host_only) {
      turns.push_back({NewRow("cma", "seq", d, block, b.count, cma_->threads()), remote_side, expected,
                       [this, b] { return cma_->RunStep(b); }});
    }
    if (host_only) AddPeerTurns(b, d, &turns);
    if (o_.memcpy_baseline) {
      const Destination dest = MemcpyDestination(d);
      const PageBuffer &src = MemcpySource(d);
      const bool device = UsesDevice(d);
      turns.push_back({NewRow("memcpy", "seq", d, block, b.count, 1), dest, o_.verify ? SourceHashOf(src, span) : 0,
                       [dest, &src, b, device] {
                         return MemcpyStep(dest.local->data(), src.data(), b.block, b.count, device);
                       }});
    }
    std::vector<std::string> names;
    for (const Turn &t : turns) names.push_back(t.row.benchmark);
    progress.Row(std::string(d.name) + " " + FormatSize(block) + " " + Join(names, " + "));
    RunInTurn(b, &turns);
    std::vector<Row> group;
    for (Turn &t : turns) group.push_back(std::move(t.row));
    AddTcpLimitRow(&group);
    EndGroup(&group, rows);
  }
}

// One 4 KiB descriptor per call, o_.latency_iters calls; a tenth as many
// untimed calls first.  Verified once at the end (every call moves the same
// block).
void Session::RunLatency(const Direction &d, Progress &progress, std::vector<Row> *rows) {
  const BlockBatch one{d.op, Local(d).addr(), RemoteAddr(d), kLatencyBlock, 1};
  const int warmup = std::max(10, o_.latency_iters / 10);
  const std::string label = std::string(d.name) + " latency ";
  auto measure = [&](const std::string &name, const Destination &dest, uint64_t expected,
                     const std::function<StepResult(int)> &run) {
    Row row = NewRow(name, "latency", d, kLatencyBlock, 1, 1);
    RowAccumulator acc;
    if (o_.verify) PoisonDestination(dest, kLatencyBlock);
    StepResult warm = run(warmup);
    StepResult r = warm.errors > 0 ? warm : run(o_.latency_iters);
    acc.AddStep(r, kLatencyBlock * r.call_us.size(), r.call_us.size());
    if (o_.verify && r.errors == 0) acc.AddCheck(DestinationHash(dest, kLatencyBlock) == expected);
    acc.FillRow(&row);
    return row;
  };
  std::vector<Row> group;
  const uint64_t expected = o_.verify ? SourceHash(d, kLatencyBlock) : 0;
  progress.Row(label + "engine");
  group.push_back(measure("engine_sync", RemoteSideDestination(d), expected,
                          [&](int n) { return runner_->RunLatency(one, n, o_.timeout_ms); }));
  if (ucp_ && !UsesDevice(d)) {
    progress.Row(label + "ucp");
    group.push_back(measure("ucp", RemoteSideDestination(d), expected,
                            [&](int n) { return ucp_->RunLatency(one, n, o_.timeout_ms); }));
  }
  if (tcp_ && !UsesDevice(d)) {
    progress.Row(label + "tcp");
    group.push_back(measure("tcp", RemoteSideDestination(d), expected,
                            [&](int n) { return tcp_->RunLatency(one, n); }));
  }
  if (cma_ && !UsesDevice(d)) {
    progress.Row(label + "cma");
    group.push_back(measure("cma", RemoteSideDestination(d), expected,
                            [&](int n) { return cma_->RunLatency(one, n); }));
  }
  if (o_.memcpy_baseline) {
    progress.Row(label + "memcpy");
    const Destination dest = MemcpyDestination(d);
    const PageBuffer &src = MemcpySource(d);
    group.push_back(measure("memcpy", dest, o_.verify ? SourceHashOf(src, kLatencyBlock) : 0, [&](int n) {
      return MemcpyLatency(dest.local->data(), src.data(), kLatencyBlock, n, UsesDevice(d));
    }));
  }
  EndGroup(&group, rows);
}

void Session::RunAll(std::vector<Row> *rows) {
  if (o_.workload == Workload::kKv) return RunKvRows(o_, {this}, rows);
  int total = 0;
  for (const std::string &name : o_.directions) {
    const bool host_only = !UsesDevice(*FindDirection(name.c_str()));
    const int baselines = (ucp_ && host_only ? 1 : 0) + (tcp_ && host_only ? 1 : 0) +
                          (cma_ && host_only ? 1 : 0) + (o_.memcpy_baseline ? 1 : 0);
    if (o_.run_bandwidth) total += static_cast<int>(o_.block_sizes.size());  // a group at a time
    if (o_.run_latency) total += 1 + baselines;
  }
  Progress progress(total);
  for (const std::string &name : o_.directions) {
    const Direction &d = *FindDirection(name.c_str());
    PrepareSources(d);
    if (o_.run_bandwidth) RunBandwidth(d, progress, rows);
    if (o_.run_latency) RunLatency(d, progress, rows);
  }
}

// ---------------------------------------------------------------- entry

}  // namespace bench
