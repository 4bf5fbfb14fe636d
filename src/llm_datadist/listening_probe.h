// WaitListening: a rank-table link (rank_table_link.cc) waits until each
// peer listens before it links, because the peers reach their own link call
// at different times and a link to a port nobody listens on yet logs
// refused-connect lines for every try.  A TCP connect, closed at once:
// nothing is sent, and no lock is held by the caller while it waits.
#ifndef LLM_DATADIST_SRC_LISTENING_PROBE_H_
#define LLM_DATADIST_SRC_LISTENING_PROBE_H_

#include <chrono>
#include <string>

namespace llm_datadist::internal {

// True once something accepts TCP connections at engine name "ip:port" /
// "[ipv6]:port" (each try waits up to 500 ms, tries 20 ms apart); false at
// `deadline` or for a name that does not resolve.
bool WaitListening(const std::string &engine, std::chrono::steady_clock::time_point deadline);

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_SRC_LISTENING_PROBE_H_
