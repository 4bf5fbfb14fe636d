// NUMA node choice for host memory and progress threads (docs/contract.md
// §8.2; docs/architecture.md, "Engine core").
//
// One job: deciding, with hwloc, which NUMA node serves the transport.  The
// rule, in order:
//   1. ADXL_NUMA_NODE names a node that exists: that node.
//   2. The NIC of the RDMA lane is an hwloc OS device: the first NUMA node of
//      the nearest non-I/O ancestor of that device that has memory locality
//      (a NIC attached to a package spanning nodes 2 and 3 gives node 2).
//   3. Otherwise node 0 (the NUMA node of logical index 0).
// The chooser (ChooseNumaNode) is a pure function of a topology, an interface
// name and an override string, so tests feed it XML / synthetic topologies.
//
// Environment, read once per process on the first use of SystemTopology (the
// first MallocMem or PreferredCpuset); later changes are not seen:
//   ADXL_NUMA_NODE  OS index of the node to use, as in /sys/devices/system/node/nodeN
//                   and numactl.  Malformed or not a node of this machine: a
//                   warning is logged and the rule goes on with step 2.
//   ADXL_NIC        network interface of the RDMA lane, e.g. "eth0".  Default:
//                   the interface of the IPv4 default route (/proc/net/route),
//                   else of the IPv6 default route (/proc/net/ipv6_route).
// hwloc's own variables apply to the process-wide topology as hwloc documents
// them (HWLOC_XMLFILE, HWLOC_SYNTHETIC, HWLOC_THISSYSTEM, ...): with a
// topology that is not this system, binding calls do nothing.
//
// Engine options cannot choose the node: MallocMem is static and needs no
// Initialize, so the choice must not depend on an engine instance.
#ifndef ADXL_SRC_MEMORY_NUMA_TOPOLOGY_H_
#define ADXL_SRC_MEMORY_NUMA_TOPOLOGY_H_

#include <hwloc.h>

#include <memory>
#include <string>

namespace adxl {

struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct BitmapDeleter {
  void operator()(hwloc_bitmap_t b) const { hwloc_bitmap_free(b); }
};
using BitmapPtr = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

// Initializes a topology with I/O devices kept (PCI devices and their OS
// devices, so that NICs can be found); the caller may set a source (XML,
// synthetic) before LoadTopology.  Null when hwloc cannot even initialize.
TopologyPtr NewTopology();

// NewTopology + hwloc_topology_load, with whatever source hwloc's environment
// selects (the real machine by default).  Whether it is "this system" is left
// to hwloc.  Null with *why set on failure.
TopologyPtr LoadTopology(std::string *why);

// The rule above over `topo` (loaded).  `ifname` "" means no NIC is known;
// `node_override` "" means none.  Never null for a loaded topology (hwloc
// always has a NUMA node).  *why (optional) says which step decided.
hwloc_obj_t ChooseNumaNode(hwloc_topology_t topo, const std::string &ifname, const std::string &node_override,
                           std::string *why);

// ChooseNumaNode with ifname and override taken from the environment
// (ADXL_NIC or the default route; ADXL_NUMA_NODE).
hwloc_obj_t ChooseNumaNodeFromEnvironment(hwloc_topology_t topo, std::string *why);

// Interface name of the default route, IPv4 first (lowest metric wins);
// "" when there is none.
std::string DefaultRouteInterface();

// The process-wide topology and the node chosen for it, built once on first
// use (thread-safe).  Read-only afterwards, so concurrent hwloc calls on it
// are fine (hwloc allows concurrent read-only use of a loaded topology).
class SystemTopology {
 public:
  // Null when hwloc cannot load a topology; callers then skip placement.
  static const SystemTopology *Get();

  hwloc_topology_t topology() const { return topo_.get(); }
  hwloc_obj_t node() const { return node_; }
  unsigned node_os_index() const { return node_->os_index; }
  // True when binding calls act on this machine (hwloc's "this system").
  bool is_this_system() const { return this_system_; }

  explicit SystemTopology(TopologyPtr topo);

 private:
  TopologyPtr topo_;
  hwloc_obj_t node_ = nullptr;
  bool this_system_ = false;
};

// Cpuset for the engine's progress threads: the CPUs of the chosen node
// (restricted to the CPUs this process may use; a CPU-less node or an empty
// intersection gives every allowed CPU).  The transport plugin binds its
// threads to it (hwloc_set_thread_cpubind or pthread affinity).  `out` must
// be allocated by the caller.  False, `out` untouched, without a topology.
bool PreferredCpuset(hwloc_bitmap_t out);

}  // namespace adxl

#endif  // ADXL_SRC_MEMORY_NUMA_TOPOLOGY_H_
