// NetnsFixture: two "hosts" on one machine — network namespaces A and B
// joined by one or more veth pairs, each pair its own /24 subnet (a path),
// each optionally rate-limited with a tc tbf qdisc on both ends, so that a
// path behaves like a NIC of a fixed bandwidth.  Tests take a path down and
// up (`ip link set ... down`: a real partition, the sockets stay open and
// nothing answers), make it silent (carrier kept, every packet dropped) and
// run engines in either namespace (PeerIn).
//
// A subclass chooses the network by overriding Paths() and RateLimit() (or
// PathRateLimit(i), for paths of different speeds).
// Counts() reads each path's interface byte counters (what a path carried).
// Where the network cannot be built (not root, no iproute2/tc, no namespace
// support) SetUp skips the test and says why.
#ifndef ADXL_TESTS_SUPPORT_NETNS_FIXTURE_H_
#define ADXL_TESTS_SUPPORT_NETNS_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "peer_process.h"

namespace adxl_test {

class NetnsFixture : public ::testing::Test {
 public:
  // Runs `cmd` through the shell, output discarded; its exit status.
  static int Shell(const std::string &cmd) { return system((cmd + " >/dev/null 2>&1").c_str()); }

 protected:
  // One veth pair between the namespaces.
  struct Path {
    std::string veth_a, veth_b;  // the ends in namespace A and B
    std::string ip_a, ip_b;      // their addresses (x.y.z.1 in A, x.y.z.2 in B)
  };

  // How many veth pairs join A and B (each its own subnet).
  virtual int Paths() const { return 1; }
  // A tbf rate for every path ("2gbit", "400mbit"); empty: no limit.
  virtual std::string RateLimit() const { return ""; }
  // The rate of path i (paths of different speeds); RateLimit() unless overridden.
  virtual std::string PathRateLimit(size_t i) const {
    (void)i;
    return RateLimit();
  }

  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
    const std::string id = std::to_string(getpid() % 100000);
    ns_a_ = "adxl-a-" + id;
    ns_b_ = "adxl-b-" + id;
    // /24s of the private range picked from the pid, so that parallel runs
    // differ; path i uses 10.(213+i).x.0/24.
    const std::string host = std::to_string(getpid() % 250 + 1);
    std::vector<std::string> steps = {"ip netns add " + ns_a_, "ip netns add " + ns_b_,
                                      "ip -n " + ns_a_ + " link set lo up", "ip -n " + ns_b_ + " link set lo up"};
    for (int i = 0; i < Paths(); ++i) {
      Path p;
      p.veth_a = "adxa" + std::to_string(i) + id;
      p.veth_b = "adxb" + std::to_string(i) + id;
      const std::string subnet = "10." + std::to_string(213 + i) + "." + host;
      p.ip_a = subnet + ".1";
      p.ip_b = subnet + ".2";
      const std::string more[] = {
          "ip link add " + p.veth_a + " type veth peer name " + p.veth_b,
          "ip link set " + p.veth_a + " netns " + ns_a_,
          "ip link set " + p.veth_b + " netns " + ns_b_,
          "ip -n " + ns_a_ + " addr add " + p.ip_a + "/24 dev " + p.veth_a,
          "ip -n " + ns_b_ + " addr add " + p.ip_b + "/24 dev " + p.veth_b,
          "ip -n " + ns_a_ + " link set " + p.veth_a + " up",
          "ip -n " + ns_b_ + " link set " + p.veth_b + " up",
      };
      steps.insert(steps.end(), std::begin(more), std::end(more));
      const std::string qdisc = PathQdisc(static_cast<size_t>(i));
      if (!qdisc.empty()) {
        steps.push_back("ip netns exec " + ns_a_ + " tc qdisc add dev " + p.veth_a + " root " + qdisc);
        steps.push_back("ip netns exec " + ns_b_ + " tc qdisc add dev " + p.veth_b + " root " + qdisc);
      }
      paths_.push_back(p);
    }
    for (const std::string &s : steps) {
      if (Shell(s) != 0) {
        TearDown();
        GTEST_SKIP() << "cannot build the test network ('" << s << "' failed): no namespace or tc support here";
      }
    }
    made_ = true;
  }

  void TearDown() override {
    // Deleting a namespace removes its ends of the veth pairs, and with them the pairs.
    if (!ns_a_.empty()) Shell("ip netns del " + ns_a_);
    if (!ns_b_.empty()) Shell("ip netns del " + ns_b_);
  }

  // Takes path i down (or up) at both ends: no packet passes, no socket is told.
  bool SetPath(size_t i, bool up) {
    const std::string state = up ? " up" : " down";
    return Shell("ip -n " + ns_a_ + " link set " + paths_.at(i).veth_a + state) == 0 &&
           Shell("ip -n " + ns_b_ + " link set " + paths_.at(i).veth_b + state) == 0;
  }

  // Makes path i silent (or not): both ends keep their carrier and drop
  // every packet they would send (a queue of length 0), as a dead switch
  // port further on would; no socket is told.  Back, the path's rate limit
  // is restored.
  bool SetPathSilent(size_t i, bool silent) {
    const std::string qdisc = PathQdisc(i);
    const auto set = [&](const std::string &ns, const std::string &dev) {
      const std::string tc = "ip netns exec " + ns + " tc qdisc ";
      if (silent) return Shell(tc + "replace dev " + dev + " root pfifo limit 0") == 0;
      return Shell(qdisc.empty() ? tc + "del dev " + dev + " root" : tc + "replace dev " + dev + " root " + qdisc) == 0;
    };
    return set(ns_a_, paths_.at(i).veth_a) && set(ns_b_, paths_.at(i).veth_b);
  }

  // The byte counters of one interface.
  struct Counters {
    uint64_t tx = 0, rx = 0;
  };
  // [path][0 = A's end, 1 = B's end]
  using Snapshot = std::vector<std::vector<Counters>>;

  // The counters of interface `dev` in namespace `ns` (0 where unreadable).
  static Counters ReadCounters(const std::string &ns, const std::string &dev) {
    Counters c;
    for (int i = 0; i < 2; ++i) {
      const std::string cmd = "ip netns exec " + ns + " cat /sys/class/net/" + dev + "/statistics/" +
                              (i == 0 ? "tx_bytes" : "rx_bytes");
      FILE *f = popen(cmd.c_str(), "r");
      unsigned long long v = 0;
      if (f != nullptr) {
        if (fscanf(f, "%llu", &v) != 1) v = 0;
        pclose(f);
      }
      (i == 0 ? c.tx : c.rx) = v;
    }
    return c;
  }
  // Every path's counters, both ends.
  Snapshot Counts() const {
    Snapshot s;
    for (const Path &p : paths_) s.push_back({ReadCounters(ns_a_, p.veth_a), ReadCounters(ns_b_, p.veth_b)});
    return s;
  }

  // Two engines linked over the network: target A in namespace A, named
  // `a_name` (an address of A's end of a pair), and initiator B named by
  // its end of pair 0, each with one registered buffer of `len` bytes
  // (buffer 0); B connected to A within `connect_ms` over the RDMA lane.
  // Sets a_, b_, a_name_, remote_ (A's buffer) and transports_ (the link's
  // description); a fatal failure names the step that failed.
  void StartLinkedPair(const std::string &a_name, const std::vector<std::string> &env_a,
                       const std::vector<std::string> &env_b, size_t len, int32_t connect_ms) {
    ASSERT_TRUE(made_);
    a_name_ = a_name;
    a_ = PeerIn(ns_a_, env_a);
    b_ = PeerIn(ns_b_, env_b, b_log_);
    ASSERT_EQ(a_->Command("init " + a_name_), "ok");
    ASSERT_EQ(b_->Command("init " + paths_.at(0).ip_b), "ok");
    auto buf = a_->Ok("alloc " + std::to_string(len));
    ASSERT_EQ(buf.size(), 2u);
    remote_ = std::stoull(buf[1]);
    ASSERT_EQ(a_->Ok("reg 0").size(), 1u);
    ASSERT_EQ(b_->Ok("alloc " + std::to_string(len)).size(), 2u);
    ASSERT_EQ(b_->Ok("reg 0").size(), 1u);
    ASSERT_EQ(b_->Command("connect " + a_name_ + " " + std::to_string(connect_ms), connect_ms + 10000), "ok");
    auto lane = b_->Ok("lane " + a_name_);
    ASSERT_EQ(lane.size(), 2u);
    ASSERT_EQ(lane[0], "rdma") << "transports " << lane[1];
    transports_ = lane[1];
  }

  // An engine process (adxl_test_peer) in namespace `ns`; with `log` its
  // stderr (the engine's and the plugin's log) is appended to that file.
  std::unique_ptr<PeerProcess> PeerIn(const std::string &ns, const std::vector<std::string> &env = {},
                                      const std::string &log = "") {
    std::vector<std::string> prefix{"ip", "netns", "exec", ns};
    if (!log.empty()) prefix.insert(prefix.end(), {"sh", "-c", "exec \"$0\" 2>>" + log});
    return std::make_unique<PeerProcess>(env, prefix);
  }

  // Path i's root qdisc (empty: none): tbf at its rate.  burst: one GSO
  // super-packet (64 KiB) and then some, or tbf drops it; latency bounds the
  // queue, as a NIC's ring does.
  std::string PathQdisc(size_t i) const {
    const std::string rate = PathRateLimit(i);
    return rate.empty() ? "" : "tbf rate " + rate + " burst 256kb latency 20ms";
  }

  std::string ns_a_, ns_b_;
  std::vector<Path> paths_;
  bool made_ = false;
  // StartLinkedPair's engines (a test may make its own instead).
  std::unique_ptr<PeerProcess> a_, b_;
  std::string a_name_, transports_;
  std::string b_log_;  // set before StartLinkedPair: B's stderr goes there
  uint64_t remote_ = 0;
};

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_NETNS_FIXTURE_H_
