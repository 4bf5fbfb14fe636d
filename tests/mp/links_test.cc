// docs/contract.md §5 (links) with a real peer process on loopback.
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <csignal>
#include <map>
#include <thread>

#include "adxl/adxl_ext.h"
#include "mp_fixture.h"

using namespace adxl;
using namespace adxl_test;

namespace {

class LinksTest : public PeerTest {};

// Which path each of the peer's registrations takes (adxl_ext.h
// GetLinkRegions), found by the engines from the memory itself, no option:
// private memory over batched cross-memory copies, a /dev/shm file and a
// memfd mapped directly.  Data moves correctly both ways on each, at odd
// offsets and sizes.
TEST_F(LinksTest, EachPeerRegionTakesThePathItsMemoryAllows) {
  constexpr size_t kLen = 1u << 20;
  const struct {
    const char *alloc;
    const char *path;
  } kinds[] = {{"alloc", "cma"}, {"shm", "mapped/shm"}, {"memfd", "mapped/memfd"}};
  std::map<uint64_t, std::string> want = {{remote_, "cma"}};  // addr -> path
  std::vector<std::pair<std::string, uint64_t>> buffers;       // the peer's index, address
  for (const auto &k : kinds) {
    auto a = peer_->Ok(std::string(k.alloc) + " " + std::to_string(kLen));
    ASSERT_EQ(a.size(), 2u) << k.alloc;
    ASSERT_EQ(peer_->Ok("reg " + a[0]).size(), 1u) << k.alloc;
    want[std::stoull(a[1])] = k.path;
    buffers.emplace_back(a[0], std::stoull(a[1]));
  }
  std::vector<ext::LinkRegion> regions;
  EXPECT_EQ(ext::GetLinkRegions(engine_, peer_name_.c_str(), regions), NOT_CONNECTED);
  ASSERT_EQ(Connect(), SUCCESS);
  ASSERT_EQ(ext::GetLinkRegions(engine_, peer_name_.c_str(), regions), SUCCESS);
  ASSERT_EQ(regions.size(), want.size());
  for (size_t i = 0; i < regions.size(); ++i) {
    const ext::LinkRegion &r = regions[i];
    SCOPED_TRACE("region at " + std::to_string(r.addr));
    ASSERT_EQ(want.count(r.addr), 1u);
    EXPECT_EQ(r.path, want[r.addr]);
    EXPECT_EQ(r.len, r.addr == remote_ ? kRemoteSize : kLen);
    EXPECT_EQ(r.mem_type, MEM_HOST);
    if (i > 0) {
      EXPECT_GT(r.addr, regions[i - 1].addr) << "not in address order";
    }
  }
  uint64_t seed = 10;
  for (const auto &b : buffers) {
    SCOPED_TRACE(want[b.second]);
    const std::vector<TransferOpDesc> descs = {{local_.addr() + 3, b.second + 4097, 77777},
                                               {local_.addr() + 200001, b.second + 5, 4091}};
    FillPattern(local_.data(), kLen, seed);
    ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), WRITE, descs, 5000), SUCCESS);
    for (const auto &d : descs) {
      auto h = peer_->Ok("hash " + b.first + " " + std::to_string(d.remote_addr - b.second) + " " +
                         std::to_string(d.len));
      ASSERT_EQ(h.size(), 1u);
      EXPECT_EQ(std::stoull(h[0]), Hash(reinterpret_cast<const uint8_t *>(d.local_addr), d.len));
    }
    ASSERT_EQ(peer_->Command("fill " + b.first + " " + std::to_string(seed + 1)), "ok");
    ASSERT_EQ(engine_.TransferSync(peer_name_.c_str(), READ, descs, 5000), SUCCESS);
    for (const auto &d : descs) {
      EXPECT_EQ(Hash(reinterpret_cast<const uint8_t *>(d.local_addr), d.len),
                PatternHash(seed + 1, d.remote_addr - b.second, d.len));
    }
    seed += 2;
  }
  EXPECT_EQ(ext::GetLinkRegions(engine_, "127.0.0.1:1", regions), NOT_CONNECTED);
  EXPECT_TRUE(regions.empty());
}

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
  EXPECT_LT(used, ScaledMs(100)) << "the idle peer used " << used << " ms of CPU in 2 s";
}

}  // namespace
