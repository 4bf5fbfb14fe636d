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
//  - Stop() drops queued tasks, waits for running ones and forgets all
//    states; Submit() afterwards is FAILED.  The destructor stops.
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
  void Stop();

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

  void Work();
  // Reconciles a settled CONNECTED entry with the engine; under mu_.  Returns
  // false when the entry was erased.
  bool Reconcile(std::map<std::string, Remote>::iterator it);

  Ops ops_;
  const size_t capacity_;
  std::mutex stop_mu_;  // serialises Stop() (joins threads_)
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Remote> remotes_;
  std::deque<std::string> ready_;  // remotes with queued tasks and no running one
  size_t queued_ = 0;
  uint64_t next_seq_ = 1;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace adxl

#endif  // ADXL_SRC_FACADE_CONNECT_POOL_H_
