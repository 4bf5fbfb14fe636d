// BatchWait (src/core/batch_wait.h): the data path's one wait for a posted
// batch, over the UCX plugin talking to itself (RDMA lane, no peer process).
#include "core/batch_wait.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "transport/plugin_loader.h"

namespace adxl {
namespace {

struct SelfLink {
  std::shared_ptr<Transport> t;
  std::shared_ptr<Endpoint> ep;
  std::vector<char> src = std::vector<char>(1 << 20, 'a');
  std::vector<char> dst = std::vector<char>(1 << 20, 'b');
  std::unique_ptr<TransportMem> src_mem, dst_mem;
  std::unique_ptr<RemoteKey> dst_key;

  bool Start() {
    std::string why;
    auto lib = PluginLibrary::LoadFile(ADXL_UCX_PLUGIN_PATH, ADXL_PLUGIN_ABI_VERSION, &why);
    if (lib == nullptr) return false;
    t = Transport::Open(std::move(lib), {}, &why);
    if (t == nullptr) return false;
    if (Endpoint::Create(t, t->address(), ADXL_PLUGIN_LANE_RDMA, &ep) != ADXL_PLUGIN_OK) return false;
    if (TransportMem::Register(t, src.data(), src.size(), ADXL_PLUGIN_MEM_HOST, &src_mem) != ADXL_PLUGIN_OK ||
        TransportMem::Register(t, dst.data(), dst.size(), ADXL_PLUGIN_MEM_HOST, &dst_mem) != ADXL_PLUGIN_OK) {
      return false;
    }
    return RemoteKey::Unpack(ep, dst_mem->packed_key(), &dst_key) == ADXL_PLUGIN_OK;
  }
  // Writes all of src into dst.
  int PostCopy(std::unique_ptr<Batch> *batch) {
    adxl_plugin_iov_t iov{src_mem->get(), reinterpret_cast<uintptr_t>(src.data()), dst_key->get(),
                          reinterpret_cast<uintptr_t>(dst.data()), src.size()};
    return ep->Post(ADXL_PLUGIN_PUT, &iov, 1, batch);
  }
};

// Until returns once the batch ended, with its final status, and the data
// is in place by then.
TEST(BatchWait, UntilReturnsTheFinalStatusOnceTheBatchEnded) {
  SelfLink l;
  ASSERT_TRUE(l.Start());
  std::unique_ptr<Batch> batch;
  ASSERT_EQ(l.PostCopy(&batch), ADXL_PLUGIN_OK);
  BatchWait wait(*l.t);
  int rc = -1;
  EXPECT_EQ(wait.Until(*batch, Clock::now() + std::chrono::seconds(10), &rc), BatchWait::Outcome::kEnded);
  EXPECT_EQ(rc, ADXL_PLUGIN_OK);
  EXPECT_EQ(memcmp(l.src.data(), l.dst.data(), l.src.size()), 0);
}

// A batch that ended counts as ended even when the deadline has passed:
// the batch is tested before the deadline is (a call whose last batch ended
// just at its deadline is not a TIMEOUT, which would fail the link).
TEST(BatchWait, AnEndedBatchIsNotTimedOutPastTheDeadline) {
  SelfLink l;
  ASSERT_TRUE(l.Start());
  std::unique_ptr<Batch> batch;
  ASSERT_EQ(l.PostCopy(&batch), ADXL_PLUGIN_OK);
  BatchWait wait(*l.t);
  int rc = -1;
  ASSERT_EQ(wait.Until(*batch, Clock::now() + std::chrono::seconds(10), &rc), BatchWait::Outcome::kEnded);
  const Clock::time_point past = Clock::now() - std::chrono::seconds(1);
  rc = -1;
  EXPECT_EQ(wait.Step(*batch, past, &rc), BatchWait::Outcome::kEnded);
  EXPECT_EQ(rc, ADXL_PLUGIN_OK);
  rc = -1;
  EXPECT_EQ(wait.Until(*batch, past, &rc), BatchWait::Outcome::kEnded);
  EXPECT_EQ(rc, ADXL_PLUGIN_OK);
}

}  // namespace
}  // namespace adxl
