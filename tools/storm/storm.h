// adxl-storm: a connect storm of N peer processes against one engine
// (the storm a starting cluster makes).  The driver process (storm_main.cc) owns the target engine;
// each peer (storm_peer.cc) is this same executable re-run with --peer, an
// engine of its own that, on "go", connects to the target, READs 1 MiB and
// WRITEs 64 KiB, verifies every byte, and reports.  Driver and peer talk
// over one socketpair per peer with newline-terminated text lines:
//
//   peer -> driver   "ready"                     engine initialized, memory registered
//   driver -> peer   "go"                        connect now ("go stages": and
//                                                report "connected" once Connect returned)
//   peer -> driver   "ok <connect_ms> <all_ms>"  linked, READ verified, WRITE done
//                    "fail <stage> <status>"     (stage: connect, read, verify, write)
//   driver -> peer   "verify"                    READ the 1 MiB again and verify it
//   peer -> driver   "ok" | "fail <stage> <status>"
//   driver closes the socket                     the peer finalizes and exits 0
#ifndef ADXL_TOOLS_STORM_STORM_H_
#define ADXL_TOOLS_STORM_STORM_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"

namespace storm {

constexpr size_t kReadBytes = 1 << 20;    // every peer READs these from the target
constexpr size_t kWriteBytes = 64 << 10;  // and WRITEs these into its own slot
constexpr uint64_t kReadSeed = 1;          // pattern seed of the READ area
inline uint64_t WriteSeed(int index) { return 1000 + static_cast<uint64_t>(index); }

// What a peer is told on its command line.
struct PeerArgs {
  int fd = -1;            // its end of the socketpair
  int index = 0;          // its slot in the target's write area
  std::string target;     // the target engine's name
  uint64_t region = 0;    // the target's registered region (READ area, then the slots)
  bool rdma = false;      // network lane: protocol_desc roce:host
  int timeout_ms = 60000; // Connect and transfer timeout
  std::string name = "127.0.0.1";  // the peer engine's own name
  // A network namespace (`ip netns`) the peer process runs in, "" for the
  // driver's own (adxl-storm --peer-netns).
  std::string netns;
};

// The options of every engine of the storm, target and peers: no buffer
// pool; on the network lane the RDMA lane (roce:host).
std::map<adxl::AscendString, adxl::AscendString> EngineOptions(bool rdma);

// The peer's main (storm_peer.cc); returns the process exit status.
int RunPeer(const PeerArgs &args);

// One line from `fd` (without the newline), waiting at most timeout_ms
// (< 0: forever).  False on EOF, error or timeout.
bool ReadLine(int fd, std::string *buffer, std::string *line, int timeout_ms);
bool WriteLine(int fd, const std::string &line);

// The driver's side (storm_driver.cc).

// One peer process as the driver sees it.
struct Peer {
  pid_t pid = -1;
  int fd = -1;           // the driver's end of the socketpair
  std::string buffer;    // bytes read but not yet a whole line
  std::string report;    // the latest line Collect read
  bool killed = false;   // the driver sent it SIGKILL
};

// A free TCP port on 127.0.0.1 for the target engine.
bool FreePort(uint16_t *port);
// Starts a peer (this executable, `self`, with --peer); false on failure.
bool Spawn(const std::string &self, const PeerArgs &a, Peer *p);
// Initializes the target engine as `name` and registers [region, +len) with
// it; false (said on stderr) when either fails.
bool StartTarget(adxl::AdxlEngine &engine, const std::string &name, bool rdma, void *region, size_t len,
                 adxl::MemHandle *handle);
// Reads one line from every peer in `which` until each answered or
// timeout_ms passed; a peer that closed or timed out gets "lost".
void Collect(std::vector<Peer> &peers, const std::vector<int> &which, int timeout_ms);

// The kill storm (kill_storm.cc): `rounds` rounds of `peers` peer processes,
// each SIGKILLed at a random moment of its first `window_ms` (start-up,
// handshake, wire-up, transfer; 0: 1.5x the time a round of unkilled peers
// takes to link here), against one target engine in this process; then
// `peers` fresh peers must link and verify and the target finalize.
// Returns the process exit status (0: the target lived through it all).
int RunKillStorm(const std::string &self, int rounds, int peers, bool rdma, int window_ms, int timeout_ms);

}  // namespace storm

#endif  // ADXL_TOOLS_STORM_STORM_H_
