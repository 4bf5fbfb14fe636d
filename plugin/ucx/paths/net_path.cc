// One network path of the RDMA lane: its own UCP context and worker on one
// interface (net_path.h).
#include "paths/net_path.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/ucx_config.h"

bool NetPath::LookUpInterface(const std::string &device, uint32_t *ipv4, uint8_t *prefix, std::string *why) {
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0) {
    *why = std::string("getifaddrs: ") + strerror(errno);
    return false;
  }
  bool exists = false, found = false;
  for (ifaddrs *i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_name == nullptr || device != i->ifa_name) continue;
    exists = true;
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET || i->ifa_netmask == nullptr) continue;
    *ipv4 = reinterpret_cast<const sockaddr_in *>(i->ifa_addr)->sin_addr.s_addr;
    const uint32_t mask = ntohl(reinterpret_cast<const sockaddr_in *>(i->ifa_netmask)->sin_addr.s_addr);
    *prefix = static_cast<uint8_t>(__builtin_popcount(mask));
    found = true;
  }
  freeifaddrs(list);
  if (!found) {
    *why = "network interface '" + device + (exists ? "' has no IPv4 address" : "' does not exist");
  }
  return found;
}

std::vector<std::string> NetPath::CandidateInterfaces() {
  std::vector<std::string> out;
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs *i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_name == nullptr || i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    if (std::find(out.begin(), out.end(), i->ifa_name) == out.end()) out.emplace_back(i->ifa_name);
  }
  freeifaddrs(list);
  return out;
}

std::unique_ptr<NetPath> NetPath::Open(const std::string &device, const std::string &rx_seg_size, PluginLog log,
                                       FaultInjection faults, std::string *why) {
  std::unique_ptr<NetPath> p(new NetPath());
  p->device_ = device;
  if (!LookUpInterface(device, &p->ipv4_, &p->prefix_, why)) return nullptr;
  p->ifindex_ = if_nametoindex(device.c_str());
  p->running.store(LinkWatch::Running(p->ifindex_));
  ucp_config_t *config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) {
    *why = std::string("ucp_config_read: ") + ucs_status_string(st);
    return nullptr;
  }
  // The path's own settings win over the user's UCX_TLS / UCX_NET_DEVICES:
  // a path is TCP over this one interface, or it is not a path.
  st = ucp_config_modify(config, "TLS", "tcp");
  if (st == UCS_OK) st = ucp_config_modify(config, "NET_DEVICES", device.c_str());
  // No UCP keepalive rounds on a path: under link flaps UCX 1.13 crashed
  // the process in them (an event of a freed TCP endpoint handled in
  // uct_tcp_iface_progress, 22 of 28 runs of 100 down/up cycles, the first
  // crash about 20 s - one keepalive interval - in; with a 1 s interval at
  // the first cycle; with keepalive off 0 of 5).  A path's failure is found
  // by its carrier, TCP's own keepalive and UCP's errors (path_failover.h);
  // the peer's by the engine's heartbeat.
  if (st == UCS_OK) st = ucp_config_modify(config, "KEEPALIVE_INTERVAL", "inf");
  // Connections made without blocking: UCX 1.13 connects a TCP endpoint
  // with a blocking connect() by default, inside ucp_ep_create under the
  // worker's lock, and over a silent path (carrier up, packets dropped)
  // that waited for TCP's SYN retransmissions: 6 s in which the progress
  // thread moved nothing on any path (netns_failover_test, SilentPath...).
  if (st == UCS_OK) st = ModifyTransportSetting(config, "TCP_", "CONN_NB", "y");
  // A path moves host memory only, by active messages: UCX's older
  // protocols carry them faster over TCP (ApplyUcxSettings).
  if (st == UCS_OK && getenv("UCX_PROTO_ENABLE") == nullptr) st = ucp_config_modify(config, "PROTO_ENABLE", "n");
  if (st == UCS_OK && !rx_seg_size.empty()) st = ModifyTransportSetting(config, "TCP_", "RX_SEG_SIZE", rx_seg_size.c_str());
  if (st != UCS_OK) {
    ucp_config_release(config);
    *why = std::string("UCX settings of the path: ") + ucs_status_string(st);
    return nullptr;
  }
  ucp_params_t uparams{};
  uparams.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  uparams.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  uparams.mt_workers_shared = 0;
  st = ucp_init(&uparams, config, &p->ucp_);
  ucp_config_release(config);
  if (st != UCS_OK) {
    p->ucp_ = nullptr;
    *why = std::string("ucp_init: ") + ucs_status_string(st);
    return nullptr;
  }
  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_MULTI;
  st = ucp_worker_create(p->ucp_, &wparams, &p->worker_);
  if (st == UCS_OK) st = ucp_worker_get_efd(p->worker_, &p->efd_);
  if (st != UCS_OK) {
    *why = std::string("ucp worker on the path: ") + ucs_status_string(st);
    return nullptr;  // the destructor undoes what was made
  }
  if (!p->am.Init(p->worker_, log, faults, why)) return nullptr;
  p->am_ready_ = true;
  p->am.UseStagingFrom(p->ucp_);
  return p;
}

NetPath::~NetPath() {
  if (am_ready_) {
    // Requests served for peers that went away would stay pending, and UCP
    // refuses to destroy a worker with any (ucx_context.cc does the same).
    am.ReleaseTargetOps(0, 0);
    if (am.HasDeferred()) am.RunDeferred();
    am.Close();
  }
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (ucp_ != nullptr) ucp_cleanup(ucp_);
}

bool NetPath::Reaches(uint32_t peer_ipv4) const {
  if (prefix_ == 0) return true;
  const uint32_t mask = prefix_ >= 32 ? ~uint32_t{0} : ~((uint32_t{1} << (32 - prefix_)) - 1);
  return (ntohl(peer_ipv4) & mask) == (ntohl(ipv4_) & mask);
}
