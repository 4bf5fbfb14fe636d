// ext::DataDistAccess (datadist_access.h): the extension's way to the state
// of a vendor's LlmDataDist (llm_datadist_impl.h).
#include "datadist_access.h"

#include <string>
#include <utility>

#include "llm_datadist_impl.h"

namespace llm_datadist {

internal::CacheManager &ext::DataDistAccess::Manager(LlmDataDist &datadist) { return datadist.impl_->cm; }

Status ext::DataDistAccess::Ready(LlmDataDist &datadist, const char *what) { return datadist.impl_->Ready(what); }

Status ext::DataDistAccess::InitializeEngine(LlmDataDist &datadist, const std::string &local_engine,
                                             const std::map<AscendString, AscendString> &engine_options) {
  LlmDataDist::LlmDataDistImpl &impl = *datadist.impl_;
  {
    adxl::MutexLock lock(&impl.mu);
    if (impl.initialized) {
      ADXL_ERROR("InitializeEngine: already initialized");
      return LLM_FAILED;
    }
  }
  const Status s = impl.cm.Initialize(impl.cluster_id, local_engine, engine_options);
  if (s != LLM_SUCCESS) return s;
  impl.Started(internal::Listens(local_engine) ? local_engine : "", engine_options);
  return LLM_SUCCESS;
}

Status ext::DataDistAccess::MoveListener(LlmDataDist &datadist, const std::string &local_engine,
                                         const std::map<AscendString, AscendString> &engine_options,
                                         const char *what, uint64_t instance) {
  LlmDataDist::LlmDataDistImpl &impl = *datadist.impl_;
  uint64_t started = 0, generation = 0;
  std::string listen;
  std::map<AscendString, AscendString> recorded;
  // A rank-table link (instance != 0) holds the listener itself.
  Status s = impl.BeginMove(what, instance != 0 ? 1 : 0, instance, &started, &generation, &listen, &recorded);
  if (s != LLM_SUCCESS) return s;
  s = impl.cm.Rebind(local_engine, engine_options, what, generation);
  return impl.EndMove(what, started, s, internal::Listens(local_engine) ? local_engine : "", engine_options);
}

Status ext::DataDistAccess::HoldListener(LlmDataDist &datadist, uint64_t instance, const char *what,
                                         std::string *listen, std::map<AscendString, AscendString> *engine_options) {
  LlmDataDist::LlmDataDistImpl &impl = *datadist.impl_;
  adxl::MutexLock lock(&impl.mu);
  if (!impl.initialized || impl.instance != instance) {
    ADXL_ERROR("%s: finalized while linking", what);
    return LLM_FAILED;
  }
  if (impl.listener_moving) {
    ADXL_ERROR("%s: the listener is being moved (SetRole, MoveListener, or another link: a rank-table link's "
               "move, or a first link's to listen); link once it is done", what);
    return LLM_EXIST_LINK;
  }
  ++impl.listener_holds;
  *listen = impl.listen;
  *engine_options = impl.engine_options;
  return LLM_SUCCESS;
}

void ext::DataDistAccess::ReleaseListener(LlmDataDist &datadist, uint64_t instance) {
  LlmDataDist::LlmDataDistImpl &impl = *datadist.impl_;
  adxl::MutexLock lock(&impl.mu);
  if (impl.initialized && impl.instance == instance && impl.listener_holds > 0) --impl.listener_holds;
}

void ext::DataDistAccess::Listening(LlmDataDist &datadist, std::string *listen,
                                    std::map<AscendString, AscendString> *engine_options) {
  LlmDataDist::LlmDataDistImpl &impl = *datadist.impl_;
  adxl::MutexLock lock(&impl.mu);
  *listen = impl.listen;
  *engine_options = impl.engine_options;
}

uint64_t ext::DataDistAccess::Instance(LlmDataDist &datadist) {
  LlmDataDist::LlmDataDistImpl &impl = *datadist.impl_;
  adxl::MutexLock lock(&impl.mu);
  return impl.initialized ? impl.instance : 0;
}

uint64_t ext::DataDistAccess::AddComm(LlmDataDist &datadist, uint64_t instance, std::vector<ClusterEngine> peers) {
  LlmDataDist::LlmDataDistImpl &impl = *datadist.impl_;
  adxl::MutexLock lock(&impl.mu);
  if (!impl.initialized || impl.instance != instance) return 0;
  const uint64_t id = impl.next_comm++;
  impl.comms[id] = std::move(peers);
  return id;
}

bool ext::DataDistAccess::TakeComm(LlmDataDist &datadist, uint64_t comm_id, std::vector<ClusterEngine> *peers) {
  LlmDataDist::LlmDataDistImpl &impl = *datadist.impl_;
  adxl::MutexLock lock(&impl.mu);
  const auto it = impl.comms.find(comm_id);
  if (it == impl.comms.end()) return false;
  *peers = std::move(it->second);
  impl.comms.erase(it);
  return true;
}

bool ext::DataDistAccess::HasComm(LlmDataDist &datadist, uint64_t comm_id) {
  LlmDataDist::LlmDataDistImpl &impl = *datadist.impl_;
  adxl::MutexLock lock(&impl.mu);
  return impl.comms.count(comm_id) != 0;
}

}  // namespace llm_datadist
