// Spec §7 (notifies) with a real peer process on loopback.
#include <csignal>

#include "mp_fixture.h"

using namespace adxl;
using namespace adxl_test;

namespace {

class NotifyTest : public PeerTest {
 protected:
  Status Send(const std::string &name, const std::string &msg, int32_t timeout_ms = 2000) {
    return engine_.SendNotify(peer_name_.c_str(), {name.c_str(), msg.c_str()}, timeout_ms);
  }
  // The peer's GetNotifies: count followed by "name=msg" words.
  std::vector<std::string> Drain() { return peer_->Ok("notifies"); }
};

TEST_F(NotifyTest, NeedsALink) { EXPECT_EQ(Send("a", "b"), NOT_CONNECTED); }

TEST_F(NotifyTest, ArgumentChecks) {
  ASSERT_EQ(Connect(), SUCCESS);
  EXPECT_EQ(Send("a", "b", 0), PARAM_INVALID);
  EXPECT_EQ(Send("a", "b", -3), PARAM_INVALID);
  EXPECT_EQ(Send(std::string(1025, 'n'), "m"), PARAM_INVALID);
  EXPECT_EQ(Send("n", std::string(1025, 'm')), PARAM_INVALID);
  EXPECT_EQ(Send(std::string(1024, 'n'), std::string(1024, 'm')), SUCCESS);
  auto got = Drain();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], "1");
  EXPECT_EQ(got[1], std::string(1024, 'n') + "=" + std::string(1024, 'm'));
}

TEST_F(NotifyTest, OrderIsKeptAndGetNotifiesClears) {
  ASSERT_EQ(Connect(), SUCCESS);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(Send("k" + std::to_string(i), "v" + std::to_string(i)), SUCCESS);
  auto got = Drain();
  ASSERT_EQ(got.size(), 201u);
  EXPECT_EQ(got[0], "200");
  for (int i = 0; i < 200; ++i) EXPECT_EQ(got[1 + i], "k" + std::to_string(i) + "=v" + std::to_string(i));
  EXPECT_EQ(Drain(), std::vector<std::string>{"0"});
}

TEST_F(NotifyTest, NotifiesFromSeveralClientsAllArrive) {
  ASSERT_EQ(Connect(), SUCCESS);
  AdxlEngine second;
  ASSERT_EQ(second.Initialize("127.0.0.1", {}), SUCCESS);
  ASSERT_EQ(second.Connect(peer_name_.c_str(), 5000), SUCCESS);
  ASSERT_EQ(Send("from", "first"), SUCCESS);
  ASSERT_EQ(second.SendNotify(peer_name_.c_str(), {"from", "second"}, 2000), SUCCESS);
  auto got = Drain();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "2");
}

TEST_F(NotifyTest, FullReceiverIsResourceExhausted) {
  ASSERT_EQ(Connect(), SUCCESS);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(Send("n", "m"), SUCCESS) << i;
  EXPECT_EQ(Send("n", "m"), RESOURCE_EXHAUSTED);
  auto got = Drain();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0], "4096");
  EXPECT_EQ(Send("n", "m"), SUCCESS);  // room again
}

TEST_F(NotifyTest, UnacknowledgedNotifyIsTimeout) {
  ASSERT_EQ(Connect(), SUCCESS);
  peer_->Stop();  // SIGSTOP, and wait until every thread of the peer is stopped (kill() alone races the ack)
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Send("n", "m", 150), TIMEOUT);
  EXPECT_LT(MsSince(t0), 1000);
  peer_->Signal(SIGCONT);
}

}  // namespace
