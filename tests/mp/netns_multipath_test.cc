// Multi-path links on the RDMA lane (ADXL_UCX_RDMA_PATHS, README "Multi-path
// links"): two hosts (network namespaces) joined by two veth pairs, each its
// own /24 and rate-limited to 1 Gbit/s (netns_fixture.h), the lane over
// active messages (what runs over TCP).  Each engine names its own two veth
// ends in ADXL_UCX_RDMA_PATHS.
//  - Striping: 64 MiB written and 64 MiB read back as batches of 1 MiB
//    descriptors, every byte verified; each path's interfaces (sender's
//    tx_bytes, receiver's rx_bytes) carried at least a quarter of the
//    payload in each direction, and the link's description names both
//    paths.  UCX's own multi-rail striping is switched off
//    (UCX_MAX_RNDV_RAILS / UCX_MAX_EAGER_RAILS = 1): without it one UCP
//    endpoint already spreads rendezvous data over every device it sees, so
//    both paths would carry bytes whether the plugin honours the option or
//    not.
//  - Paths of different speeds (1 Gbit/s and 250 Mbit/s): the slow path
//    carries a share near its share of the rate (1/5), not half.
//  - Paths cut and returned (failover: transfers go on over the surviving
//    path, every path cut fails them in time): netns_failover_test.cc.
//  - Batches below the striping threshold (4 KiB descriptors) and striped
//    batches of odd-sized descriptors arrive intact.
//  - A name in ADXL_UCX_RDMA_PATHS that is no interface, or an interface
//    without an IPv4 address: Initialize fails with a status (the process
//    lives on) and the log names the interface.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "mp_fixture.h"
#include "netns_fixture.h"

using namespace adxl_test;

namespace {

constexpr size_t kTotal = 64 << 20;    // per direction
constexpr size_t kBatch = 8 << 20;     // one TransferSync
constexpr size_t kPiece = 1 << 20;     // one descriptor
constexpr int32_t kDeadlineMs = 30000;  // per batch: ~70 ms on the wire over one 1 Gbit/s path
constexpr int32_t kConnectMs = 10000;

class NetnsMultipathTest : public NetnsFixture {
 protected:
  int Paths() const override { return 2; }
  std::string RateLimit() const override { return "1gbit"; }

  // The environment of an engine in namespace A (`a`) or B with the paths
  // option naming `paths` (unset when empty).
  static std::vector<std::string> Env(const std::string &paths) {
    std::vector<std::string> env = {"ADXL_UCX_RDMA_PROTOCOL=am", "UCX_MAX_RNDV_RAILS=1", "UCX_MAX_EAGER_RAILS=1"};
    if (!paths.empty()) env.push_back("ADXL_UCX_RDMA_PATHS=" + paths);
    return env;
  }
  std::string OwnPaths(bool a) const {
    return a ? paths_[0].veth_a + "," + paths_[1].veth_a : paths_[0].veth_b + "," + paths_[1].veth_b;
  }

  // How the engines are told about paths: each names its own two veth ends,
  // or the option is left unset (the default: every interface up with
  // IPv4), or set to "none".
  enum class PathsOption { kNamed, kUnset, kNone };

  // Target A and initiator B (each one registered buffer of `len` bytes);
  // B linked to A.
  void Start(size_t len, PathsOption option = PathsOption::kNamed) {
    auto value = [&](bool a) {
      return option == PathsOption::kNamed ? OwnPaths(a) : option == PathsOption::kNone ? "none" : "";
    };
    StartLinkedPair(paths_[0].ip_a + ":26320", Env(value(true)), Env(value(false)), len, kConnectMs);
  }

  // One batch: `len` bytes at offset `off` of both buffers, as descriptors
  // of `piece` bytes.
  std::string Batch(bool write, size_t off, size_t len, size_t piece) {
    return b_->Command(std::string(write ? "write " : "read ") + a_name_ + " " + std::to_string(kDeadlineMs) +
                           " 0 " + std::to_string(off) + " " + std::to_string(remote_ + off) + " " +
                           std::to_string(len) + " " + std::to_string(piece),
                       kDeadlineMs + 10000);
  }
  // Fills the source's buffer with `seed`, moves [off, off + len) in
  // batches of `batch` bytes made of `piece`-byte descriptors, and checks
  // that the range arrived intact.
  void VerifiedTransfer(bool write, int seed, size_t off, size_t len, size_t batch, size_t piece) {
    const char *what = write ? "WRITE" : "READ";
    PeerProcess &source = write ? *b_ : *a_;
    ASSERT_EQ(source.Command("fill 0 " + std::to_string(seed)), "ok");
    for (size_t done = 0; done < len; done += batch) {
      const size_t n = std::min(batch, len - done);
      ASSERT_EQ(Batch(write, off + done, n, piece), "ok")
          << what << " batch at " << off + done << " (" << n << " bytes, descriptors of " << piece << ")";
    }
    const std::string hash = "hash 0 " + std::to_string(off) + " " + std::to_string(len);
    EXPECT_EQ(a_->Ok(hash).at(0), b_->Ok(hash).at(0))
        << what << " of " << len << " bytes in descriptors of " << piece << " arrived corrupted";
  }

};

TEST_F(NetnsMultipathTest, LargeBatchesStripeOverBothPathsVerified) {
  ASSERT_NO_FATAL_FAILURE(Start(kTotal));
  // "am:tcp/<path 1's device>+tcp/<path 2's device>": one part per path, in
  // either order.
  std::vector<std::string> parts;
  std::istringstream split(transports_);
  for (std::string part; std::getline(split, part, '+');) parts.push_back(part);
  // Not fatal: the byte counts below say what the link did anyway.
  EXPECT_EQ(parts.size(), 2u) << "the link is not over two paths: transports " << transports_;
  if (parts.size() == 2) {
    const bool in_order = parts[0].find(paths_[0].veth_b) != std::string::npos &&
                          parts[1].find(paths_[1].veth_b) != std::string::npos;
    const bool swapped = parts[0].find(paths_[1].veth_b) != std::string::npos &&
                         parts[1].find(paths_[0].veth_b) != std::string::npos;
    EXPECT_TRUE(in_order || swapped) << "transports " << transports_ << " do not name " << paths_[0].veth_b
                                     << " and " << paths_[1].veth_b << " one per path";
  }

  for (bool write : {true, false}) {
    const char *what = write ? "WRITE" : "READ";
    const Snapshot before = Counts();
    ASSERT_NO_FATAL_FAILURE(VerifiedTransfer(write, write ? 5 : 6, 0, kTotal, kBatch, kPiece));
    const Snapshot after = Counts();
    // The data flows B -> A for WRITE, A -> B for READ.
    const int sender = write ? 1 : 0, receiver = 1 - sender;
    for (size_t i = 0; i < paths_.size(); ++i) {
      const uint64_t sent = after[i][sender].tx - before[i][sender].tx;
      const uint64_t got = after[i][receiver].rx - before[i][receiver].rx;
      printf("%s of %zu MiB: path %zu (%s/%s) sent %.1f MiB, received %.1f MiB\n", what, kTotal >> 20, i + 1,
             paths_[i].veth_a.c_str(), paths_[i].veth_b.c_str(), sent / 1048576.0, got / 1048576.0);
      EXPECT_GE(sent, kTotal / 4) << what << ": path " << i + 1 << " sent less than a quarter of the payload";
      EXPECT_GE(got, kTotal / 4) << what << ": path " << i + 1 << " received less than a quarter of the payload";
    }
  }
}

// Without ADXL_UCX_RDMA_PATHS each engine makes every interface that is up
// with an IPv4 address a path (here its two veth ends): the link stripes
// over both, every byte verified.  With the option set to "none" the link
// is one connection, described without a '+'.
TEST_F(NetnsMultipathTest, UnsetOptionMakesEveryInterfaceAPathAndNoneTurnsThemOff) {
  constexpr size_t kLen = 32 << 20;
  ASSERT_NO_FATAL_FAILURE(Start(kLen, PathsOption::kUnset));
  EXPECT_NE(transports_.find('+'), std::string::npos) << "one connection by default: transports " << transports_;
  const Snapshot before = Counts();
  ASSERT_NO_FATAL_FAILURE(VerifiedTransfer(true, 11, 0, kLen, kBatch, kPiece));
  const Snapshot after = Counts();
  for (size_t i = 0; i < paths_.size(); ++i) {
    const uint64_t sent = after[i][1].tx - before[i][1].tx;
    EXPECT_GE(sent, kLen / 4) << "path " << i + 1 << " sent less than a quarter of the payload by default";
  }
  ASSERT_NO_FATAL_FAILURE(Start(kLen, PathsOption::kNone));
  EXPECT_EQ(transports_.find('+'), std::string::npos) << "paths despite ADXL_UCX_RDMA_PATHS=none: " << transports_;
  ASSERT_NO_FATAL_FAILURE(VerifiedTransfer(false, 12, 0, kLen, kBatch, kPiece));
}

// Path 1 at 1 Gbit/s, path 2 at 250 Mbit/s: striped in proportion to the
// measured rates, path 2 should carry about a fifth of each batch (after
// the first batches, split before anything was measured); split evenly it
// carries half, and every batch waits for it.
class NetnsUnequalPathsTest : public NetnsMultipathTest {
 protected:
  std::string PathRateLimit(size_t i) const override { return i == 0 ? "1gbit" : "250mbit"; }
};

TEST_F(NetnsUnequalPathsTest, SlowPathCarriesItsShareOfTheRate) {
  constexpr size_t kLen = 128 << 20;  // 16 batches: enough for the rates to be measured and used
  ASSERT_NO_FATAL_FAILURE(Start(kLen));
  for (bool write : {true, false}) {
    const char *what = write ? "WRITE" : "READ";
    const Snapshot before = Counts();
    ASSERT_NO_FATAL_FAILURE(VerifiedTransfer(write, write ? 21 : 22, 0, kLen, kBatch, kPiece));
    const Snapshot after = Counts();
    const int sender = write ? 1 : 0;
    const double fast = after[0][sender].tx - before[0][sender].tx;
    const double slow = after[1][sender].tx - before[1][sender].tx;
    const double share = slow / (fast + slow);
    printf("%s of %zu MiB: 1 Gbit/s path sent %.1f MiB, 250 Mbit/s path %.1f MiB (%.0f %%)\n", what, kLen >> 20,
           fast / 1048576.0, slow / 1048576.0, share * 100);
    // 20 % when split by rate from the start; up to 50 % while unmeasured.
    EXPECT_LE(share, 0.35) << what << ": the slow path carried more than its rate's share (split evenly?)";
    EXPECT_GE(share, 0.08) << what << ": the slow path carried almost nothing (not striped?)";
  }
}

TEST_F(NetnsMultipathTest, SmallAndOddSizedBatchesArriveIntact) {
  constexpr size_t kLen = 4 << 20;
  ASSERT_NO_FATAL_FAILURE(Start(kLen));
  for (bool write : {true, false}) {
    // Single 4 KiB descriptors, and 64 KiB batches of 4 KiB ones: below the
    // striping threshold, one path each.
    ASSERT_NO_FATAL_FAILURE(VerifiedTransfer(write, write ? 11 : 12, 0, 256 << 10, 4096, 4096));
    ASSERT_NO_FATAL_FAILURE(VerifiedTransfer(write, write ? 13 : 14, 256 << 10, 1 << 20, 64 << 10, 4096));
    // Just below the threshold, then striped batches of descriptors of an
    // odd size at odd offsets, the last one shorter.
    ASSERT_NO_FATAL_FAILURE(VerifiedTransfer(write, write ? 15 : 16, 4096, (1 << 20) - 1, 1 << 20, 100000));
    ASSERT_NO_FATAL_FAILURE(VerifiedTransfer(write, write ? 17 : 18, 12345, (3 << 20) + 777, (3 << 20) + 777,
                                             99991));
  }
}

// A bad ADXL_UCX_RDMA_PATHS in namespace A: Initialize answers with a
// failure status, the engine process lives on, and its log names `bad`.
class NetnsMultipathConfigTest : public NetnsMultipathTest {
 protected:
  void ExpectInitFails(const std::string &paths, const std::string &bad) {
    ASSERT_TRUE(made_);
    const std::string log = "/tmp/adxl-netns-multipath-" + std::to_string(getpid()) + ".log";
    std::remove(log.c_str());
    {
      // The peer's stderr (the engine's and the plugin's log) into `log`.
      PeerProcess a(Env(paths), {"ip", "netns", "exec", ns_a_, "sh", "-c", "exec \"$0\" 2>" + log});
      const std::string answer = a.Command("init " + paths_[0].ip_a + ":26321");
      EXPECT_TRUE(answer.rfind("status ", 0) == 0)
          << "ADXL_UCX_RDMA_PATHS=" << paths << ": Initialize answered '" << answer
          << "', not a failure status ('ok': it succeeded; nothing: the peer hung or died)";
      EXPECT_EQ(a.Ok("alloc 4096").size(), 2u) << "the engine process did not live on";
    }
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove(log.c_str());
    EXPECT_NE(text.find(bad), std::string::npos) << "no log line names " << bad << "; the log:\n" << text;
  }
};

TEST_F(NetnsMultipathConfigTest, NoSuchInterfaceFailsInitialize) {
  ASSERT_TRUE(made_);
  const std::string bad = "adxnone" + std::to_string(getpid() % 100000);
  ExpectInitFails(paths_[0].veth_a + "," + bad, bad);
}

TEST_F(NetnsMultipathConfigTest, InterfaceWithoutIpv4FailsInitialize) {
  ASSERT_TRUE(made_);
  // A veth pair with both ends in A, up, without addresses.
  const std::string id = std::to_string(getpid() % 100000);
  const std::string bare = "adxn" + id;
  ASSERT_EQ(Shell("ip -n " + ns_a_ + " link add " + bare + " type veth peer name adxm" + id), 0);
  ASSERT_EQ(Shell("ip -n " + ns_a_ + " link set " + bare + " up"), 0);
  ExpectInitFails(paths_[0].veth_a + "," + bare, bare);
}

}  // namespace
