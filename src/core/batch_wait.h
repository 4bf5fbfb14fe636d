// BatchWait: how the data path waits for a batch it posted (TransferSync,
// the buffer pool's chunks): test the batch, and while it runs, check the
// caller's deadline and drive the transport one step.
//
// A step drives the transport (Transport::Progress), and once the transport
// has been idle for kSpinFor sleeps kIdleSleep between steps instead.  The
// plugin's own progress thread completes the batch anyway; callers that spin
// flat out (several TransferSync threads) would take the CPU that thread and
// the peer need, which on a small machine turns a millisecond transfer into
// a second.  Spinning first keeps small transfers fast.
//
// One BatchWait per call, for all the batches the call waits for (the idle
// state carries over from one to the next).  Not thread-safe; holds no lock,
// and the caller holds none while it waits.
#ifndef ADXL_SRC_CORE_BATCH_WAIT_H_
#define ADXL_SRC_CORE_BATCH_WAIT_H_

#include <chrono>

#include "control/socket.h"
#include "transport/transport.h"

namespace adxl {

class BatchWait {
 public:
  // How long a waiter spins on an idle transport before it sleeps between
  // steps: about as long as the plugin's progress thread lingers.
  static constexpr auto kSpinFor = std::chrono::microseconds(200);
  // The sleep between steps once idle: short beside any transfer's deadline.
  static constexpr auto kIdleSleep = std::chrono::microseconds(20);

  enum class Outcome {
    kEnded,     // the batch ended; *rc is its final status
    kRunning,   // still running: one transport step was taken (Step only)
    kTimedOut,  // still running at the deadline
  };

  // `transport` must outlive this object.
  explicit BatchWait(const Transport &transport) : transport_(transport) {}

  // Tests `batch` once; while it runs and `deadline` has not passed, drives
  // the transport one step.  For callers with other work between steps.
  Outcome Step(const Batch &batch, Clock::time_point deadline, int *rc);
  // Steps until the batch ended or `deadline` passed; never kRunning.
  Outcome Until(const Batch &batch, Clock::time_point deadline, int *rc);

 private:
  void ProgressOnce();

  const Transport &transport_;
  Clock::time_point idle_since_{};
  bool idle_ = false;
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_BATCH_WAIT_H_
