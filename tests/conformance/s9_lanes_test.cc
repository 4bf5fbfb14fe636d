// docs/contract.md §9 (lanes), on every lane.
#include "conformance.h"

using namespace adxl;
using namespace adxl_test;

namespace {

// §9.3 "comm_resource_config.protocol_desc ... restricts which lanes may be
// used; ... a restriction that leaves no lane able to reach a peer makes
// Connect fail" (FAILED, at once, with an ERROR line; no link is left).
//
// The peer claims another node (ADXL_NODE_ID, §9.2), so only the RDMA lane
// reaches it; this engine allows only "hccs:host".  The same peer is then
// reached by an engine with the lane's own options, so the refusal comes
// from the restriction and from nothing else.
TEST_P(Conformance, S9_3_NoReachableLaneMakesConnectFail) {
  constexpr double kPromptMs = 1000;
  std::vector<std::string> env = lane().env;
  env.push_back("ADXL_NODE_ID=s9-3-another-node");
  PeerProcess remote_peer(env);
  const std::string remote = InitOnFreePort(remote_peer, PeerInitArgs());
  ASSERT_NE(remote, "");
  InitLocal({{"GlobalResourceConfig", R"({"comm_resource_config.protocol_desc":"hccs:host"})"}});
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(engine_.Connect(remote.c_str(), 10000), FAILED);
  EXPECT_LT(MsSince(t0), ScaledMs(kPromptMs)) << "the refusal waited for the Connect timeout";
  // No half link is left: a second Connect is refused the same way, and
  // transfers find no link.
  EXPECT_EQ(engine_.Connect(remote.c_str(), 5000), FAILED);
  EXPECT_EQ(engine_.TransferSync(remote.c_str(), READ, {{local_.addr(), 4096, 64}}, 1000), NOT_CONNECTED);
  // The peer itself is reachable without the restriction (on the RDMA lane:
  // another node).
  AdxlEngine unrestricted;
  ASSERT_EQ(unrestricted.Initialize("127.0.0.1", LaneOptions()), SUCCESS);
  EXPECT_EQ(unrestricted.Connect(remote.c_str(), 5000), SUCCESS);
}

}  // namespace
