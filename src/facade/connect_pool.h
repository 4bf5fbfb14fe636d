// ConnectPool: HIXL's asynchronous Connect / Disconnect (docs/contract.md §1.7, hixl.h).
//
// Contract:
//  - Submit() queues a task; at most `capacity` tasks wait at a time (tasks
//    being run do not count); one more is RESOURCE_EXHAUSTED.
//  - `threads` workers run the tasks.  Tasks for one remote run one at a
//    time in submission order; tasks for different remotes run in parallel.
//  - Each remote has the state of its latest submission: CONNECT_PENDING /
//    DISCONNECT_PENDING when queued, CONNECTING / DISCONNECTING while it runs,
//    then CONNECTED or CONNECT_FAILED; a finished disconnect removes the
//    remote (NOT_CONNECT).  An earlier task still runs but no longer changes
//    the state.
//  - A CONNECTED remote whose link is gone since (Disconnect, or dropped by
//    AutoConnect) leaves the map when queried; one whose link failed reads
//    CONNECT_FAILED.
//  - Close() drops queued tasks and makes Submit() FAILED from then on;
//    running tasks go on, and it does not wait for them (so that a caller
//    can end them, e.g. by finalizing the engine, before joining).
//  - Stop() closes, waits for running tasks and forgets all states.  The
//    destructor stops.
// Thread-safe.  The pool knows nothing of the engine: it calls `Ops`.
#ifndef ADXL_SRC_FACADE_CONNECT_POOL_H_
#define ADXL_SRC_FACADE_CONNECT_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "hixl/hixl_types.h"

namespace adxl {

class ConnectPool {
 public:
  enum class LinkProbe { kNone, kConnected, kFailed };
  struct Ops {
    std::function<Status(const std::string &remote, int32_t timeout_ms)> connect;
    std::function<Status(const std::string &remote, int32_t timeout_ms)> disconnect;
    std::function<LinkProbe(const std::string &remote)> probe;  // the engine's link to remote now
  };

  ConnectPool(Ops ops, uint32_t threads, uint32_t capacity);
  ~ConnectPool() { Stop(); }
  ConnectPool(const ConnectPool &) = delete;
  ConnectPool &operator=(const ConnectPool &) = delete;

  // SUCCESS, RESOURCE_EXHAUSTED (queue full) or FAILED (stopped).
  Status Submit(const std::string &remote, bool connect, int32_t timeout_ms);
  hixl::AsyncConnectStatus Get(const std::string &remote);
  std::map<std::string, hixl::AsyncConnectStatus> GetAll();
  void Close() ADXL_EXCLUDES(mu_);
  void Stop() ADXL_EXCLUDES(stop_mu_, mu_);

 private:
  struct Task {
    uint64_t seq;
    bool connect;
    int32_t timeout_ms;
  };
  struct Remote {
    std::deque<Task> queue;
    bool busy = false;  // a worker runs one of its tasks
    uint64_t latest = 0;
    hixl::AsyncConnectStatus state = hixl::AsyncConnectStatus::NOT_CONNECT;
  };

  void Work() ADXL_EXCLUDES(mu_);
  // Reconciles a settled CONNECTED entry with the engine (ops_.probe, which
  // only reads the engine's link table).  Returns false when the entry was
  // erased.
  bool Reconcile(std::map<std::string, Remote>::iterator it) ADXL_REQUIRES(mu_);

  Ops ops_;
  const size_t capacity_;
  // Locks: stop_mu_ -> mu_.  mu_ is never held across ops_.connect or
  // ops_.disconnect (they wait on a peer); it is held across ops_.probe,
  // which takes the engine's lifecycle lock (shared) and its link table's
  // leaf lock, never anything of this pool.
  Mutex stop_mu_;  // serialises Stop() (joins threads_)
  Mutex mu_ ADXL_ACQUIRED_AFTER(stop_mu_);
  CondVar cv_;
  std::map<std::string, Remote> remotes_ ADXL_GUARDED_BY(mu_);
  std::deque<std::string> ready_ ADXL_GUARDED_BY(mu_);  // remotes with queued tasks and no running one
  size_t queued_ ADXL_GUARDED_BY(mu_) = 0;
  uint64_t next_seq_ ADXL_GUARDED_BY(mu_) = 1;
  bool stop_ ADXL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ADXL_GUARDED_BY(stop_mu_);
};

}  // namespace adxl

#endif  // ADXL_SRC_FACADE_CONNECT_POOL_H_
