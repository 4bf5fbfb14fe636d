// The rank table of a rank-table link (ext::LinkRankTable,
// include/llm_datadist/llm_datadist_ext.h): the reference's JSON
// (server_list[].device[] with rank_id and device_ip) -> one engine name
// per rank, and the port a rank without one listens on.  Pure functions (no
// engine, no lock): the link (rank_table_link.cc) and the tests use them.
#ifndef LLM_DATADIST_SRC_RANK_TABLE_H_
#define LLM_DATADIST_SRC_RANK_TABLE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cache_types.h"

namespace llm_datadist::internal {

// CRC-32 (IEEE 802.3, reflected, the one of zlib.crc32) of `bytes`: the
// Python package derived its ports with zlib.crc32, so every participant,
// whichever package version it runs, derives the same ports.
uint32_t Crc32(const std::string &bytes);

// Ranks without a port listen in 12000-19999 (below the ephemeral ports):
// kRankPortBase + 4 * (Crc32(comm_name) % kRankPortSlots) + the rank's
// place among the link's ranks (at most 4 ranks, so comms of other names
// meet only when their slots collide).
constexpr uint32_t kRankPortBase = 12000;
constexpr uint32_t kRankPortSlots = 2000;
uint32_t RankPort(const std::string &comm_name, size_t place);

// A rank's engine: "ip:port" / "[ipv6]:port"; port_given false when the
// port is the derived one (the rank's cluster must listen there itself).
struct RankEngine {
  std::string engine;
  bool port_given = true;
};

// {rank id: engine} of every device of `rank_table` (JSON text).  A device's
// engine is device_ip:device_port (else device_ip:port), device_ip written
// "ip:port" / "[ipv6]:..." as it is, else device_ip on RankPort(comm_name,
// the rank's place in `ranks`; 0 for a rank not in it).  rank_id: a number
// or a string of one; a later device of the same rank wins.
// LLM_PARAM_INVALID with one ERROR line naming `what` when the text is no
// JSON with server_list[].device[], or a device has no rank_id or no
// device_ip, or its rank_id is no number, or its device_port (else port)
// is neither an integer nor a string of digits in 1-65535.
Status ParseRankTable(const char *what, const std::string &rank_table, const std::string &comm_name,
                      const std::vector<uint32_t> &ranks, std::map<int64_t, RankEngine> *engines);

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_SRC_RANK_TABLE_H_
