// Command-line options of adxl-bench: what to measure and how the two
// processes find each other.  Parsing only; nothing here starts anything.
#ifndef ADXL_TOOLS_BENCH_OPTIONS_H_
#define ADXL_TOOLS_BENCH_OPTIONS_H_

#include <cstddef>
#include <string>
#include <vector>

namespace bench {

enum class Role { kSpawn, kInitiator, kTarget };
enum class Lane { kAuto, kHccs, kRdma };
enum class Mode { kSync, kAsync };
// How the target drives its raw-UCP worker for the ucp baseline.
enum class TargetProgress { kEvent, kPoll };
// Where the engine buffers of both processes come from: kHost = plain mmap;
// kAdxl = AdxlEngine::MallocMem(MEM_HOST) with both engines initialized with
// EnableUseFabricMem=1, so that a same-node peer maps the memory directly.
enum class Memory { kHost, kAdxl };
// The pages of every mmap buffer (engine rows, baselines, the peers' numpy
// buffers): kHuge advises transparent huge pages (MADV_HUGEPAGE, what numpy
// does by itself for large arrays and what MallocMem does), kBase refuses them
// (MADV_NOHUGEPAGE).  One setting for every row, so that no row is measured on
// cheaper pages than another: a 2 MiB page is one page to pin for cma and one
// TLB entry, 512 of each on 4 KiB pages.
enum class Pages { kHuge, kBase };
// What a step moves: uniform blocks (block i <-> block i), or keys of a
// model's KV cache between two block pools (kv_layout.h).
enum class Workload { kUniform, kKv };

struct Options {
  Role role = Role::kSpawn;
  bool role_given = false;        // --spawn or --role seen
  std::string side_channel;       // host:port (target listens, initiator connects)
  std::string local_engine;       // this process's engine name
  Lane lane = Lane::kAuto;
  std::vector<std::string> directions = {"H2rH", "rH2H"};
  std::vector<size_t> block_sizes;  // powers of two, ascending
  size_t transfer_size = 64ull << 20;
  int loops = 3;
  std::vector<Mode> modes = {Mode::kSync};
  int threads = 1;
  int async_batch = 64;           // descriptors per TransferAsync request
  bool memcpy_baseline = true;
  bool ucp_baseline = true;
  bool tcp_baseline = true;
  bool cma_baseline = true;  // same host only
  // Peer rows (peer_baseline.h): NIXL (its progress thread, and busy-polling
  // agents) and Mooncake, from the venv of scripts/peers_venv.sh.  Off unless
  // --baselines names them.
  bool nixl_baseline = false;
  bool mooncake_baseline = false;
  std::string peers_venv;  // --peers-venv; "" = $ADXL_BENCH_PEERS_VENV or .venv-peers
  bool run_bandwidth = true;
  bool run_latency = true;
  int latency_iters = 2000;
  bool verify = false;
  bool quick = false;
  std::string csv_path;
  std::string json_path;
  int timeout_ms = 30000;         // per transfer call and per side-channel answer
  int accept_timeout_s = 300;     // how long a target waits for its initiator
  TargetProgress target_progress = TargetProgress::kEvent;
  Memory memory = Memory::kHost;
  Pages pages = Pages::kHuge;
  Workload workload = Workload::kUniform;
  std::string kv_model = "deepseek-r1";  // --model: a built-in layout or a JSON file
  int kv_tokens = 512;                   // --tokens: tokens per key
  int kv_keys = 2;                       // --keys: keys per step
  bool kv_per_layer = false;             // --kv-call layer: one transfer call per layer of a key
  int peers = 1;  // --peers: target processes of this initiator (kv; side_channel lists one per target)
  std::vector<std::string> argv;  // as given, for the JSON record
};

// Fills *out from argv.  Returns false with a message in *why on a usage
// error.  *help is set when --help was asked for (then nothing else counts).
bool ParseOptions(int argc, char **argv, Options *out, bool *help, std::string *why);

std::string HelpText(const char *prog);

// "16K" -> 16384; K, M, G are binary (x1024).  False on garbage or overflow.
bool ParseSize(const std::string &text, size_t *out);
// 16384 -> "16K".
std::string FormatSize(size_t bytes);

const char *LaneName(Lane lane);
const char *ModeName(Mode mode);
// "host" / "adxl": the --memory value, also its side-channel spelling.
const char *MemoryOptionName(Memory memory);
// False when `text` is neither.
bool ParseMemory(const std::string &text, Memory *out);
// "huge" / "base": the --pages value, also its side-channel spelling.
const char *PagesOptionName(Pages pages);
bool ParsePages(const std::string &text, Pages *out);

}  // namespace bench

#endif  // ADXL_TOOLS_BENCH_OPTIONS_H_
