// NUMA node choice (numa_topology.h) on hand-written multi-node topologies.
//
// The fixtures are hwloc 2 XML (the format `lstopo --of xml` writes, trimmed
// to what the chooser reads): every normal object carries cpuset /
// complete_cpuset / nodeset / complete_nodeset (hwloc 2.9 crashes on import
// without the complete_* sets); NUMA nodes are memory children; a NIC is an
// OSDev (osdev_type 2 = network, 3 = OpenFabrics) under a PCIDev attached to
// the object whose locality it has.
#include "memory/numa_topology.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace adxl {
namespace {

// Two packages, one node each.  eth0 sits under package 0 (node 0), eth7 and
// the RDMA device mlx5_0 under package 1 (node 1).
constexpr char kTwoNodes[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0xf" complete_cpuset="0xf" allowed_cpuset="0xf" nodeset="0x3" complete_nodeset="0x3" allowed_nodeset="0x3" gp_index="1">
    <object type="Package" os_index="0" cpuset="0x3" complete_cpuset="0x3" nodeset="0x1" complete_nodeset="0x1" gp_index="2">
      <object type="NUMANode" os_index="0" cpuset="0x3" complete_cpuset="0x3" nodeset="0x1" complete_nodeset="0x1" gp_index="3" local_memory="1073741824"/>
      <object type="PU" os_index="0" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1" gp_index="4"/>
      <object type="PU" os_index="1" cpuset="0x2" complete_cpuset="0x2" nodeset="0x1" complete_nodeset="0x1" gp_index="5"/>
      <object type="Bridge" gp_index="20" bridge_type="0-1" depth="0" bridge_pci="0000:[00-00]">
        <object type="PCIDev" gp_index="21" pci_busid="0000:00:03.0" pci_type="0200 [8086:1572] [8086:0000] 01">
          <object type="OSDev" gp_index="22" name="eth0" osdev_type="2"/>
        </object>
      </object>
    </object>
    <object type="Package" os_index="1" cpuset="0xc" complete_cpuset="0xc" nodeset="0x2" complete_nodeset="0x2" gp_index="6">
      <object type="NUMANode" os_index="1" cpuset="0xc" complete_cpuset="0xc" nodeset="0x2" complete_nodeset="0x2" gp_index="7" local_memory="1073741824"/>
      <object type="PU" os_index="2" cpuset="0x4" complete_cpuset="0x4" nodeset="0x2" complete_nodeset="0x2" gp_index="8"/>
      <object type="PU" os_index="3" cpuset="0x8" complete_cpuset="0x8" nodeset="0x2" complete_nodeset="0x2" gp_index="9"/>
      <object type="Bridge" gp_index="30" bridge_type="0-1" depth="0" bridge_pci="0000:[80-80]">
        <object type="PCIDev" gp_index="31" pci_busid="0000:80:00.0" pci_type="0200 [15b3:1017] [15b3:0000] 01">
          <object type="OSDev" gp_index="32" name="eth7" osdev_type="2"/>
          <object type="OSDev" gp_index="33" name="mlx5_0" osdev_type="3"/>
        </object>
      </object>
    </object>
  </object>
</topology>
)";

// Two packages of two dies, one node per die (sub-NUMA clustering).  eth7 is
// local to die 1 (node 1); ib0 hangs off package 1 as a whole (nodes 2 and 3).
constexpr char kFourNodes[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0xf" complete_cpuset="0xf" allowed_cpuset="0xf" nodeset="0xf" complete_nodeset="0xf" allowed_nodeset="0xf" gp_index="1">
    <object type="Package" os_index="0" cpuset="0x3" complete_cpuset="0x3" nodeset="0x3" complete_nodeset="0x3" gp_index="2">
      <object type="Die" os_index="0" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1" gp_index="3">
        <object type="NUMANode" os_index="0" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1" gp_index="4"/>
        <object type="PU" os_index="0" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1" gp_index="5"/>
      </object>
      <object type="Die" os_index="1" cpuset="0x2" complete_cpuset="0x2" nodeset="0x2" complete_nodeset="0x2" gp_index="6">
        <object type="NUMANode" os_index="1" cpuset="0x2" complete_cpuset="0x2" nodeset="0x2" complete_nodeset="0x2" gp_index="7"/>
        <object type="PU" os_index="1" cpuset="0x2" complete_cpuset="0x2" nodeset="0x2" complete_nodeset="0x2" gp_index="8"/>
        <object type="PCIDev" gp_index="20" pci_busid="0000:40:00.0" pci_type="0200 [15b3:1017] [15b3:0000] 01">
          <object type="OSDev" gp_index="21" name="eth7" osdev_type="2"/>
        </object>
      </object>
    </object>
    <object type="Package" os_index="1" cpuset="0xc" complete_cpuset="0xc" nodeset="0xc" complete_nodeset="0xc" gp_index="9">
      <object type="Die" os_index="2" cpuset="0x4" complete_cpuset="0x4" nodeset="0x4" complete_nodeset="0x4" gp_index="10">
        <object type="NUMANode" os_index="2" cpuset="0x4" complete_cpuset="0x4" nodeset="0x4" complete_nodeset="0x4" gp_index="11"/>
        <object type="PU" os_index="2" cpuset="0x4" complete_cpuset="0x4" nodeset="0x4" complete_nodeset="0x4" gp_index="12"/>
      </object>
      <object type="Die" os_index="3" cpuset="0x8" complete_cpuset="0x8" nodeset="0x8" complete_nodeset="0x8" gp_index="13">
        <object type="NUMANode" os_index="3" cpuset="0x8" complete_cpuset="0x8" nodeset="0x8" complete_nodeset="0x8" gp_index="14"/>
        <object type="PU" os_index="3" cpuset="0x8" complete_cpuset="0x8" nodeset="0x8" complete_nodeset="0x8" gp_index="15"/>
      </object>
      <object type="PCIDev" gp_index="30" pci_busid="0000:c0:00.0" pci_type="0207 [15b3:1017] [15b3:0000] 01">
        <object type="OSDev" gp_index="31" name="ib0" osdev_type="2"/>
      </object>
    </object>
  </object>
</topology>
)";

TopologyPtr FromXml(const char *xml) {
  TopologyPtr topo = NewTopology();
  EXPECT_TRUE(topo);
  if (!topo) return nullptr;
  EXPECT_EQ(hwloc_topology_set_xmlbuffer(topo.get(), xml, static_cast<int>(std::strlen(xml)) + 1), 0);
  EXPECT_EQ(hwloc_topology_load(topo.get()), 0);
  return topo;
}

TopologyPtr FromSynthetic(const char *desc) {
  TopologyPtr topo = NewTopology();
  EXPECT_TRUE(topo);
  if (!topo) return nullptr;
  EXPECT_EQ(hwloc_topology_set_synthetic(topo.get(), desc), 0);
  EXPECT_EQ(hwloc_topology_load(topo.get()), 0);
  return topo;
}

// OS index of the chosen node, -1 for none.
int Choose(hwloc_topology_t topo, const std::string &ifname, const std::string &override_node = "",
           std::string *why = nullptr) {
  hwloc_obj_t node = ChooseNumaNode(topo, ifname, override_node, why);
  if (node == nullptr) return -1;
  EXPECT_EQ(node->type, HWLOC_OBJ_NUMANODE);
  return static_cast<int>(node->os_index);
}

// Sets an environment variable for one scope; restores the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char *name_;
  bool had_ = false;
  std::string old_;
};

TEST(NumaTopologyTest, FixturesLoadWithTheirIoDevices) {
  TopologyPtr two = FromXml(kTwoNodes);
  ASSERT_TRUE(two);
  EXPECT_EQ(hwloc_get_nbobjs_by_type(two.get(), HWLOC_OBJ_NUMANODE), 2);
  EXPECT_EQ(hwloc_get_nbobjs_by_type(two.get(), HWLOC_OBJ_OS_DEVICE), 3);
  TopologyPtr four = FromXml(kFourNodes);
  ASSERT_TRUE(four);
  EXPECT_EQ(hwloc_get_nbobjs_by_type(four.get(), HWLOC_OBJ_NUMANODE), 4);
  EXPECT_EQ(hwloc_get_nbobjs_by_type(four.get(), HWLOC_OBJ_OS_DEVICE), 2);
}

TEST(NumaTopologyTest, NicUnderNodeOneGivesNodeOne) {
  TopologyPtr topo = FromXml(kTwoNodes);
  ASSERT_TRUE(topo);
  std::string why;
  EXPECT_EQ(Choose(topo.get(), "eth7", "", &why), 1);
  EXPECT_NE(why.find("eth7"), std::string::npos) << why;
  EXPECT_EQ(Choose(topo.get(), "mlx5_0"), 1);  // an RDMA device name works too
  EXPECT_EQ(Choose(topo.get(), "eth0"), 0);
}

TEST(NumaTopologyTest, FourNodes) {
  TopologyPtr topo = FromXml(kFourNodes);
  ASSERT_TRUE(topo);
  EXPECT_EQ(Choose(topo.get(), "eth7"), 1);
  // A NIC local to a package spanning nodes 2 and 3: the first of them.
  std::string why;
  EXPECT_EQ(Choose(topo.get(), "ib0", "", &why), 2);
  EXPECT_NE(why.find("several"), std::string::npos) << why;
}

TEST(NumaTopologyTest, UnknownOrNoInterfaceGivesNodeZero) {
  TopologyPtr topo = FromXml(kTwoNodes);
  ASSERT_TRUE(topo);
  std::string why;
  EXPECT_EQ(Choose(topo.get(), "eth99", "", &why), 0);
  EXPECT_NE(why.find("eth99"), std::string::npos) << why;
  EXPECT_EQ(Choose(topo.get(), "eth", ""), 0);  // names match exactly, not by prefix
  EXPECT_EQ(Choose(topo.get(), "", ""), 0);
}

TEST(NumaTopologyTest, OverrideWinsOverTheNic) {
  TopologyPtr topo = FromXml(kFourNodes);
  ASSERT_TRUE(topo);
  std::string why;
  EXPECT_EQ(Choose(topo.get(), "eth7", "3", &why), 3);
  EXPECT_NE(why.find("ADXL_NUMA_NODE"), std::string::npos) << why;
  EXPECT_EQ(Choose(topo.get(), "", "2"), 2);
  EXPECT_EQ(Choose(topo.get(), "eth7", "0"), 0);
}

TEST(NumaTopologyTest, BadOverrideFallsBackToTheNicRule) {
  TopologyPtr topo = FromXml(kTwoNodes);
  ASSERT_TRUE(topo);
  EXPECT_EQ(Choose(topo.get(), "eth7", "2"), 1);  // no node 2: warning, NIC rule
  EXPECT_EQ(Choose(topo.get(), "eth7", "-1"), 1);
  EXPECT_EQ(Choose(topo.get(), "eth7", "one"), 1);
  EXPECT_EQ(Choose(topo.get(), "eth7", "1x"), 1);  // the NIC rule, not a parsed "1"
  EXPECT_EQ(Choose(topo.get(), "eth0", "1x"), 0);
  EXPECT_EQ(Choose(topo.get(), "", "99999999999"), 0);
}

TEST(NumaTopologyTest, EnvironmentDrivesTheChoice) {
  TopologyPtr topo = FromXml(kTwoNodes);
  ASSERT_TRUE(topo);
  {
    ScopedEnv nic("ADXL_NIC", "eth7");
    ScopedEnv node("ADXL_NUMA_NODE", nullptr);
    EXPECT_EQ(ChooseNumaNodeFromEnvironment(topo.get(), nullptr)->os_index, 1u);
  }
  {
    ScopedEnv nic("ADXL_NIC", "eth7");
    ScopedEnv node("ADXL_NUMA_NODE", "0");
    EXPECT_EQ(ChooseNumaNodeFromEnvironment(topo.get(), nullptr)->os_index, 0u);
  }
  {
    ScopedEnv nic("ADXL_NIC", "eth0");
    ScopedEnv node("ADXL_NUMA_NODE", "1");
    EXPECT_EQ(ChooseNumaNodeFromEnvironment(topo.get(), nullptr)->os_index, 1u);
  }
  {
    ScopedEnv nic("ADXL_NIC", "eth0");
    ScopedEnv node("ADXL_NUMA_NODE", "5");  // out of range: warning, NIC rule
    EXPECT_EQ(ChooseNumaNodeFromEnvironment(topo.get(), nullptr)->os_index, 0u);
  }
}

// Synthetic topologies have no I/O devices: whatever the NIC, node 0, and
// the override still applies.
TEST(NumaTopologyTest, SyntheticTopologyFallsBackToNodeZero) {
  TopologyPtr topo = FromSynthetic("pack:2 numa:1 core:2 pu:1");
  ASSERT_TRUE(topo);
  ASSERT_EQ(hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_NUMANODE), 2);
  EXPECT_EQ(hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_OS_DEVICE), 0);
  EXPECT_EQ(Choose(topo.get(), "eth7"), 0);
  EXPECT_EQ(Choose(topo.get(), "eth0"), 0);
  EXPECT_EQ(Choose(topo.get(), "eth7", "1"), 1);
}

// HWLOC_SYNTHETIC in the environment is honoured by LoadTopology (as hwloc
// documents), and such a topology is not "this system": no binding.
TEST(NumaTopologyTest, LoadTopologyHonoursHwlocSynthetic) {
  ScopedEnv syn("HWLOC_SYNTHETIC", "pack:4 numa:1 core:1 pu:1");
  ScopedEnv thissystem("HWLOC_THISSYSTEM", nullptr);
  std::string why;
  TopologyPtr topo = LoadTopology(&why);
  ASSERT_TRUE(topo) << why;
  EXPECT_EQ(hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_NUMANODE), 4);
  EXPECT_FALSE(hwloc_topology_is_thissystem(topo.get()));
  EXPECT_EQ(Choose(topo.get(), "eth0"), 0);
}

// The real machine: one node here, and the NIC of the default route (when
// there is one) is one of hwloc's OS devices, so the chooser finds it rather
// than falling back.
TEST(NumaTopologyTest, RealMachine) {
  std::string why;
  TopologyPtr topo = LoadTopology(&why);
  ASSERT_TRUE(topo) << why;
  EXPECT_TRUE(hwloc_topology_is_thissystem(topo.get()));
  const std::string nic = DefaultRouteInterface();
  if (nic.empty()) GTEST_SKIP() << "no default route here";
  hwloc_obj_t node = ChooseNumaNode(topo.get(), nic, "", &why);
  ASSERT_NE(node, nullptr);
  if (hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_NUMANODE) == 1) {
    EXPECT_EQ(node->os_index, 0u);
  }
  bool found = false;
  for (hwloc_obj_t d = hwloc_get_next_osdev(topo.get(), nullptr); d; d = hwloc_get_next_osdev(topo.get(), d))
    found = found || (d->name != nullptr && nic == d->name);
  if (!found) GTEST_SKIP() << "default-route NIC " << nic << " is virtual (not a PCI device); chooser said: " << why;
  EXPECT_EQ(why.find("not among"), std::string::npos) << why;
}

TEST(NumaTopologyTest, PreferredCpusetIsTheChosenNodesCpus) {
  const SystemTopology *sys = SystemTopology::Get();
  ASSERT_NE(sys, nullptr);
  BitmapPtr set(hwloc_bitmap_alloc());
  ASSERT_TRUE(PreferredCpuset(set.get()));
  EXPECT_FALSE(hwloc_bitmap_iszero(set.get()));
  EXPECT_TRUE(hwloc_bitmap_isincluded(set.get(), hwloc_topology_get_allowed_cpuset(sys->topology())));
  if (!hwloc_bitmap_iszero(sys->node()->cpuset)) {
    EXPECT_TRUE(hwloc_bitmap_isincluded(set.get(), sys->node()->cpuset));
  }
}

}  // namespace
}  // namespace adxl
