// NetPath: one network path of the RDMA lane over active messages — a UCP
// context and worker that use one local interface only (UCX's NET_DEVICES),
// with an AmTransport (am_transport.h) of their own.
//
// Why a context per path: UCX 1.13 over TCP puts an endpoint made from a
// worker address on one interface however many the context has (multi-rail
// moved 1.0x one path, docs/performance.md "Multi-path links"), and a UCP endpoint cannot
// be told which interface to use.  A context that sees only interface i
// makes every endpoint of its worker a connection over i, so the plugin
// knows which path each connection takes and stripes a batch over them
// itself (stripe.h, net_paths.h).
//
// Paths are named by ADXL_UCX_RDMA_PATHS (interfaces of this host); each
// side lists its paths' IPv4 addresses and prefixes in its address blob
// (ucx_blob.h), and a link pairs a local path with the peer path whose
// address lies in the local path's subnet.
//
// Locks: none of its own; its AmTransport's, under this path's UCP worker lock
// (UCS_THREAD_MODE_MULTI), nest as ucx_context.h states for the main worker:
// any UCP worker lock -> an AmTransport's mu_.
//
// Thread-safety: Open and Close from one thread (the plugin's open/close);
// between them every field is read-only but `running` (an atomic), and `am`
// is used as am_transport.h says.
#ifndef ADXL_PLUGIN_UCX_PATHS_NET_PATH_H_
#define ADXL_PLUGIN_UCX_PATHS_NET_PATH_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ucp/api/ucp.h>

#include "am/am_transport.h"
#include "core/plugin_log.h"
#include "paths/link_watch.h"

class NetPath {
 public:
  // The interface's IPv4 address and prefix length; false with *why when it
  // has none or does not exist.
  static bool LookUpInterface(const std::string &device, uint32_t *ipv4, uint8_t *prefix, std::string *why);

  // This host's interfaces that could be paths when none are named: up, not
  // loopback, with an IPv4 address; in the kernel's order, each once.
  static std::vector<std::string> CandidateInterfaces();

  // Opens the path over `device`: its context (TCP on that interface only,
  // with `rx_seg_size` as UCX's TCP receive segment unless empty), worker
  // and AM transport.  Null with *why on failure (nothing left open).
  static std::unique_ptr<NetPath> Open(const std::string &device, const std::string &rx_seg_size, PluginLog log,
                                       FaultInjection faults, std::string *why);
  // Fails what this side still serves as a target, releases the staging
  // pool, destroys the worker and the context.  Call after the progress
  // thread stopped, with no endpoint of the worker left.
  ~NetPath();
  NetPath(const NetPath &) = delete;
  NetPath &operator=(const NetPath &) = delete;

  // Whether `peer_ipv4` (network order) lies in this path's subnet.
  bool Reaches(uint32_t peer_ipv4) const;

  const std::string &device() const { return device_; }
  uint32_t ipv4() const { return ipv4_; }  // network order
  uint8_t prefix() const { return prefix_; }
  unsigned ifindex() const { return ifindex_; }
  ucp_context_h ucp() const { return ucp_; }
  ucp_worker_h worker() const { return worker_; }
  // The worker's event fd, for the progress thread's epoll set.
  int event_fd() const { return efd_; }

  AmTransport am;
  // Whether the interface has carrier (LinkWatch): read when the path was
  // opened, then kept by the failover worker (path_failover.h).
  std::atomic<bool> running{true};
  std::atomic<int64_t> carrier_since_ns{0};  // CLOCK_MONOTONIC: when it last got carrier (0: at open)

 private:
  NetPath() = default;

  std::string device_;
  uint32_t ipv4_ = 0;
  uint8_t prefix_ = 0;
  unsigned ifindex_ = 0;
  ucp_context_h ucp_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  bool am_ready_ = false;  // am was initialized: Close releases it
};

#endif  // ADXL_PLUGIN_UCX_PATHS_NET_PATH_H_
