#include "options.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <sstream>

#include "directions.h"
#include "kv_layout.h"

namespace bench {
namespace {

// Sizes used by --quick unless the user gave the option explicitly: the whole
// run takes a few seconds and proves correctness, not speed.
constexpr size_t kQuickTransferSize = 4ull << 20;
constexpr int kQuickLoops = 2;
constexpr int kQuickLatencyIters = 200;

std::vector<std::string> Split(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

bool IsPowerOfTwo(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

bool ParseInt(const std::string &text, long lo, long hi, int *out) {
  if (text.empty()) return false;
  char *end = nullptr;
  errno = 0;
  long v = strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

// "16K:2M" (every power of two in between) or "16K,1M,2M" (exactly those).
bool ParseLadder(const std::string &text, std::vector<size_t> *out, std::string *why) {
  std::vector<size_t> sizes;
  size_t colon = text.find(':');
  if (colon != std::string::npos) {
    size_t lo = 0, hi = 0;
    if (!ParseSize(text.substr(0, colon), &lo) || !ParseSize(text.substr(colon + 1), &hi) || !IsPowerOfTwo(lo) ||
        !IsPowerOfTwo(hi) || lo > hi) {
      *why = "--block-sizes '" + text + "': expected LO:HI, two powers of two with LO <= HI (e.g. 16K:2M)";
      return false;
    }
    for (size_t s = lo; s <= hi && s != 0; s <<= 1) sizes.push_back(s);
  } else {
    for (const std::string &item : Split(text, ',')) {
      size_t s = 0;
      if (!ParseSize(item, &s) || !IsPowerOfTwo(s)) {
        *why = "--block-sizes: '" + item + "' is not a power-of-two size (e.g. 64K)";
        return false;
      }
      sizes.push_back(s);
    }
  }
  std::set<size_t> unique(sizes.begin(), sizes.end());
  if (unique.empty()) {
    *why = "--block-sizes: no sizes given";
    return false;
  }
  out->assign(unique.begin(), unique.end());
  return true;
}

bool ParseModes(const std::string &text, std::vector<Mode> *out, std::string *why) {
  std::vector<Mode> modes;
  for (const std::string &m : Split(text, ',')) {
    if (m == "sync") {
      modes.push_back(Mode::kSync);
    } else if (m == "async") {
      modes.push_back(Mode::kAsync);
    } else {
      *why = "--mode: '" + m + "' is neither sync nor async";
      return false;
    }
  }
  if (modes.empty()) {
    *why = "--mode: expected sync, async or sync,async";
    return false;
  }
  *out = modes;
  return true;
}

bool ParseDirections(const std::string &text, std::vector<std::string> *out, std::string *why) {
  std::vector<std::string> dirs;
  for (const std::string &d : Split(text, ',')) {
    if (FindDirection(d.c_str()) == nullptr) {
      *why = "--directions: unknown direction '" + d + "' (H2rH, rH2H, D2rD, rD2D, D2rH, rH2D, H2rD, rD2H)";
      return false;
    }
    dirs.push_back(d);
  }
  if (dirs.empty()) {
    *why = "--directions: none given";
    return false;
  }
  *out = dirs;
  return true;
}

bool ParseBaselines(const std::string &text, Options *o, std::string *why) {
  o->memcpy_baseline = false;
  o->ucp_baseline = false;
  o->tcp_baseline = false;
  o->cma_baseline = false;
  for (const std::string &b : Split(text, ',')) {
    if (b == "memcpy") {
      o->memcpy_baseline = true;
    } else if (b == "ucp") {
      o->ucp_baseline = true;
    } else if (b == "tcp") {
      o->tcp_baseline = true;
    } else if (b == "cma") {
      o->cma_baseline = true;
    } else if (b == "nixl") {
      o->nixl_baseline = true;
    } else if (b == "mooncake") {
      o->mooncake_baseline = true;
    } else if (b == "peers") {
      o->nixl_baseline = o->mooncake_baseline = true;
    } else if (b != "none") {
      *why = "--baselines: '" + b + "' is not memcpy, ucp, tcp, cma, nixl, mooncake, peers or none";
      return false;
    }
  }
  return true;
}

bool ParseBench(const std::string &text, Options *o, std::string *why) {
  if (text == "all") {
    o->run_bandwidth = o->run_latency = true;
  } else if (text == "bandwidth") {
    o->run_bandwidth = true;
    o->run_latency = false;
  } else if (text == "latency") {
    o->run_bandwidth = false;
    o->run_latency = true;
  } else {
    *why = "--bench: '" + text + "' is not bandwidth, latency or all";
    return false;
  }
  return true;
}

// One option with its value (already split off).  Returns false on error.
bool Apply(const std::string &name, const std::string &value, Options *o, std::set<std::string> *given,
           std::string *why) {
  given->insert(name);
  auto bad = [&](const std::string &what) {
    *why = name + " '" + value + "': " + what;
    return false;
  };
  if (name == "--role") {
    if (value == "target") {
      o->role = Role::kTarget;
    } else if (value == "initiator") {
      o->role = Role::kInitiator;
    } else {
      return bad("expected target or initiator");
    }
    o->role_given = true;
  } else if (name == "--side-channel") {
    if (value.rfind(':') == std::string::npos) return bad("expected host:port");
    o->side_channel = value;
  } else if (name == "--local-engine") {
    o->local_engine = value;
  } else if (name == "--lane") {
    if (value == "hccs") {
      o->lane = Lane::kHccs;
    } else if (value == "rdma") {
      o->lane = Lane::kRdma;
    } else if (value == "auto") {
      o->lane = Lane::kAuto;
    } else {
      return bad("expected hccs, rdma or auto");
    }
  } else if (name == "--directions") {
    return ParseDirections(value, &o->directions, why);
  } else if (name == "--block-sizes") {
    return ParseLadder(value, &o->block_sizes, why);
  } else if (name == "--transfer-size") {
    if (!ParseSize(value, &o->transfer_size) || o->transfer_size == 0) return bad("expected a size such as 64M");
  } else if (name == "--loops") {
    if (!ParseInt(value, 1, 100000, &o->loops)) return bad("expected an integer in [1, 100000]");
  } else if (name == "--mode") {
    return ParseModes(value, &o->modes, why);
  } else if (name == "--threads") {
    if (!ParseInt(value, 1, 256, &o->threads)) return bad("expected an integer in [1, 256]");
  } else if (name == "--async-batch") {
    if (!ParseInt(value, 1, 1 << 20, &o->async_batch)) return bad("expected an integer >= 1");
  } else if (name == "--baselines") {
    return ParseBaselines(value, o, why);
  } else if (name == "--peers-venv") {
    o->peers_venv = value;
  } else if (name == "--bench") {
    return ParseBench(value, o, why);
  } else if (name == "--latency-iters") {
    if (!ParseInt(value, 1, 10000000, &o->latency_iters)) return bad("expected an integer >= 1");
  } else if (name == "--csv") {
    o->csv_path = value;
  } else if (name == "--json") {
    o->json_path = value;
  } else if (name == "--timeout-ms") {
    if (!ParseInt(value, 1, 3600000, &o->timeout_ms)) return bad("expected milliseconds in [1, 3600000]");
  } else if (name == "--accept-timeout") {
    if (!ParseInt(value, 1, 86400, &o->accept_timeout_s)) return bad("expected seconds in [1, 86400]");
  } else if (name == "--target-progress") {
    if (value == "event") {
      o->target_progress = TargetProgress::kEvent;
    } else if (value == "poll") {
      o->target_progress = TargetProgress::kPoll;
    } else {
      return bad("expected event or poll");
    }
  } else if (name == "--workload") {
    if (value == "uniform") {
      o->workload = Workload::kUniform;
    } else if (value == "kv") {
      o->workload = Workload::kKv;
    } else {
      return bad("expected uniform or kv");
    }
  } else if (name == "--model") {
    o->kv_model = value;
  } else if (name == "--tokens") {
    if (!ParseInt(value, 1, 1 << 20, &o->kv_tokens)) return bad("expected tokens per key in [1, 1048576]");
  } else if (name == "--keys") {
    if (!ParseInt(value, 1, 4096, &o->kv_keys)) return bad("expected keys per step in [1, 4096]");
  } else if (name == "--peers") {
    if (!ParseInt(value, 1, 64, &o->peers)) return bad("expected a number of targets in [1, 64]");
  } else if (name == "--kv-call") {
    if (value != "key" && value != "layer") return bad("expected key or layer");
    o->kv_per_layer = value == "layer";
  } else if (name == "--memory") {
    if (!ParseMemory(value, &o->memory)) return bad("expected host or adxl");
  } else if (name == "--pages") {
    if (!ParsePages(value, &o->pages)) return bad("expected huge or base");
  } else {
    *why = "unknown option '" + name + "' (see --help)";
    return false;
  }
  return true;
}

const std::set<std::string> kFlags = {"--spawn", "--quick", "--verify", "--help", "-h", "--latency"};
const std::set<std::string> kValued = {
    "--role",        "--side-channel", "--local-engine", "--lane",          "--directions",     "--block-sizes",
    "--transfer-size", "--loops",      "--mode",         "--threads",       "--async-batch",    "--baselines",
    "--bench",       "--latency-iters", "--csv",         "--json",          "--timeout-ms",     "--accept-timeout",
    "--target-progress", "--memory", "--pages", "--workload", "--model", "--tokens", "--keys", "--kv-call", "--peers",
    "--peers-venv"};

void ApplyQuickDefaults(const std::set<std::string> &given, Options *o) {
  o->verify = true;
  if (given.count("--transfer-size") == 0) o->transfer_size = kQuickTransferSize;
  if (given.count("--loops") == 0) o->loops = kQuickLoops;
  if (given.count("--latency-iters") == 0) o->latency_iters = kQuickLatencyIters;
  // Both modes, so that the one quick run exercises both engine paths.
  if (given.count("--mode") == 0) o->modes = {Mode::kSync, Mode::kAsync};
}

// --workload kv: the pool of the model's layout is the buffer of each side
// (--transfer-size does not apply); the memcpy baseline and the latency rows
// are uniform-only; the cma baseline runs only where --baselines names it
// (two more rows, measured in turn with the engine's).
bool ApplyKv(const std::set<std::string> &given, Options *o, std::string *why) {
  for (const char *kv_only : {"--model", "--tokens", "--keys", "--kv-call", "--peers"}) {
    if (o->workload != Workload::kKv && given.count(kv_only) != 0) {
      *why = std::string(kv_only) + " needs --workload kv";
      return false;
    }
  }
  if (o->workload != Workload::kKv) return true;
  if (o->role == Role::kInitiator && !o->side_channel.empty() && Split(o->side_channel, ',').size() != static_cast<size_t>(o->peers)) {
    *why = "--peers " + std::to_string(o->peers) + " needs as many --side-channel HOST:PORT entries, comma-separated";
    return false;
  }
  for (const std::string &d : o->directions) {
    if (UsesDevice(*FindDirection(d.c_str()))) {
      *why = "--workload kv moves host memory only (directions H2rH, rH2H)";
      return false;
    }
  }
  KvModel model;
  uint64_t pool = 0;
  KvPlanSettings s;
  s.tokens = o->kv_tokens;
  s.keys = o->kv_keys;
  if (!LoadKvModel(o->kv_model, &model, why) || !KvPoolBytes(model, s, &pool, why)) return false;
  o->transfer_size = static_cast<size_t>(pool);
  o->memcpy_baseline = false;
  if (given.count("--baselines") == 0) o->cma_baseline = false;
  o->run_latency = false;
  o->run_bandwidth = true;
  return true;
}

bool Validate(const Options &o, std::string *why) {
  if (o.role != Role::kSpawn && o.side_channel.empty()) {
    *why = "--role needs --side-channel host:port";
    return false;
  }
  if (o.role == Role::kTarget && o.local_engine.empty()) {
    *why = "--role target needs --local-engine host:port (the name the initiator connects to)";
    return false;
  }
  if (o.workload == Workload::kUniform &&
      (o.transfer_size < o.block_sizes.back() || o.transfer_size % o.block_sizes.back() != 0)) {
    *why = "--transfer-size " + FormatSize(o.transfer_size) + " must be a multiple of the largest block size " +
           FormatSize(o.block_sizes.back());
    return false;
  }
  return true;
}

}  // namespace

bool ParseSize(const std::string &text, size_t *out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(text.c_str(), &end, 10);
  if (errno != 0) return false;
  std::string unit(end);
  unsigned shift = 0;
  if (!unit.empty()) {
    char u = static_cast<char>(toupper(static_cast<unsigned char>(unit[0])));
    shift = u == 'K' ? 10 : u == 'M' ? 20 : u == 'G' ? 30 : 99;
    std::string rest = unit.substr(1);
    if (shift == 99 || !(rest.empty() || rest == "B" || rest == "iB" || rest == "b")) return false;
  }
  if (shift != 0 && v > (UINT64_MAX >> shift)) return false;
  *out = static_cast<size_t>(v << shift);
  return true;
}

std::string FormatSize(size_t bytes) {
  static const char *kUnits[] = {"", "K", "M", "G"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + kUnits[u];
}

const char *LaneName(Lane lane) {
  switch (lane) {
    case Lane::kHccs: return "hccs";
    case Lane::kRdma: return "rdma";
    default: return "auto";
  }
}

const char *ModeName(Mode mode) { return mode == Mode::kSync ? "sync" : "async"; }

const char *MemoryOptionName(Memory memory) { return memory == Memory::kAdxl ? "adxl" : "host"; }

const char *PagesOptionName(Pages pages) { return pages == Pages::kBase ? "base" : "huge"; }

bool ParsePages(const std::string &text, Pages *out) {
  if (text == "huge") {
    *out = Pages::kHuge;
  } else if (text == "base") {
    *out = Pages::kBase;
  } else {
    return false;
  }
  return true;
}

bool ParseMemory(const std::string &text, Memory *out) {
  if (text == "host") {
    *out = Memory::kHost;
  } else if (text == "adxl") {
    *out = Memory::kAdxl;
  } else {
    return false;
  }
  return true;
}

bool ParseOptions(int argc, char **argv, Options *out, bool *help, std::string *why) {
  Options o;
  *help = false;
  std::set<std::string> given;
  for (int i = 0; i < argc; ++i) o.argv.push_back(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    size_t eq = arg.find('=');
    bool inline_value = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    }
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return true;
    }
    if (kFlags.count(arg) == 0 && kValued.count(arg) == 0) {
      *why = "unknown option '" + arg + "' (see --help)";
      return false;
    }
    if (kFlags.count(arg) != 0) {
      if (inline_value) {
        *why = arg + " takes no value";
        return false;
      }
      if (arg == "--spawn") {
        o.role = Role::kSpawn;
        o.role_given = true;
      } else if (arg == "--quick") {
        o.quick = true;
      } else if (arg == "--verify") {
        o.verify = true;
      } else if (arg == "--latency") {
        o.run_bandwidth = false;
        o.run_latency = true;
      }
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) {
        *why = arg + " needs a value (see --help)";
        return false;
      }
      value = argv[++i];
    }
    if (!Apply(arg, value, &o, &given, why)) return false;
  }
  if (!o.role_given) {
    *why = "say how to run: --spawn (both processes from here) or --role target|initiator (see --help)";
    return false;
  }
  if (o.block_sizes.empty()) ParseLadder("16K:2M", &o.block_sizes, why);
  if (o.quick) ApplyQuickDefaults(given, &o);
  if (!ApplyKv(given, &o, why) || !Validate(o, why)) return false;
  *out = o;
  return true;
}

std::string HelpText(const char *prog) {
  std::ostringstream h;
  h << "adxl-bench: bandwidth and latency of the ADXL engine against memcpy, raw UCP and TCP\n"
    << "\n"
    << "Running (the initiator measures and prints; the target only serves):\n"
    << "  " << prog << " --spawn [options]     initiator here, target forked on loopback\n"
    << "  " << prog << " --role target --side-channel HOST:PORT --local-engine IP:PORT\n"
    << "  " << prog << " --role initiator --side-channel HOST:PORT [--local-engine IP] [options]\n"
    << "     (start the target first; it takes every measurement setting from the initiator)\n"
    << "\n"
    << "What to measure (defaults are sized for a small machine: a full run takes seconds):\n"
    << "  --directions LIST     H2rH (WRITE host->remote host), rH2H (READ remote host->host),\n"
    << "                        D2rD rD2D D2rH rH2D H2rD rD2H need device memory:\n"
    << "                        a build with the CUDA toolkit, a GPU, and a UCX that\n"
    << "                        moves device memory; no ucp or tcp baseline for them\n"
    << "                                                                      [H2rH,rH2H]\n"
    << "  --lane hccs|rdma|auto hccs: UCX_TLS=sm,self; rdma: UCX_TLS=tcp; auto: UCX default\n"
    << "                        (both processes; stands in for the engine's lanes).\n"
    << "                        A UCX_TLS you set yourself always wins               [auto]\n"
    << "  --memory host|adxl    the engine buffers of both processes: host (mmap), or\n"
    << "                        adxl (AdxlEngine::MallocMem, both engines started with\n"
    << "                        EnableUseFabricMem=1: a same-node peer maps the memory).\n"
    << "                        The baselines keep their own access: ucp registers the\n"
    << "                        same buffers in its own UCP context, tcp sends and\n"
    << "                        receives them through its socket, memcpy copies to\n"
    << "                        and from its own mmap scratch buffer               [host]\n"
    << "  --pages huge|base     pages of every mmap buffer, engine rows, baselines and\n"
    << "                        peers alike: huge = transparent huge pages advised\n"
    << "                        (MADV_HUGEPAGE, as numpy and MallocMem do), base =\n"
    << "                        4 KiB pages (MADV_NOHUGEPAGE)                      [huge]\n"
    << "  --block-sizes LO:HI   powers of two from LO to HI, or a list 16K,1M         [16K:2M]\n"
    << "  --transfer-size SIZE  bytes moved per step as one batch of descriptors    [64M]\n"
    << "  --loops N             timed steps per row, after one untimed warm-up step  [3]\n"
    << "  --mode sync|async     TransferSync, or TransferAsync + GetTransferStatus;\n"
    << "                        'sync,async' measures both                          [sync]\n"
    << "  --threads N           initiator threads, each moving 1/N of the batch     [1]\n"
    << "  --async-batch N       descriptors per TransferAsync request (async mode)  [64]\n"
    << "  --baselines LIST      memcpy (one thread, local copy), ucp (raw UCP put/get\n"
    << "                        + flush, one thread), tcp (the network limit: the best\n"
    << "                        of one plain TCP stream to the target's engine IP, one\n"
    << "                        send/recv per block, and 2/4 streams and busy-polled\n"
    << "                        receives with 4 MiB socket buffers), cma\n"
    << "                        (process_vm_writev/readv, IOV_MAX descriptors a call,\n"
    << "                        the engine's same-node copy threads; same host only)\n"
    << "                        or none                                [memcpy,ucp,tcp,cma]\n"
    << "                        nixl, mooncake (or peers: both): the peer engines from\n"
    << "                        their PyPI wheels (scripts/peers_venv.sh), rows nixl,\n"
    << "                        nixl_poll and mooncake; 'not installed' without the venv\n"
    << "  --peers-venv DIR      the peers' venv [$ADXL_BENCH_PEERS_VENV, else .venv-peers]\n"
    << "  --bench WHAT          bandwidth, latency (one 4 KiB descriptor per\n"
    << "                        TransferSync) or all                                 [all]\n"
    << "  --latency             same as --bench latency\n"
    << "  --latency-iters N     iterations of the latency mode                      [2000]\n"
    << "  --verify              check the destination after every step (fills the\n"
    << "                        'consistency' column: pass / fail / unchecked)\n"
    << "  --quick               a correctness run of seconds: --verify, transfer size 4M,\n"
    << "                        2 loops, sync and async, 200 latency iterations\n"
    << "  --target-progress M   how the target drives its raw-UCP worker: event (like\n"
    << "                        the engine: polls 200 us after the last event, then\n"
    << "                        ucp_worker_arm + event fd) or poll (always)         [event]\n"
    << "  --timeout-ms MS       limit per transfer call and per side-channel answer  [30000]\n"
    << "  --accept-timeout S    how long a target waits for its initiator            [300]\n"
    << "\n"
    << "KV-cache workload (--workload kv; H2rH/rH2H, sync/async, ucp and tcp baselines;\n"
    << "the cma baseline only where --baselines names it: the kernel's copy of the plan's\n"
    << "list and of the uniform reference's):\n"
    << "  --workload uniform|kv uniform blocks, or keys of a model's KV cache moved\n"
    << "                        between two paged block pools: per layer, per block\n"
    << "                        kind, through block tables with gaps             [uniform]\n"
    << "  --model M             " << BuiltinKvModels() << ", or a JSON layout file\n"
    << "                        (format: tools/bench/README.md)               [deepseek-r1]\n"
    << "  --tokens N            tokens per key                                     [512]\n"
    << "  --keys K              keys per step                                      [2]\n"
    << "  --kv-call key|layer   one transfer call per key, or one per layer of a key [key]\n"
    << "  --peers N             N target processes (--spawn starts them; an initiator\n"
    << "                        takes N comma-separated --side-channel entries), one\n"
    << "                        engine linked to all, each peer's keys moved at once:\n"
    << "                        H2rH = one-to-many, rH2H = many-to-one              [1]\n"
    << "\n"
    << "Output: a table on stdout (a progress line too when stdout is a terminal);\n"
    << "  --csv FILE            one row per measurement (scripts/plot_bench.py plots it)\n"
    << "  --json FILE           the same rows plus the run's settings\n"
    << "GB/s are decimal (1e9 bytes).  ops/s counts descriptors.  Latency is per transfer\n"
    << "call (a whole batch in bandwidth rows).  Exit status: 0 when every step succeeded\n"
    << "and every verified step matched; 1 when a step failed or mismatched; 2 on bad usage\n"
    << "or a set-up failure.\n";
  return h.str();
}

}  // namespace bench
