// Posting with a deadline (adxl_plugin_ops_t::post_by, Endpoint::Post with a
// deadline), over the UCX plugin to itself on the RDMA lane:
//  - a plugin table built before post_by (shorter struct_size) still loads,
//    post_by reads as NULL, and a post with a deadline falls back to post;
//  - the UCX plugin provides post_by; a WRITE with time left lands; a WRITE
//    whose deadline has passed when its data arrives is dropped by the
//    target: the batch fails and the destination keeps its bytes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "transport/plugin_loader.h"
#include "transport/transport.h"

namespace adxl {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kLen = 256 << 10;  // one AM message, rendezvous

struct Loopback {
  std::shared_ptr<Transport> t;
  std::shared_ptr<Endpoint> ep;
  std::vector<char> src = std::vector<char>(kLen, 's');
  std::vector<char> dst = std::vector<char>(kLen, 'd');
  std::unique_ptr<TransportMem> src_mem, dst_mem;
  std::unique_ptr<RemoteKey> dst_key;

  void Start(const char *plugin_path) {
    std::string why;
    auto lib = PluginLibrary::LoadFile(plugin_path, ADXL_PLUGIN_ABI_VERSION, &why);
    ASSERT_NE(lib, nullptr) << why;
    // The AM lane, where the target enforces the deadline (the default
    // where no RDMA device exists).
    t = Transport::Open(std::move(lib), {{"rdma_protocol", "am"}}, &why);
    ASSERT_NE(t, nullptr) << why;
    ASSERT_EQ(Endpoint::Create(t, t->address(), ADXL_PLUGIN_LANE_RDMA, &ep), ADXL_PLUGIN_OK);
    ASSERT_EQ(TransportMem::Register(t, src.data(), kLen, ADXL_PLUGIN_MEM_HOST, &src_mem), ADXL_PLUGIN_OK);
    ASSERT_EQ(TransportMem::Register(t, dst.data(), kLen, ADXL_PLUGIN_MEM_HOST, &dst_mem), ADXL_PLUGIN_OK);
    ASSERT_EQ(RemoteKey::Unpack(ep, dst_mem->packed_key(), &dst_key), ADXL_PLUGIN_OK);
  }
  // WRITEs src to dst with `deadline`; the batch's final status.
  int Write(Clock::time_point deadline) {
    adxl_plugin_iov_t iov{src_mem->get(), reinterpret_cast<uintptr_t>(src.data()), dst_key->get(),
                          reinterpret_cast<uintptr_t>(dst.data()), kLen};
    std::unique_ptr<Batch> batch;
    int rc = ep->Post(ADXL_PLUGIN_PUT, &iov, 1, deadline, &batch);
    if (rc != ADXL_PLUGIN_OK) return rc;
    const auto until = Clock::now() + std::chrono::seconds(10);
    while ((rc = batch->Test()) == ADXL_PLUGIN_IN_PROGRESS && Clock::now() < until) t->Progress();
    return rc;
  }
};

TEST(PostDeadline, APluginTableWithoutPostByLoadsAndPostsWithADeadline) {
  Loopback l;
  ASSERT_NO_FATAL_FAILURE(l.Start(ADXL_SHORT_TABLE_PLUGIN_PATH));
  EXPECT_EQ(l.t->ops().post_by, nullptr) << "read past the plugin's struct_size";
  EXPECT_EQ(l.Write(Clock::now() + std::chrono::seconds(5)), ADXL_PLUGIN_OK);
  EXPECT_EQ(memcmp(l.src.data(), l.dst.data(), kLen), 0);
}

TEST(PostDeadline, AWriteWithTimeLeftLands) {
  Loopback l;
  ASSERT_NO_FATAL_FAILURE(l.Start(ADXL_UCX_PLUGIN_PATH));
  ASSERT_NE(l.t->ops().post_by, nullptr);
  EXPECT_EQ(l.Write(Clock::now() + std::chrono::seconds(5)), ADXL_PLUGIN_OK);
  EXPECT_EQ(memcmp(l.src.data(), l.dst.data(), kLen), 0);
}

// The budget sent is 1 us (the deadline passed already): the target's
// deadline passes before the rendezvous data can arrive.
TEST(PostDeadline, AWriteWhoseDataComesAfterTheDeadlineIsDropped) {
  Loopback l;
  ASSERT_NO_FATAL_FAILURE(l.Start(ADXL_UCX_PLUGIN_PATH));
  EXPECT_NE(l.Write(Clock::now() - std::chrono::milliseconds(1)), ADXL_PLUGIN_OK);
  EXPECT_EQ(std::string(l.dst.data(), kLen), std::string(kLen, 'd')) << "bytes landed after the deadline";
}

}  // namespace
}  // namespace adxl
