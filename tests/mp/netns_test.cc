// Several hosts on one machine (issue: lanes): engines in separate network
// namespaces joined by a veth pair are different nodes and link over the
// RDMA lane; engines inside one namespace link over the HCCS lane.  The
// namespaces, the veth pair and their addresses are made and removed here;
// where that is impossible (not root, no iproute2, no namespace support) the
// test skips and says why.
#include <unistd.h>

#include <cstdlib>

#include "mp_fixture.h"

using namespace adxl_test;

namespace {

int Shell(const std::string &cmd) { return system((cmd + " >/dev/null 2>&1").c_str()); }

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
    const std::string id = std::to_string(getpid() % 100000);
    ns_a_ = "adxl-a-" + id;
    ns_b_ = "adxl-b-" + id;
    const std::string va = "adxva" + id, vb = "adxvb" + id;
    // A /24 of the private range picked from the pid, so that parallel runs differ.
    subnet_ = "10.213." + std::to_string(getpid() % 250 + 1);
    const std::string steps[] = {
        "ip netns add " + ns_a_,
        "ip netns add " + ns_b_,
        "ip link add " + va + " type veth peer name " + vb,
        "ip link set " + va + " netns " + ns_a_,
        "ip link set " + vb + " netns " + ns_b_,
        "ip -n " + ns_a_ + " addr add " + subnet_ + ".1/24 dev " + va,
        "ip -n " + ns_b_ + " addr add " + subnet_ + ".2/24 dev " + vb,
        "ip -n " + ns_a_ + " link set " + va + " up",
        "ip -n " + ns_b_ + " link set " + vb + " up",
        "ip -n " + ns_a_ + " link set lo up",
        "ip -n " + ns_b_ + " link set lo up",
    };
    for (const std::string &s : steps) {
      if (Shell(s) != 0) {
        TearDown();
        GTEST_SKIP() << "cannot build the test network ('" << s << "' failed): no namespace support here";
      }
    }
    made_ = true;
  }
  void TearDown() override {
    // Deleting a namespace removes its end of the veth pair, and with it the pair.
    if (!ns_a_.empty()) Shell("ip netns del " + ns_a_);
    if (!ns_b_.empty()) Shell("ip netns del " + ns_b_);
  }
  std::unique_ptr<PeerProcess> PeerIn(const std::string &ns) {
    return std::make_unique<PeerProcess>(std::vector<std::string>{}, std::vector<std::string>{"ip", "netns", "exec", ns});
  }

  std::string ns_a_, ns_b_, subnet_;
  bool made_ = false;
};

TEST_F(NetnsTest, RdmaLaneAcrossHostsHccsLaneInsideOne) {
  ASSERT_TRUE(made_);
  const std::string a_name = subnet_ + ".1:26310";
  auto a = PeerIn(ns_a_);   // "host A": the target
  auto b = PeerIn(ns_b_);   // "host B": a remote initiator
  auto a2 = PeerIn(ns_a_);  // a second engine on host A
  ASSERT_EQ(a->Command("init " + a_name), "ok");
  auto buf = a->Ok("alloc 1048576");
  ASSERT_EQ(buf.size(), 2u);
  const std::string remote = buf[1];
  ASSERT_EQ(a->Ok("reg 0").size(), 1u);
  ASSERT_EQ(a->Command("fill 0 3"), "ok");

  ASSERT_EQ(b->Command("init " + subnet_ + ".2"), "ok");
  ASSERT_EQ(b->Ok("alloc 1048576").size(), 2u);
  ASSERT_EQ(b->Ok("reg 0").size(), 1u);
  ASSERT_EQ(b->Command("connect " + a_name + " 5000"), "ok");
  auto lane_b = b->Ok("lane " + a_name);
  ASSERT_EQ(lane_b.size(), 2u);
  EXPECT_EQ(lane_b[0], "rdma") << "across namespaces-as-hosts: transports " << lane_b[1];

  ASSERT_EQ(a2->Command("init " + subnet_ + ".1"), "ok");
  ASSERT_EQ(a2->Ok("alloc 1048576").size(), 2u);
  ASSERT_EQ(a2->Ok("reg 0").size(), 1u);
  ASSERT_EQ(a2->Command("connect " + a_name + " 5000"), "ok");
  auto lane_a2 = a2->Ok("lane " + a_name);
  ASSERT_EQ(lane_a2.size(), 2u);
  EXPECT_EQ(lane_a2[0], "hccs") << "inside one host: transports " << lane_a2[1];

  // Data over both: B reads A's pattern, then writes its own; A2 reads it back.
  ASSERT_EQ(b->Command("read " + a_name + " 5000 0 0 " + remote + " 1048576"), "ok");
  const std::string a_hash = a->Ok("hash 0 0 1048576").at(0);
  EXPECT_EQ(b->Ok("hash 0 0 1048576").at(0), a_hash);
  ASSERT_EQ(b->Command("fill 0 9"), "ok");
  ASSERT_EQ(b->Command("write " + a_name + " 5000 0 0 " + remote + " 1048576"), "ok");
  const std::string b_hash = b->Ok("hash 0 0 1048576").at(0);
  EXPECT_EQ(a->Ok("hash 0 0 1048576").at(0), b_hash);
  ASSERT_EQ(a2->Command("read " + a_name + " 5000 0 0 " + remote + " 1048576"), "ok");
  EXPECT_EQ(a2->Ok("hash 0 0 1048576").at(0), b_hash);
}

}  // namespace
