// docs/contract.md §5 (links) with a real peer process on loopback.
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <csignal>
#include <thread>

#include "mp_fixture.h"

using namespace adxl;
using namespace adxl_test;

namespace {

class LinksTest : public PeerTest {};

TEST_F(LinksTest, AnIdleLinkedEngineUsesNoMeasurableCpu) {
  ASSERT_EQ(Connect(), SUCCESS);
  ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), WRITE, {{local_.addr(), remote_, 1 << 20}}), SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const long before = ProcessCpuMs(peer_->pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // 10 heartbeats of 200 ms
  const long used = ProcessCpuMs(peer_->pid()) - before;
  ASSERT_GE(before, 0);
  // A busy-polling progress thread would use ~2000 ms here; heartbeats cost
  // microseconds.  (A behaviour check with a wide margin, not a timing.)
  EXPECT_LT(used, 100) << "the idle peer used " << used << " ms of CPU in 2 s";
}

}  // namespace
