// ext::DataDistAccess: how our extension (include/llm_datadist/llm_datadist_ext.h,
// llm_datadist_ext.cc) reaches the cache layer behind a vendor's
// LlmDataDist, whose header befriends it (the class layout stays the
// vendor's).  Defined in datadist_access.cc, over llm_datadist_impl.h.
#ifndef LLM_DATADIST_SRC_DATADIST_ACCESS_H_
#define LLM_DATADIST_SRC_DATADIST_ACCESS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cache_manager.h"
#include "llm_datadist/llm_datadist.h"

namespace llm_datadist::ext {

struct DataDistAccess {
  // The cache layer of `datadist` (thread-safe on its own; LLM_FAILED with
  // one ERROR line for every call before Initialize and after Finalize).
  static internal::CacheManager &Manager(LlmDataDist &datadist);
  // Initialize's body for options already in the engine's terms; records
  // the listen address and options as Initialize does, so SetRole and the
  // class's other calls see the same state.
  static Status InitializeEngine(LlmDataDist &datadist, const std::string &local_engine,
                                 const std::map<AscendString, AscendString> &engine_options);
  // CacheManager::Rebind, then the same record.  LLM_EXIST_LINK with one
  // ERROR line while a rank-table link holds the listener (HoldListener) or
  // another move is under way.  `instance` 0: a move of its own
  // (ext::MoveListener); else the instance of the rank-table link that
  // moves the listener it holds (LLM_FAILED when that instance has ended).
  static Status MoveListener(LlmDataDist &datadist, const std::string &local_engine,
                             const std::map<AscendString, AscendString> &engine_options, const char *what,
                             uint64_t instance = 0);
  // A rank-table link holds the listener from before its move to its end,
  // so that no other link, SetRole or MoveListener moves it from where its
  // peers reach this cluster meanwhile: gives where the cluster listens and
  // the engine options a move reuses (as Listening).  LLM_FAILED when
  // `instance` no longer runs, LLM_EXIST_LINK while a move is under way,
  // each with one ERROR line naming `what`.  ReleaseListener ends a hold
  // (nothing when its instance has ended: Finalize dropped every hold).
  static Status HoldListener(LlmDataDist &datadist, uint64_t instance, const char *what, std::string *listen,
                             std::map<AscendString, AscendString> *engine_options);
  static void ReleaseListener(LlmDataDist &datadist, uint64_t instance);
  // LLM_FAILED with one ERROR line naming `what` unless initialized.
  static Status Ready(LlmDataDist &datadist, const char *what);
  // Where the cluster listens as recorded by Initialize and the listener's
  // moves ("" when client only), and the engine options a move reuses.
  static void Listening(LlmDataDist &datadist, std::string *listen,
                        std::map<AscendString, AscendString> *engine_options);
  // Which Initialize the cluster runs under: a number that every Initialize
  // moves on (0 when not initialized).  A caller that waits with no lock
  // held (LinkRankTable) compares it to tell that a Finalize came between.
  static uint64_t Instance(LlmDataDist &datadist);
  // The rank-table links' comms (rank_table_link.cc): Finalize forgets them
  // and numbering starts again at 1.  AddComm records the peers of a new
  // comm and gives its id (0 when `instance` is no longer the one running);
  // TakeComm removes one (false when there is none); HasComm asks.
  static uint64_t AddComm(LlmDataDist &datadist, uint64_t instance, std::vector<ClusterEngine> peers);
  static bool TakeComm(LlmDataDist &datadist, uint64_t comm_id, std::vector<ClusterEngine> *peers);
  static bool HasComm(LlmDataDist &datadist, uint64_t comm_id);
};

// Test seam: when set, each round of a rank-table link's links
// (rank_table_link.cc) calls it with no lock held, after the round checked
// that its Initialize still runs and before the round's LinkClusters (the
// window a Finalize can fall into).  Tests only.
extern std::function<void()> link_round_window_for_test;

}  // namespace llm_datadist::ext

#endif  // LLM_DATADIST_SRC_DATADIST_ACCESS_H_
