// MoverSet (plugin/ucx/core/mover.h): a registration goes through every
// mover in order, and a failure - a status or an exception - deregisters the
// movers done so far, last first, and no other.  The movers here record
// what is done to them; one of them fails on demand.
#include <gtest/gtest.h>

#include <memory>
#include <new>
#include <string>
#include <vector>

#include "adxl/plugin/adxl_plugin.h"
#include "core/mover.h"

namespace {

enum class Fail { kNo, kStatus, kThrow };

class RecordingMover final : public Mover {
 public:
  RecordingMover(std::string name, Fail fail, std::vector<std::string> *log)
      : name_(std::move(name)), fail_(fail), log_(log) {}
  int Register(void *, size_t, adxl_plugin_mem *) override {
    if (fail_ == Fail::kThrow) throw std::bad_alloc();
    if (fail_ == Fail::kStatus) return ADXL_PLUGIN_ERR_NO_RESOURCE;
    log_->push_back("reg " + name_);
    return ADXL_PLUGIN_OK;
  }
  void Deregister(adxl_plugin_mem *) override { log_->push_back("dereg " + name_); }
  // The data path is not MoverSet's: these tests never post.
  const char *name() const override { return name_.c_str(); }
  void Post(adxl_plugin_ep *, bool, const adxl_plugin_iov_t *, size_t, uint64_t, adxl_plugin_batch *) override {
    ADD_FAILURE() << "MoverSet posted";
  }
  void Cancel(adxl_plugin_ep *, bool) override { ADD_FAILURE() << "MoverSet canceled"; }
  bool EndpointFailed(adxl_plugin_ep *, int) override { return true; }
  std::string DescribeEndpoint(const adxl_plugin_ep *) const override { return name_; }
  std::string DescribeKey(const adxl_plugin_rkey *) const override { return name_; }

 private:
  std::string name_;
  Fail fail_;
  std::vector<std::string> *log_;
};

// A set of three movers "a", "b", "c", where the one named `failing` fails as `how`.
MoverSet MakeSet(const std::string &failing, Fail how, std::vector<std::string> *log) {
  MoverSet set;
  for (const char *name : {"a", "b", "c"}) {
    set.Add(std::make_unique<RecordingMover>(name, name == failing ? how : Fail::kNo, log));
  }
  return set;
}

char region[64];

TEST(MoverSet, RegistersWithEveryMoverInOrderAndDeregistersInReverse) {
  std::vector<std::string> log;
  MoverSet set = MakeSet("", Fail::kNo, &log);
  EXPECT_EQ(set.Register(region, sizeof(region), nullptr), ADXL_PLUGIN_OK);
  set.Deregister(nullptr);
  EXPECT_EQ(log, (std::vector<std::string>{"reg a", "reg b", "reg c", "dereg c", "dereg b", "dereg a"}));
}

TEST(MoverSet, AFailedMoverUndoesOnlyThoseBeforeItLastFirstAndItsStatusIsReturned) {
  std::vector<std::string> log;
  MoverSet set = MakeSet("c", Fail::kStatus, &log);
  EXPECT_EQ(set.Register(region, sizeof(region), nullptr), ADXL_PLUGIN_ERR_NO_RESOURCE);
  EXPECT_EQ(log, (std::vector<std::string>{"reg a", "reg b", "dereg b", "dereg a"}));
}

TEST(MoverSet, AFailureAtTheFirstMoverUndoesNothing) {
  std::vector<std::string> log;
  MoverSet set = MakeSet("a", Fail::kStatus, &log);
  EXPECT_EQ(set.Register(region, sizeof(region), nullptr), ADXL_PLUGIN_ERR_NO_RESOURCE);
  EXPECT_TRUE(log.empty());
}

TEST(MoverSet, AnExceptionUndoesThoseBeforeItAndPropagates) {
  std::vector<std::string> log;
  MoverSet set = MakeSet("b", Fail::kThrow, &log);
  EXPECT_THROW(set.Register(region, sizeof(region), nullptr), std::bad_alloc);
  EXPECT_EQ(log, (std::vector<std::string>{"reg a", "dereg a"}));
}

}  // namespace
