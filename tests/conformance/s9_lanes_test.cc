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
  ::testing::internal::CaptureStderr();  // the engine's log: "... with an ERROR line saying so"
  EXPECT_EQ(engine_.Connect(remote.c_str(), 10000), FAILED);
  const double refusal_ms = MsSince(t0);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_LT(refusal_ms, ScaledMs(kPromptMs)) << "the refusal waited for the Connect timeout";
  EXPECT_NE(log.find("ERROR"), std::string::npos) << "no ERROR line for the refusal: " << log;
  EXPECT_NE(log.find("protocol_desc"), std::string::npos) << "the ERROR line does not say why: " << log;
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

// §9.3 "an unknown value is PARAM_INVALID, and so are the protocols of
// hardware no host here has (ub_ctp, ub_tp, ub_rtp, uboe, ubg), with an
// ERROR line naming the lanes that exist".
TEST_P(Conformance, S9_3_UnknownAndAbsentProtocolsAreParamInvalid) {
  for (const char *desc : {"nvlink:host", "ub_ctp:host", "uboe:device"}) {
    AdxlEngine e;
    const std::string config = std::string(R"({"comm_resource_config.protocol_desc":")") + desc + "\"}";
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(e.Initialize("127.0.0.1", LaneOptions({{"GlobalResourceConfig", config.c_str()}})), PARAM_INVALID)
        << desc;
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find("ERROR"), std::string::npos) << desc << ": no ERROR line: " << log;
    EXPECT_NE(log.find("hccs"), std::string::npos) << desc << ": the ERROR line does not name hccs: " << log;
    EXPECT_NE(log.find("roce"), std::string::npos) << desc << ": the ERROR line does not name roce: " << log;
  }
}

}  // namespace
