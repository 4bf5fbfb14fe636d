// docs/contract.md §5.11, the inbound cap (adxl.MaxInboundPeers), where the
// engine-driven test (channel_pool_test.cc InboundCap.*) cannot reach: a
// peer connecting again under its own listening name while its earlier
// connection is still open.  No engine can make that connection (two
// processes cannot listen on one name), so this test speaks the handshake
// itself on raw connections (raw_conn.h), under names that listen
// ("127.0.0.1:<port>") but need not exist.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "adxl/adxl_engine.h"
#include "mp_fixture.h"
#include "raw_conn.h"
#include "wire_frames.h"

using namespace adxl_test;
using namespace adxl_test::wire_frames;

namespace {

// Sends a Hello from `from` to `to` and returns the status of the HelloAck
// (-1: none within 3 s).
int64_t HelloStatus(RawConn &c, const std::string &from, const std::string &to) {
  if (!c.ok() || !c.Send(Encoded(1, adxl::wire::Hello{from, to, "inbound-cap-node", 0, ""}))) return -1;
  uint16_t type = 0;
  uint64_t seq = 0;
  std::string p;
  if (!c.ReadFrame(3000, &type, &seq, &p) || type != Code(adxl::wire::Type::kHelloAck) || p.size() < 4) return -1;
  return static_cast<int64_t>(GetLe(p, 0, 4));
}

// §5.11 "A peer connecting again under its own listening name replaces its
// earlier connection and is not refused."  An engine serving at most one
// peer admits A, refuses B while A's connection is open, admits A again
// on a second connection (the first still open: A restarted before its old
// connection was seen to close) and closes A's earlier connection.  Each
// refusal is a WARN line of the target's, and an engine refused is told why.
TEST(InboundCap, APeerConnectingAgainUnderItsNameReplacesItsConnection) {
  // The target's log (stderr) goes to a file: the refusals' WARN lines.
  char log_template[] = "/tmp/adxl_inbound_cap_XXXXXX";
  const int log_fd = mkstemp(log_template);
  ASSERT_GE(log_fd, 0);
  close(log_fd);
  const std::string log_path = log_template;
  struct Unlink {
    std::string path;
    ~Unlink() { unlink(path.c_str()); }
  } unlink_log{log_path};
  PeerProcess target({"ADXL_LOG_LEVEL=warn"}, {"sh", "-c", "exec \"$0\" 2>>" + log_path});
  const std::string name = InitOnFreePort(target, "adxl.HeartbeatMs=1000 adxl.MaxInboundPeers=1");
  ASSERT_NE(name, "");
  const uint16_t port = static_cast<uint16_t>(std::stoi(name.substr(name.rfind(':') + 1)));
  const std::string a = "127.0.0.1:1", b = "127.0.0.1:2";
  RawConn first(port);
  ASSERT_EQ(HelloStatus(first, a, name), static_cast<int64_t>(adxl::SUCCESS));
  RawConn other(port);
  EXPECT_EQ(HelloStatus(other, b, name), static_cast<int64_t>(adxl::RESOURCE_EXHAUSTED))
      << "a second peer was admitted past adxl.MaxInboundPeers=1";
  RawConn again(port);
  EXPECT_EQ(HelloStatus(again, a, name), static_cast<int64_t>(adxl::SUCCESS))
      << "the same peer connecting again under its listening name was refused";
  EXPECT_TRUE(first.ClosedByServer(3000)) << "the peer's earlier connection was not replaced";
  EXPECT_FALSE(again.ClosedNow()) << "the replacing connection was closed";
  // Still one peer: another name is refused.
  RawConn third(port);
  EXPECT_EQ(HelloStatus(third, b, name), static_cast<int64_t>(adxl::RESOURCE_EXHAUSTED));
  // "its Connect returns RESOURCE_EXHAUSTED with a line saying why, and the
  // refusing engine logs a WARN line": an engine of this process is refused
  // too, and both sides said so.
  adxl::AdxlEngine client;
  ASSERT_EQ(client.Initialize("127.0.0.1", {{"adxl.HeartbeatMs", "1000"}}), adxl::SUCCESS);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(client.Connect(name.c_str(), 3000), adxl::RESOURCE_EXHAUSTED);
  const std::string client_log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(client_log.find("MaxInboundPeers"), std::string::npos) << "no line saying why: " << client_log;
  client.Finalize();
  std::ifstream in(log_path);
  std::string target_log, line;
  size_t warns = 0;
  while (std::getline(in, line)) {
    target_log += line + "\n";
    if (line.find("WARN") != std::string::npos &&
        line.find("refused: this engine accepts at most 1 peers (adxl.MaxInboundPeers)") != std::string::npos) {
      ++warns;
    }
  }
  EXPECT_GE(warns, 3u) << "the target did not log a WARN line for each of its 3 refusals: " << target_log;
}

}  // namespace
