// A link's tables of what its peer pushed are bounded by the wire's limits
// (src/control/wire.h): at most kMaxRegions regions and kMaxMetadataEntries
// metadata names, which is more than any engine registers or publishes
// (adxl.MaxRegistrations is capped at kMaxRegions).  A peer that pushes more
// is refused, so that it cannot grow this side's memory (a key unpack per
// region, up to 1 MiB per metadata entry) without bound.  The regions' keys
// are real: the UCX plugin's own, unpacked on an endpoint to itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "control/wire.h"
#include "core/link.h"
#include "transport/plugin_loader.h"
#include "transport/transport.h"

namespace adxl {
namespace {

wire::Metadata Entry(const std::string &name, uint64_t version) { return wire::Metadata{name, version, "blob"}; }

TEST(LinkLimits, MetadataPastTheWireLimitIsRefusedAndKnownNamesStillUpdate) {
  Link link("peer:1");
  for (size_t i = 0; i < wire::kMaxMetadataEntries; ++i) {
    ASSERT_EQ(link.SetMetadata(Entry("m" + std::to_string(i), 1)), SUCCESS) << i;
  }
  EXPECT_EQ(link.SetMetadata(Entry("one-too-many", 1)), RESOURCE_EXHAUSTED);
  std::string blob;
  uint64_t version = 0;
  link.GetMetadata("one-too-many", &blob, &version);
  EXPECT_EQ(version, 0u) << "a refused entry was kept";
  // A name already known is an update, not a new entry.
  EXPECT_EQ(link.SetMetadata(wire::Metadata{"m0", 2, "newer"}), SUCCESS);
  link.GetMetadata("m0", &blob, &version);
  EXPECT_EQ(version, 2u);
  EXPECT_EQ(blob, "newer");
}

TEST(LinkLimits, RegionsPastTheWireLimitAreRefusedAndKnownOnesStillAnswer) {
  std::string why;
  auto lib = PluginLibrary::LoadFile(ADXL_UCX_PLUGIN_PATH, ADXL_PLUGIN_ABI_VERSION, &why);
  ASSERT_NE(lib, nullptr) << why;
  std::shared_ptr<Transport> t = Transport::Open(std::move(lib), {}, &why);
  ASSERT_NE(t, nullptr) << why;
  auto link = std::make_shared<Link>("peer:1");
  ASSERT_EQ(Endpoint::Create(t, t->address(), ADXL_PLUGIN_LANE_RDMA, &link->endpoint), ADXL_PLUGIN_OK);
  std::vector<char> buf(4096);
  std::unique_ptr<TransportMem> mem;
  ASSERT_EQ(TransportMem::Register(t, buf.data(), buf.size(), ADXL_PLUGIN_MEM_HOST, &mem), ADXL_PLUGIN_OK);

  // The peer's regions as a hostile peer would name them: one real key, many
  // ids at addresses that do not overlap.
  constexpr uint64_t kBase = 1ull << 40, kLen = 4096;
  auto region = [&](uint64_t id) { return wire::Region{id, kBase + id * kLen, kLen, MEM_HOST, mem->packed_key()}; };
  for (uint64_t id = 0; id < wire::kMaxRegions; ++id) {
    ASSERT_EQ(link->AddRegion(region(id)), SUCCESS) << id;
  }
  EXPECT_EQ(link->AddRegion(region(wire::kMaxRegions)), RESOURCE_EXHAUSTED);
  EXPECT_EQ(link->region_count(), wire::kMaxRegions);
  EXPECT_FALSE(link->CoversRemote(kBase + wire::kMaxRegions * kLen, kLen)) << "a refused region was kept";
  // One the link knows (a handshake's region pushed again) is no new one.
  EXPECT_EQ(link->AddRegion(region(7)), SUCCESS);
  // A withdrawal makes room again.
  ASSERT_NE(link->WithdrawRegion(3), nullptr);
  EXPECT_EQ(link->AddRegion(region(wire::kMaxRegions)), SUCCESS);
  link->Fail("test over");
}

}  // namespace
}  // namespace adxl
