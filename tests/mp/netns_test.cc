// Several hosts on one machine: engines in separate network
// namespaces joined by a veth pair are different nodes and link over the
// RDMA lane; engines inside one namespace link over the HCCS lane.  The
// namespaces, the veth pair and their addresses are made and removed here;
// where that is impossible (not root, no iproute2, no namespace support) the
// test skips and says why (netns_fixture.h).
#include "mp_fixture.h"
#include "netns_fixture.h"

using namespace adxl_test;

namespace {

using NetnsTest = NetnsFixture;

TEST_F(NetnsTest, RdmaLaneAcrossHostsHccsLaneInsideOne) {
  ASSERT_TRUE(made_);
  const std::string a_name = paths_[0].ip_a + ":26310";
  auto a = PeerIn(ns_a_);   // "host A": the target
  auto b = PeerIn(ns_b_);   // "host B": a remote initiator
  auto a2 = PeerIn(ns_a_);  // a second engine on host A
  ASSERT_EQ(a->Command("init " + a_name), "ok");
  auto buf = a->Ok("alloc 1048576");
  ASSERT_EQ(buf.size(), 2u);
  const std::string remote = buf[1];
  ASSERT_EQ(a->Ok("reg 0").size(), 1u);
  ASSERT_EQ(a->Command("fill 0 3"), "ok");

  ASSERT_EQ(b->Command("init " + paths_[0].ip_b), "ok");
  ASSERT_EQ(b->Ok("alloc 1048576").size(), 2u);
  ASSERT_EQ(b->Ok("reg 0").size(), 1u);
  ASSERT_EQ(b->Command("connect " + a_name + " 5000"), "ok");
  auto lane_b = b->Ok("lane " + a_name);
  ASSERT_EQ(lane_b.size(), 2u);
  EXPECT_EQ(lane_b[0], "rdma") << "across namespaces-as-hosts: transports " << lane_b[1];

  ASSERT_EQ(a2->Command("init " + paths_[0].ip_a), "ok");
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
