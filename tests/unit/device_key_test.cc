// A peer's device-memory key on a side that cannot move device memory, over
// the UCX plugin to itself on the RDMA lane (active messages):
//  - the key unpacks (the link keeps its host regions) and describes itself
//    as "unreachable";
//  - a batch that touches it fails with ERR_UNSUPPORTED and moves nothing,
//    also when its other operations are host regions: the post finds device
//    memory once, for the whole batch (ucx_bind.cc, PostBound), and hands it
//    to the RMA mover's device entry, which does not look again;
//  - host-only batches on the same endpoint still move.
// The peer's key is a real packed key of a host region here, marked as
// device memory in its blob (core/ucx_blob.h): what a peer with a GPU sends.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/ucx_blob.h"
#include "transport/plugin_loader.h"
#include "transport/transport.h"

namespace adxl {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kLen = 64 << 10;

class DeviceKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto lib = PluginLibrary::LoadFile(ADXL_UCX_PLUGIN_PATH, ADXL_PLUGIN_ABI_VERSION, &why);
    ASSERT_NE(lib, nullptr) << why;
    t_ = Transport::Open(std::move(lib), {{"rdma_protocol", "am"}}, &why);
    ASSERT_NE(t_, nullptr) << why;
    if (t_->device_memory()) GTEST_SKIP() << "this host moves device memory: the key would be reachable";
    ASSERT_EQ(Endpoint::Create(t_, t_->address(), ADXL_PLUGIN_LANE_RDMA, &ep_), ADXL_PLUGIN_OK);
    ASSERT_EQ(TransportMem::Register(t_, src_.data(), kLen, ADXL_PLUGIN_MEM_HOST, &src_mem_), ADXL_PLUGIN_OK);
    ASSERT_EQ(TransportMem::Register(t_, host_.data(), kLen, ADXL_PLUGIN_MEM_HOST, &host_mem_), ADXL_PLUGIN_OK);
    ASSERT_EQ(TransportMem::Register(t_, dev_.data(), kLen, ADXL_PLUGIN_MEM_HOST, &dev_mem_), ADXL_PLUGIN_OK);
    ASSERT_EQ(RemoteKey::Unpack(ep_, host_mem_->packed_key(), &host_key_), ADXL_PLUGIN_OK);
    // dev_'s key as a peer's device region.
    ucx_blob::Key k;
    ASSERT_TRUE(ucx_blob::ParseKey(dev_mem_->packed_key().data(), dev_mem_->packed_key().size(), &k));
    k.flags |= ucx_blob::Key::kDevice;
    std::string blob;
    ASSERT_TRUE(ucx_blob::EncodeKey(k, &blob));
    ASSERT_EQ(RemoteKey::Unpack(ep_, blob, &dev_key_), ADXL_PLUGIN_OK);
  }

  adxl_plugin_iov_t Op(const RemoteKey &key, const std::vector<char> &dst, size_t off, size_t len) const {
    return {src_mem_->get(), reinterpret_cast<uintptr_t>(src_.data() + off), key.get(),
            reinterpret_cast<uintptr_t>(dst.data() + off), len};
  }
  // WRITEs `iov`; the batch's final status.
  int Write(const std::vector<adxl_plugin_iov_t> &iov) {
    std::unique_ptr<Batch> batch;
    int rc = ep_->Post(ADXL_PLUGIN_PUT, iov.data(), iov.size(), Clock::now() + std::chrono::seconds(5), &batch);
    if (rc != ADXL_PLUGIN_OK) return rc;
    const auto until = Clock::now() + std::chrono::seconds(10);
    while ((rc = batch->Test()) == ADXL_PLUGIN_IN_PROGRESS && Clock::now() < until) t_->Progress();
    return rc;
  }

  std::shared_ptr<Transport> t_;
  std::shared_ptr<Endpoint> ep_;
  std::vector<char> src_ = std::vector<char>(kLen, 's');
  std::vector<char> host_ = std::vector<char>(kLen, 'h');
  std::vector<char> dev_ = std::vector<char>(kLen, 'd');
  std::unique_ptr<TransportMem> src_mem_, host_mem_, dev_mem_;
  std::unique_ptr<RemoteKey> host_key_, dev_key_;
};

TEST_F(DeviceKeyTest, TheKeyUnpacksAndIsUnreachable) {
  EXPECT_EQ(dev_key_->Describe(), "unreachable");
  EXPECT_EQ(host_key_->Describe(), "ucp");
}

TEST_F(DeviceKeyTest, ABatchOnItFailsUnsupportedAndMovesNothing) {
  EXPECT_EQ(Write({Op(*dev_key_, dev_, 0, kLen)}), ADXL_PLUGIN_ERR_UNSUPPORTED);
  EXPECT_EQ(std::string(dev_.data(), kLen), std::string(kLen, 'd'));
}

// The device operation last: the whole batch is refused before any of its
// host operations moves, wherever the device one sits.
TEST_F(DeviceKeyTest, ABatchMixingItWithHostRegionsFailsWhole) {
  EXPECT_EQ(Write({Op(*host_key_, host_, 0, kLen / 2), Op(*dev_key_, dev_, 0, kLen / 2)}),
            ADXL_PLUGIN_ERR_UNSUPPORTED);
  EXPECT_EQ(Write({Op(*dev_key_, dev_, 0, kLen / 2), Op(*host_key_, host_, kLen / 2, kLen / 2)}),
            ADXL_PLUGIN_ERR_UNSUPPORTED);
  EXPECT_EQ(std::string(host_.data(), kLen), std::string(kLen, 'h')) << "a host operation of a refused batch moved";
  EXPECT_EQ(std::string(dev_.data(), kLen), std::string(kLen, 'd'));
}

TEST_F(DeviceKeyTest, HostBatchesOnTheSameEndpointStillMove) {
  EXPECT_EQ(Write({Op(*dev_key_, dev_, 0, kLen)}), ADXL_PLUGIN_ERR_UNSUPPORTED);
  EXPECT_EQ(Write({Op(*host_key_, host_, 0, kLen)}), ADXL_PLUGIN_OK);
  EXPECT_EQ(memcmp(host_.data(), src_.data(), kLen), 0);
}

}  // namespace
}  // namespace adxl
