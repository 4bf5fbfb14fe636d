// A peer that restarts under the same name ("same identity
// rejoins"), with real processes on loopback, on both lanes: the restarted
// peer links again and is linked to again without anyone calling Disconnect
// first, and nothing of the old process (its endpoint, its regions) is used
// for the new one.
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"
#include "free_port.h"
#include "mp_fixture.h"
#include "pattern.h"
#include "peer_process.h"

using namespace adxl;
using namespace adxl_test;

namespace {

constexpr size_t kLen = 1 << 20;
constexpr const char *kRoce = R"({"comm_resource_config.protocol_desc":"roce:host"})";

class RejoinTest : public ::testing::TestWithParam<const char *> {
 protected:
  bool rdma() const { return std::string(GetParam()) == "rdma"; }
  std::string PeerArgs() const {
    return std::string("adxl.HeartbeatMs=200") + (rdma() ? std::string(" GlobalResourceConfig=") + kRoce : "");
  }
  // Starts a peer process named `name` ("" picks a free port), with one
  // registered buffer holding pattern `seed`; *addr gets its address.
  std::unique_ptr<PeerProcess> StartPeer(std::string *name, uint64_t seed, uint64_t *addr) {
    auto p = std::make_unique<PeerProcess>();
    if (name->empty()) {
      *name = InitOnFreePort(*p, PeerArgs());
    } else {
      // The dead process's port is free again (its socket closed with it).
      std::string got;
      for (int i = 0; i < 50 && got != "ok"; ++i) {
        got = p->Command("init " + *name + " " + PeerArgs());
        if (got != "ok") std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (got != "ok") name->clear();
    }
    auto a = p->Ok("alloc " + std::to_string(kLen));
    if (a.size() != 2 || p->Ok("reg 0").size() != 1 || p->Command("fill 0 " + std::to_string(seed)) != "ok") {
      return nullptr;
    }
    *addr = std::stoull(a[1]);
    return p;
  }
  // READs the peer's buffer into local_ and says whether it holds `seed`.
  bool ReadsPattern(const std::string &peer, uint64_t addr, uint64_t seed) {
    memset(local_.data(), 0, kLen);
    if (target_.TransferSync(peer.c_str(), READ, {{local_.addr(), addr, kLen}}, 5000) != SUCCESS) return false;
    std::vector<uint8_t> want(kLen);
    FillPattern(want.data(), kLen, seed);
    return memcmp(want.data(), local_.data(), kLen) == 0;
  }

  // The target's link to `peer` runs on the lane under test.
  void ExpectLane(const std::string &peer) {
    ext::LinkInfo info;
    ASSERT_EQ(ext::GetLinkInfo(target_, peer.c_str(), info), SUCCESS);
    EXPECT_EQ(info.lane, GetParam()) << "the target's link is not on the lane under test: " << info.transports;
  }
  // And so does the peer process's link to the target ("ok <lane> <transports>").
  static void ExpectPeerLane(PeerProcess &p, const std::string &target, const char *lane) {
    const auto w = p.Ok("lane " + target);
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0], lane) << "the peer's link is not on the lane under test: " << w[1];
  }

  AlignedBuffer local_{kLen};
  AdxlEngine target_;
};

// The target links to the peer and the peer to the target; the peer is
// killed and a new process starts under the same name.  Both directions
// link again without a Disconnect, every byte read is the new process's,
// and the old process's region is not reachable through the new link.
TEST_P(RejoinTest, APeerRestartedUnderItsNameIsLinkedAgainWithoutDisconnect) {
  const std::string target_name = LoopbackName(FreePort());
  std::map<AscendString, AscendString> opts{{"adxl.HeartbeatMs", "200"}};
  if (rdma()) opts["GlobalResourceConfig"] = kRoce;
  ASSERT_EQ(target_.Initialize(target_name.c_str(), opts), SUCCESS);
  MemHandle h = nullptr;
  ASSERT_EQ(target_.RegisterMem({local_.addr(), kLen}, MEM_HOST, h), SUCCESS);

  std::string peer_name;
  uint64_t old_addr = 0;
  auto old_peer = StartPeer(&peer_name, 1, &old_addr);
  ASSERT_TRUE(old_peer && !peer_name.empty());
  ASSERT_EQ(target_.Connect(peer_name.c_str(), 5000), SUCCESS);
  ExpectLane(peer_name);
  ASSERT_TRUE(ReadsPattern(peer_name, old_addr, 1));
  ASSERT_EQ(old_peer->Command("connect " + target_name + " 5000"), "ok");
  ExpectPeerLane(*old_peer, target_name, GetParam());
  old_peer->KillAndWait();

  // The same name, a new process, new memory (maybe at the same address).
  uint64_t new_addr = 0;
  auto new_peer = StartPeer(&peer_name, 2, &new_addr);
  ASSERT_TRUE(new_peer && !peer_name.empty()) << "the restarted peer could not take its name again";
  // The new process connects to the target, which still may hold the old
  // one's subscription: linked at once.
  EXPECT_EQ(new_peer->Command("connect " + target_name + " 5000"), "ok");
  // The target's link to the old process failed when its connection closed;
  // Connect replaces it (no Disconnect first), within a bounded wait for
  // the failure to be seen.
  Status st = ALREADY_CONNECTED;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((st = target_.Connect(peer_name.c_str(), 5000)) == ALREADY_CONNECTED &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(st, SUCCESS) << "a restarted peer must be linked again without Disconnect";
  ExpectLane(peer_name);
  ExpectPeerLane(*new_peer, target_name, GetParam());
  EXPECT_TRUE(ReadsPattern(peer_name, new_addr, 2)) << "the bytes read are not the new process's";
  if (old_addr + kLen <= new_addr || new_addr + kLen <= old_addr) {
    // The old process's region went with its link.
    EXPECT_EQ(target_.TransferSync(peer_name.c_str(), READ, {{local_.addr(), old_addr, 4096}}, 2000), PARAM_INVALID);
  }
  // And the new process moves the target's bytes both ways.
  FillPattern(local_.data(), kLen, 7);
  ASSERT_EQ(new_peer->Command("read " + target_name + " 5000 0 0 " + std::to_string(local_.addr()) + " " +
                              std::to_string(kLen)),
            "ok");
  std::vector<uint8_t> want(kLen);
  FillPattern(want.data(), kLen, 7);
  EXPECT_EQ(new_peer->Ok("hash 0 0 " + std::to_string(kLen)), std::vector<std::string>{std::to_string(Hash(want.data(), kLen))});
  EXPECT_EQ(new_peer->FinalizeAndExit(), 0);
  target_.DeregisterMem(h);
  target_.Finalize();
}

INSTANTIATE_TEST_SUITE_P(Lanes, RejoinTest, ::testing::Values("hccs", "rdma"),
                         [](const ::testing::TestParamInfo<const char *> &i) { return std::string(i.param); });

}  // namespace
