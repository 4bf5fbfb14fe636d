// NUMA node choice with hwloc; see numa_topology.h for the rule.
#include "memory/numa_topology.h"

#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/decimal.h"
#include "common/log.h"
#include "config/option_table.h"

namespace adxl {

namespace {

constexpr unsigned kRtfUp = 0x1;  // RTF_UP from <linux/route.h>, without pulling in kernel headers

// Parses a whole decimal string into *out; false for anything else.
bool ParseIndex(const std::string &s, unsigned *out) {
  uint64_t v = 0;
  if (!ParseDecimal(s, 9, &v)) return false;
  *out = static_cast<unsigned>(v);  // 9 digits fit
  return true;
}

const char *EnvOrEmpty(const char *name) {
  const char *v = EnvOnlySetting(name);  // ADXL_NIC, ADXL_NUMA_NODE
  return v == nullptr ? "" : v;
}

// The NUMA node nearest to OS device `ifname`, or null.
hwloc_obj_t NodeOfOsDevice(hwloc_topology_t topo, const std::string &ifname, std::string *why) {
  for (hwloc_obj_t dev = hwloc_get_next_osdev(topo, nullptr); dev != nullptr; dev = hwloc_get_next_osdev(topo, dev)) {
    if (dev->name == nullptr || ifname != dev->name) continue;
    // I/O objects carry no locality themselves; their first non-I/O ancestor
    // does.  Walk further up while that object has no memory locality (it
    // cannot happen with hwloc 2's tree, but costs nothing to tolerate).
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, dev);
    while (anc != nullptr && (anc->nodeset == nullptr || hwloc_bitmap_iszero(anc->nodeset))) anc = anc->parent;
    if (anc == nullptr) {
      *why = "NIC " + ifname + " has no NUMA locality";
      return nullptr;
    }
    int first = hwloc_bitmap_first(anc->nodeset);
    hwloc_obj_t node = first < 0 ? nullptr : hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(first));
    if (node == nullptr) {
      *why = "NIC " + ifname + " is local to no NUMA node present";
      return nullptr;
    }
    *why = "nearest to NIC " + ifname;
    if (hwloc_bitmap_weight(anc->nodeset) > 1) *why += " (local to several nodes, first taken)";
    return node;
  }
  *why = "NIC " + ifname + " not among hwloc's OS devices";
  return nullptr;
}

// "Iface Destination Gateway Flags RefCnt Use Metric Mask ..." per line.
std::string DefaultRouteV4() {
  std::ifstream in("/proc/net/route");
  std::string line, best;
  unsigned long best_metric = ULONG_MAX;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string iface, dest, gw, mask;
    unsigned flags = 0, refcnt = 0, use = 0;
    unsigned long metric = 0;
    if (!(f >> iface >> dest >> gw >> std::hex >> flags >> std::dec >> refcnt >> use >> metric >> mask)) continue;
    if (dest != "00000000" || mask != "00000000" || (flags & kRtfUp) == 0) continue;
    if (metric < best_metric) {
      best_metric = metric;
      best = iface;
    }
  }
  return best;
}

// "dest plen src splen nexthop metric refcnt use flags iface" per line, hex.
std::string DefaultRouteV6() {
  std::ifstream in("/proc/net/ipv6_route");
  std::string line, best;
  unsigned long best_metric = ULONG_MAX;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string dest, plen, src, splen, nexthop, metric_s, refcnt, use, flags_s, iface;
    if (!(f >> dest >> plen >> src >> splen >> nexthop >> metric_s >> refcnt >> use >> flags_s >> iface)) continue;
    if (dest != std::string(32, '0') || plen != "00" || iface == "lo") continue;  // lo: "unreachable" entries
    unsigned long flags = std::strtoul(flags_s.c_str(), nullptr, 16);
    unsigned long metric = std::strtoul(metric_s.c_str(), nullptr, 16);
    if ((flags & kRtfUp) == 0) continue;
    if (metric < best_metric) {
      best_metric = metric;
      best = iface;
    }
  }
  return best;
}

}  // namespace

TopologyPtr NewTopology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return nullptr;
  TopologyPtr topo(raw);
  // I/O objects are dropped by default; NICs are OS devices under PCI devices.
  hwloc_topology_set_io_types_filter(topo.get(), HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  return topo;
}

TopologyPtr LoadTopology(std::string *why) {
  TopologyPtr topo = NewTopology();
  if (!topo) {
    *why = std::string("hwloc_topology_init: ") + std::strerror(errno);
    return nullptr;
  }
  if (hwloc_topology_load(topo.get()) != 0) {
    *why = std::string("hwloc_topology_load: ") + std::strerror(errno);
    return nullptr;
  }
  return topo;
}

hwloc_obj_t ChooseNumaNode(hwloc_topology_t topo, const std::string &ifname, const std::string &node_override,
                           std::string *why) {
  std::string reason;
  if (!node_override.empty()) {
    unsigned idx = 0;
    hwloc_obj_t node = nullptr;
    if (!ParseIndex(node_override, &idx)) {
      ADXL_WARN("ADXL_NUMA_NODE=\"%s\" is not a node number; ignored", node_override.c_str());
    } else if ((node = hwloc_get_numanode_obj_by_os_index(topo, idx)) == nullptr) {
      ADXL_WARN("ADXL_NUMA_NODE=%u: no such NUMA node (%d present); ignored", idx,
                hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE));
    } else {
      if (why != nullptr) *why = "ADXL_NUMA_NODE=" + node_override;
      return node;
    }
  }
  if (!ifname.empty()) {
    if (hwloc_obj_t node = NodeOfOsDevice(topo, ifname, &reason)) {
      if (why != nullptr) *why = reason;
      return node;
    }
  } else {
    reason = "no NIC known";
  }
  if (why != nullptr) *why = reason + "; node 0";
  return hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, 0);
}

hwloc_obj_t ChooseNumaNodeFromEnvironment(hwloc_topology_t topo, std::string *why) {
  std::string nic = EnvOrEmpty("ADXL_NIC");
  if (nic.empty()) nic = DefaultRouteInterface();
  return ChooseNumaNode(topo, nic, EnvOrEmpty("ADXL_NUMA_NODE"), why);
}

std::string DefaultRouteInterface() {
  std::string v4 = DefaultRouteV4();
  return v4.empty() ? DefaultRouteV6() : v4;
}

SystemTopology::SystemTopology(TopologyPtr topo) : topo_(std::move(topo)) {
  std::string why;
  node_ = ChooseNumaNodeFromEnvironment(topo_.get(), &why);
  this_system_ = hwloc_topology_is_thissystem(topo_.get()) != 0;
  ADXL_INFO("host memory and progress threads on NUMA node %u (%s)%s", node_->os_index, why.c_str(),
            this_system_ ? "" : "; topology is not this system, no binding");
}

const SystemTopology *SystemTopology::Get() {
  // Built once: loading with I/O discovery reads sysfs for every PCI device,
  // too slow to repeat per allocation.  Never destroyed, so that blocks freed
  // from static destructors of other objects still find it.
  static const SystemTopology *const instance = []() -> const SystemTopology * {
    std::string why;
    TopologyPtr topo = LoadTopology(&why);
    if (!topo) {
      ADXL_WARN("hwloc topology unavailable (%s): host memory is not NUMA-placed", why.c_str());
      return nullptr;
    }
    return std::make_unique<SystemTopology>(std::move(topo)).release();
  }();
  return instance;
}

bool PreferredCpuset(hwloc_bitmap_t out) {
  const SystemTopology *sys = SystemTopology::Get();
  if (sys == nullptr) return false;
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(sys->topology());
  hwloc_bitmap_and(out, sys->node()->cpuset, allowed);
  if (hwloc_bitmap_iszero(out)) hwloc_bitmap_copy(out, allowed);
  return true;
}

}  // namespace adxl
