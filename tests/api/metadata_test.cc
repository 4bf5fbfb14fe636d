// Published metadata (include/adxl/adxl_ext.h): two engines in this process,
// linked over loopback.  What one publishes, the other receives with the
// handshake and again on every change; limits are refused with a status.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"
#include "mp_fixture.h"

using namespace adxl;
using namespace adxl_test;

namespace {

class MetadataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    owner_name_ = LoopbackName(FreePort());
    ASSERT_EQ(owner_.Initialize(owner_name_.c_str(), {}), SUCCESS);
    ASSERT_EQ(reader_.Initialize("127.0.0.1", {}), SUCCESS);
  }
  void TearDown() override {
    reader_.Finalize();
    owner_.Finalize();
  }
  // What the reader holds of `name` (no refresh).
  std::pair<std::string, uint64_t> Held(const std::string &name) {
    std::string blob;
    uint64_t version = 99;
    EXPECT_EQ(ext::GetPeerMetadata(reader_, owner_name_.c_str(), name.c_str(), blob, version), SUCCESS);
    return {blob, version};
  }

  AdxlEngine owner_, reader_;
  std::string owner_name_;
};

TEST_F(MetadataTest, PublishedBeforeConnectArrivesWithTheHandshake) {
  const std::string blob("cache table\0with nul", 20);
  ASSERT_EQ(ext::PublishMetadata(owner_, "caches", blob), SUCCESS);
  ASSERT_EQ(reader_.Connect(owner_name_.c_str(), 3000), SUCCESS);
  EXPECT_EQ(Held("caches"), std::make_pair(blob, uint64_t{1}));
  EXPECT_EQ(Held("never published"), std::make_pair(std::string(), uint64_t{0}));
}

TEST_F(MetadataTest, ChangesArePushedAndRefreshSeesThemAtOnce) {
  ASSERT_EQ(reader_.Connect(owner_name_.c_str(), 3000), SUCCESS);
  EXPECT_EQ(Held("caches").second, 0u);
  for (uint64_t v = 1; v <= 5; ++v) {
    const std::string blob(static_cast<size_t>(1000 * v), static_cast<char>('a' + v));
    ASSERT_EQ(ext::PublishMetadata(owner_, "caches", blob), SUCCESS);
    // With a refresh, the change is there when the call returns.
    std::string got;
    uint64_t version = 0;
    ASSERT_EQ(ext::GetPeerMetadata(reader_, owner_name_.c_str(), "caches", got, version, 1000), SUCCESS);
    EXPECT_EQ(version, v);
    EXPECT_EQ(got, blob);
  }
  // Without asking, the push arrives by itself.
  ASSERT_EQ(ext::PublishMetadata(owner_, "model", "llama"), SUCCESS);
  const auto t0 = std::chrono::steady_clock::now();
  while (Held("model").second == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(Held("model"), std::make_pair(std::string("llama"), uint64_t{1}));
}

TEST_F(MetadataTest, LimitsAreRefusedAndNothingPublishedIsLost) {
  ASSERT_EQ(ext::PublishMetadata(owner_, "keep", "kept"), SUCCESS);
  EXPECT_EQ(ext::PublishMetadata(owner_, "", "x"), PARAM_INVALID);
  EXPECT_EQ(ext::PublishMetadata(owner_, std::string(257, 'n').c_str(), "x"), PARAM_INVALID);
  EXPECT_EQ(ext::PublishMetadata(owner_, "big", std::string((1u << 20) + 1, 'b')), PARAM_INVALID);
  // 2 MiB in all: the third 1 MiB blob is one too many.
  ASSERT_EQ(ext::PublishMetadata(owner_, "m1", std::string(1u << 20, '1')), SUCCESS);
  EXPECT_EQ(ext::PublishMetadata(owner_, "m2", std::string(1u << 20, '2')), RESOURCE_EXHAUSTED);
  // Replacing a blob by a smaller one frees room.
  ASSERT_EQ(ext::PublishMetadata(owner_, "m1", "small"), SUCCESS);
  ASSERT_EQ(ext::PublishMetadata(owner_, "m2", std::string(1u << 20, '2')), SUCCESS);
  ASSERT_EQ(reader_.Connect(owner_name_.c_str(), 3000), SUCCESS);
  EXPECT_EQ(Held("keep"), std::make_pair(std::string("kept"), uint64_t{1}));
  EXPECT_EQ(Held("m1"), std::make_pair(std::string("small"), uint64_t{2}));
  EXPECT_EQ(Held("m2").first.size(), 1u << 20);
}

TEST_F(MetadataTest, WithoutALinkThereIsNothingToRead) {
  std::string blob;
  uint64_t version = 7;
  EXPECT_EQ(ext::GetPeerMetadata(reader_, owner_name_.c_str(), "caches", blob, version), NOT_CONNECTED);
  EXPECT_EQ(version, 0u);
  AdxlEngine never_initialized;
  EXPECT_EQ(ext::PublishMetadata(never_initialized, "caches", "x"), FAILED);
}

}  // namespace

// AwaitMetadataDelivered: once it returns, the linked reader holds the
// version published last (no refresh, no pause), 20 versions in turn; a name
// never published is PARAM_INVALID; before Initialize, FAILED.
TEST(MetadataAwait, WhenItReturnsEveryLinkedPeerHoldsTheLastVersion) {
  AdxlEngine owner, reader;
  EXPECT_EQ(ext::AwaitMetadataDelivered(owner, "caches"), FAILED);
  const std::string owner_name = LoopbackName(FreePort());
  ASSERT_EQ(owner.Initialize(owner_name.c_str(), {}), SUCCESS);
  ASSERT_EQ(reader.Initialize("127.0.0.1", {}), SUCCESS);
  EXPECT_EQ(ext::AwaitMetadataDelivered(owner, "caches"), PARAM_INVALID);
  ASSERT_EQ(ext::PublishMetadata(owner, "caches", "v0"), SUCCESS);
  EXPECT_EQ(ext::AwaitMetadataDelivered(owner, "caches"), SUCCESS) << "no peer linked: nothing to wait for";
  ASSERT_EQ(reader.Connect(owner_name.c_str(), 3000), SUCCESS);
  for (int v = 1; v <= 20; ++v) {
    const std::string blob = "v" + std::to_string(v);
    ASSERT_EQ(ext::PublishMetadata(owner, "caches", blob), SUCCESS);
    ASSERT_EQ(ext::AwaitMetadataDelivered(owner, "caches"), SUCCESS);
    std::string got;
    uint64_t version = 0;
    ASSERT_EQ(ext::GetPeerMetadata(reader, owner_name.c_str(), "caches", got, version), SUCCESS);
    EXPECT_EQ(got, blob) << "version " << v << " not held when the wait returned";
  }
  reader.Finalize();
  owner.Finalize();
}
