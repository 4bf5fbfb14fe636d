// The rank-table link (include/llm_datadist/llm_datadist_ext.h,
// LinkRankTable / UnlinkComm / QueryRegisterMemStatus): the reference's
// Python-only link(comm_name, cluster_rank_info, rank_table), here so that
// the Python package only checks types and raises.  The rank table's parse
// and the derived ports are rank_table.cc; the wait for a peer's listener
// listening_probe.cc; the comm table lives with the LlmDataDist
// (DataDistAccess).  Nothing here holds a lock: the waits and retries run
// between the cache layer's own calls.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cache_manager.h"
#include "common/log.h"
#include "datadist_access.h"
#include "listening_probe.h"
#include "llm_datadist/llm_datadist_ext.h"
#include "rank_table.h"

namespace llm_datadist::ext {

std::function<void()> link_round_window_for_test;

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kLink[] = "LinkRankTable";
constexpr auto kDeadline = std::chrono::seconds(10);  // for every peer to listen and link
constexpr int32_t kLinkTimeoutMs = 3000;              // one LinkClusters / UnlinkClusters
constexpr auto kRetryPause = std::chrono::milliseconds(50);

// Characters of UTF-8 text (the Python len() of the name).
size_t Characters(const std::string &s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// The rules on comm_name and cluster_rank_info (the header's), with the
// ERROR line of the first one broken.
Status CheckArguments(uint64_t self, const std::string &comm_name,
                      const std::vector<std::pair<uint64_t, uint32_t>> &info) {
  const size_t chars = Characters(comm_name);
  if (chars < 1 || chars > 127) {
    ADXL_ERROR("%s: comm_name must be 1 to 127 characters (it has %zu)", kLink, chars);
    return LLM_PARAM_INVALID;
  }
  if (info.size() < 2 || info.size() > 4) {
    ADXL_ERROR("%s: cluster_rank_info must hold 2 to 4 clusters (it holds %zu)", kLink, info.size());
    return LLM_PARAM_INVALID;
  }
  bool mine = false;
  for (size_t i = 0; i < info.size(); ++i) {
    if (i > 0 && info[i].second <= info[i - 1].second) {
      ADXL_ERROR("%s: ranks in cluster_rank_info must be ordered and distinct (rank %u after %u)", kLink,
                 info[i].second, info[i - 1].second);
      return LLM_PARAM_INVALID;
    }
    for (size_t j = 0; j < i; ++j) {
      if (info[j].first == info[i].first) {
        ADXL_ERROR("%s: cluster ids in cluster_rank_info must be distinct (cluster %lu twice)", kLink,
                   static_cast<unsigned long>(info[i].first));
        return LLM_PARAM_INVALID;
      }
    }
    mine = mine || info[i].first == self;
  }
  if (!mine) {
    ADXL_ERROR("%s: cluster_rank_info does not name this cluster (%lu)", kLink, static_cast<unsigned long>(self));
    return LLM_PARAM_INVALID;
  }
  return LLM_SUCCESS;
}

// A Finalize came while the link waited (with no lock held): LLM_FAILED and
// one ERROR line.  What the link made before it went with the Finalize,
// which drops every link.
Status FinalizedWhileLinking(const std::string &what) {
  ADXL_ERROR("%s: finalized while linking", what.c_str());
  return LLM_FAILED;
}

// Whether the Initialize this link started under still runs.
bool StillRunning(LlmDataDist &datadist, uint64_t instance) { return DataDistAccess::Instance(datadist) == instance; }

// Links to every peer, retrying those that do not answer yet until
// `deadline`; on failure undoes the links it made (an incoming link of a
// peer's own stays) and returns the status, with one ERROR line: the
// retries' lines are WARN (LinkClusters' quiet), and a peer that never
// listened is not connected to (the engine's Connect would write ERROR
// lines of its own).  `instance`: DataDistAccess::Instance when the link
// started; each round of links first checks that it still runs, so
// a link that waited across a Finalize and a new Initialize makes nothing in
// the new one and undoes nothing there.  (A Finalize and an Initialize that
// both fall between that check and the round's own start, microseconds, are
// not seen: that round's links then stay in the new instance, where
// UnlinkClusters or Finalize removes them.)
Status LinkAll(LlmDataDist &datadist, const std::string &what, const std::vector<ClusterEngine> &peers,
               uint64_t instance, Clock::time_point deadline) {
  // Quietly first: a link to a port nobody listens on yet logs every try.
  // Those that do not listen by the deadline (`silent`) are not tried.
  std::vector<ClusterEngine> todo, done, silent;
  for (const ClusterEngine &p : peers) {
    (internal::WaitListening(p.remote_engine, deadline) ? todo : silent).push_back(p);
  }
  Status failed = LLM_SUCCESS;
  ClusterEngine failed_peer{};  // the peer whose status ended the link (named in the ERROR line)
  while (!todo.empty()) {
    if (!StillRunning(datadist, instance)) return FinalizedWhileLinking(what);
    if (link_round_window_for_test) link_round_window_for_test();
    std::vector<Status> rets;
    DataDistAccess::Manager(datadist).LinkClusters(todo, rets, kLinkTimeoutMs, /*quiet=*/true);
    std::vector<ClusterEngine> again;
    for (size_t i = 0; i < todo.size(); ++i) {
      const Status r = i < rets.size() ? rets[i] : LLM_FAILED;
      if (r == LLM_SUCCESS) {
        done.push_back(todo[i]);
      } else if (r == LLM_LINK_FAILED || r == LLM_TIMEOUT) {
        again.push_back(todo[i]);
      } else if (failed == LLM_SUCCESS) {
        failed = r;
        failed_peer = todo[i];
      }
    }
    todo = std::move(again);
    if (todo.empty() || failed != LLM_SUCCESS || Clock::now() > deadline) break;
    std::this_thread::sleep_for(kRetryPause);
  }
  if (todo.empty() && silent.empty() && failed == LLM_SUCCESS) return LLM_SUCCESS;
  if (!StillRunning(datadist, instance)) return FinalizedWhileLinking(what);
  const bool none_listened = failed == LLM_SUCCESS && !silent.empty();
  if (failed == LLM_SUCCESS) {
    failed = LLM_LINK_FAILED;  // the deadline passed with peers still not answering
    failed_peer = none_listened ? silent[0] : todo[0];
  }
  ADXL_ERROR("%s: %zu of %zu peers not linked (%s; cluster %lu at %s among them%s); the %zu links made are undone",
             what.c_str(), peers.size() - done.size(), peers.size(), StatusName(failed),
             static_cast<unsigned long>(failed_peer.remote_cluster_id), failed_peer.remote_engine.c_str(),
             none_listened ? ", not listening by the deadline" : "", done.size());
  if (!done.empty()) {
    std::vector<Status> rets;
    DataDistAccess::Manager(datadist).UndoLinks(done, rets, kLinkTimeoutMs);
  }
  return failed;
}

// Ends a LinkRankTable's hold of the listener (DataDistAccess::HoldListener).
class ListenerHold {
 public:
  ListenerHold(LlmDataDist &datadist, uint64_t instance) : datadist_(datadist), instance_(instance) {}
  ~ListenerHold() { DataDistAccess::ReleaseListener(datadist_, instance_); }
  ListenerHold(const ListenerHold &) = delete;
  ListenerHold &operator=(const ListenerHold &) = delete;

 private:
  LlmDataDist &datadist_;
  const uint64_t instance_;
};

}  // namespace

Status LinkRankTable(LlmDataDist &datadist, const std::string &comm_name,
                     const std::vector<std::pair<uint64_t, uint32_t>> &cluster_rank_info,
                     const std::string &rank_table, uint64_t &comm_id) {
  comm_id = 0;
  Status s = DataDistAccess::Ready(datadist, kLink);
  if (s != LLM_SUCCESS) return s;
  const uint64_t instance = DataDistAccess::Instance(datadist);
  const uint64_t self = DataDistAccess::Manager(datadist).ClusterId();
  s = CheckArguments(self, comm_name, cluster_rank_info);
  if (s != LLM_SUCCESS) return s;
  std::vector<uint32_t> ranks;
  uint32_t my_rank = 0;
  for (const auto &cr : cluster_rank_info) {
    ranks.push_back(cr.second);
    if (cr.first == self) my_rank = cr.second;
  }
  std::map<int64_t, internal::RankEngine> engines;
  s = internal::ParseRankTable(kLink, rank_table, comm_name, ranks, &engines);
  if (s != LLM_SUCCESS) return s;
  const auto mine = engines.find(my_rank);
  if (mine == engines.end()) {
    ADXL_ERROR("%s: rank_table has no device with rank_id %u (this cluster, %lu)", kLink, my_rank,
               static_cast<unsigned long>(self));
    return LLM_PARAM_INVALID;
  }
  std::vector<ClusterEngine> peers;
  for (const auto &cr : cluster_rank_info) {
    if (cr.first == self) continue;
    const auto e = engines.find(cr.second);
    if (e == engines.end()) {
      ADXL_ERROR("%s: rank_table has no device with rank_id %u (cluster %lu)", kLink, cr.second,
                 static_cast<unsigned long>(cr.first));
      return LLM_PARAM_INVALID;
    }
    peers.push_back({cr.first, e->second.engine});
  }
  const std::string what = "link('" + comm_name + "')";
  std::string listen;
  std::map<AscendString, AscendString> engine_options;
  // Held to the end: the peers reach this cluster where it listens now (or
  // after the move below), so no other link moves it meanwhile.
  s = DataDistAccess::HoldListener(datadist, instance, what.c_str(), &listen, &engine_options);
  if (s != LLM_SUCCESS) return s;
  const ListenerHold hold(datadist, instance);
  if (!mine->second.port_given && listen != mine->second.engine) {
    // vLLM-Ascend's flow: no listen address at Initialize, no port in the
    // rank table: this cluster listens where every peer derives it does.
    const std::string move = what + ": listening at " + mine->second.engine +
                             " (the port derived for this rank; a device_port in the rank table chooses another)";
    s = DataDistAccess::MoveListener(datadist, mine->second.engine, engine_options, move.c_str(), instance);
    if (s != LLM_SUCCESS) return s;
  }
  s = LinkAll(datadist, what, peers, instance, Clock::now() + kDeadline);
  if (s != LLM_SUCCESS) return s;
  comm_id = DataDistAccess::AddComm(datadist, instance, std::move(peers));
  if (comm_id == 0) return FinalizedWhileLinking(what);
  return LLM_SUCCESS;
}

Status UnlinkComm(LlmDataDist &datadist, uint64_t comm_id) {
  Status s = DataDistAccess::Ready(datadist, "UnlinkComm");
  if (s != LLM_SUCCESS) return s;
  std::vector<ClusterEngine> peers;
  if (!DataDistAccess::TakeComm(datadist, comm_id, &peers)) {
    ADXL_ERROR("UnlinkComm: comm_id %lu is not linked", static_cast<unsigned long>(comm_id));
    return LLM_PARAM_INVALID;
  }
  // The comm goes as a whole, as the vendor's unlink(comm_id): forced.
  std::vector<Status> rets;
  return UnlinkClusters(datadist, peers, rets, kLinkTimeoutMs, true);
}

Status QueryRegisterMemStatus(LlmDataDist &datadist, uint64_t comm_id) {
  const Status s = DataDistAccess::Ready(datadist, "QueryRegisterMemStatus");
  if (s != LLM_SUCCESS) return s;
  if (!DataDistAccess::HasComm(datadist, comm_id)) {
    ADXL_ERROR("QueryRegisterMemStatus: comm_id %lu is not linked", static_cast<unsigned long>(comm_id));
    return LLM_PARAM_INVALID;
  }
  return LLM_SUCCESS;
}

}  // namespace llm_datadist::ext
