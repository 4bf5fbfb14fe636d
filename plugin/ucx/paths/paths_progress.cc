// PathsMover (paths_mover.h): its paths and failover from open to close,
// and the progress thread's hooks over them (core/progress_source.h).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "am/am_transport.h"
#include "paths/net_path.h"
#include "paths/path_failover.h"
#include "paths/paths_mover.h"

// Named (rdma_paths, ADXL_UCX_RDMA_PATHS): false (logged, nothing left
// open) when one cannot be opened; a user who named paths wants them, not a
// silent single path.  Not named: every candidate interface
// (NetPath::CandidateInterfaces) when there are two or more, those that
// fail to open left out (logged); fewer than two: none, the lane runs on the
// context's own worker.  "none": no paths either way.
bool PathsMover::Open(const UcxParams &params, bool over_am, const std::string &rx_seg_size) {
  if (params.rdma_paths_none) return true;
  const bool named = !params.rdma_paths.empty();
  const std::vector<std::string> devices = named ? params.rdma_paths : NetPath::CandidateInterfaces();
  if (devices.size() < (named ? 1u : 2u)) return true;
  if (!over_am) {
    if (named) {
      core_.log(ADXL_PLUGIN_LOG_WARN, "rdma_paths (ADXL_UCX_RDMA_PATHS) applies to the RDMA lane over active messages; the lane "
                                      "runs UCP RMA here, whose multi-rail uses the devices itself: paths ignored");
    }
    return true;
  }
  for (const std::string &dev : devices) {
    if (paths_.size() == UcxParams::kMaxRdmaPaths) break;
    std::string why;
    std::unique_ptr<NetPath> p = NetPath::Open(dev, rx_seg_size, core_.log, params.faults, &why);
    if (p == nullptr && named) {
      core_.log(ADXL_PLUGIN_LOG_ERROR, "rdma_paths (ADXL_UCX_RDMA_PATHS): path over '%s' cannot open: %s", dev.c_str(), why.c_str());
      paths_.clear();
      return false;
    }
    if (p == nullptr) {
      core_.log(ADXL_PLUGIN_LOG_WARN, "network path over '%s' cannot open (%s); left out", dev.c_str(), why.c_str());
      continue;
    }
    core_.log(ADXL_PLUGIN_LOG_INFO, "RDMA lane path %zu: %s%s", paths_.size(), dev.c_str(),
              named ? "" : " (every interface up with IPv4: ADXL_UCX_RDMA_PATHS unset)");
    paths_.push_back(std::move(p));
  }
  if (!named && paths_.size() < 2) paths_.clear();  // one path: the context's own worker does it
  if (paths_.empty()) return true;
  failover_ = std::make_unique<PathFailover>();
  failover_->Init(&core_, &paths_);
  return true;
}

void PathsMover::Stop() {
  if (failover_ == nullptr) return;
  failover_->Run();  // ends the striped batches still queued for a re-post
  failover_->Shutdown();
}

void PathsMover::Close() {
  // The paths first: what their teardown ends may still report to the
  // failover, which goes last.
  paths_.clear();
  failover_.reset();
}

std::string PathsMover::DescribeTransports() const {
  std::string t;
  for (size_t i = 0; i < paths_.size(); ++i) t += (i == 0 ? ",paths(" : ",") + paths_[i]->device();
  if (!paths_.empty()) t += ")";
  return t;
}

unsigned PathsMover::Progress() {
  unsigned n = 0;
  for (const auto &p : paths_) n += ucp_worker_progress(p->worker());
  return n;
}

bool PathsMover::RunDue() {
  // Outside ucp_worker_progress: work UCP callbacks queued (am_transport.h).
  bool any = false;
  for (const auto &p : paths_) {
    if (p->am.HasDeferred()) {
      p->am.RunDeferred();
      any = true;
    }
  }
  // Failed network paths out, returned ones back (path_failover.h).
  if (failover_ != nullptr && failover_->Due()) {
    failover_->Run();
    any = true;
  }
  return any;
}

ucs_status_t PathsMover::Arm() {
  ucs_status_t st = UCS_OK;
  for (size_t i = 0; i < paths_.size() && st == UCS_OK; ++i) st = ucp_worker_arm(paths_[i]->worker());
  return st;
}

int PathsMover::TimeoutMs() const { return failover_ != nullptr ? failover_->TimeoutMs() : -1; }

std::vector<int> PathsMover::EpollFds() const {
  std::vector<int> fds;
  for (const auto &p : paths_) fds.push_back(p->event_fd());
  if (failover_ != nullptr && failover_->watch_fd() >= 0) fds.push_back(failover_->watch_fd());
  return fds;
}

void PathsMover::Readable(int fd) {
  if (failover_ != nullptr && fd == failover_->watch_fd()) failover_->WatchReadable();
}

ProgressSource::TargetMarks PathsMover::MarkTargetOps() {
  TargetMarks marks;
  marks.reserve(paths_.size());
  for (const auto &p : paths_) marks.push_back(p->am.TargetOpMark());
  return marks;
}

bool PathsMover::TargetOpsBefore(const TargetMarks &marks) {
  bool pending = false;
  for (size_t i = 0; i < paths_.size() && i < marks.size(); ++i) {
    pending = pending || paths_[i]->am.TargetOpsBefore(marks[i]);
  }
  return pending;
}
