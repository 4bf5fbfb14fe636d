// Striping of one batch over the network paths of a link (net_path.h):
// which operations, or pieces of them, each path moves.  No UCX here.
//
// A batch of at least kStripeMinBytes is cut into one slice per path, the
// slices' byte totals in proportion to the paths' weights (their measured
// rates, PathRates), each weight floored at kMinShare of the total so that
// a path that measured slow still moves enough to be measured again.  The
// cut keeps the batch's order: slice 0 takes the first bytes, slice 1 the
// next...; an operation that straddles a cut is split into two pieces, the
// cut moved to a multiple of kCutAlign inside it (or to the operation's
// edge when that is nearer than kCutAlign).  A smaller batch stays whole on
// one path: striping it would add a message per path and save nothing.
//
// PathRates keeps each path's rate as the bytes/s of its recent slices (an
// exponentially weighted average, updated by the slice's completion).
//
// Thread-safety: StripeOps is a pure function.  PathRates: Record and
// Weights from any thread (relaxed atomics: a weight read while another
// thread records is one sample stale, which striping tolerates).
#ifndef ADXL_PLUGIN_UCX_PATHS_STRIPE_H_
#define ADXL_PLUGIN_UCX_PATHS_STRIPE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace stripe {

// Batches smaller than this stay on one path.
constexpr size_t kStripeMinBytes = size_t{1} << 20;
// Where a cut inside an operation may fall (offsets from its start).
constexpr size_t kCutAlign = 4096;
// The least share of a striped batch a path is given.
constexpr double kMinShare = 0.05;
// Slices smaller than this do not update a path's rate: their time is the
// round trip, not the path's bandwidth.
constexpr size_t kMinRateSampleBytes = 256 * 1024;

// Bytes [offset, offset + len) of operation `op` of the batch.
struct Piece {
  size_t op;
  size_t offset;
  size_t len;
};

// Cuts a batch of operations of lens[0..count) bytes into weights.size()
// slices as described above; slice i for path i (possibly empty), its
// pieces in the batch's order.  weights: one per path, >= 0; all zero means
// equal.  With fewer than two weights, or a batch under kStripeMinBytes,
// everything is slice `whole_on` (< weights.size()).  A zero-length
// operation is one piece of length 0, where it stands in the order.
std::vector<std::vector<Piece>> StripeOps(const size_t *lens, size_t count, const std::vector<double> &weights,
                                          size_t whole_on);

class PathRates {
 public:
  explicit PathRates(size_t paths) : rates_(paths) {
    for (auto &r : rates_) r.store(0.0, std::memory_order_relaxed);
  }
  size_t paths() const { return rates_.size(); }
  // Path `i` moved `bytes` in `seconds`.
  void Record(size_t i, size_t bytes, double seconds);
  // The current weights, one per path (bytes/s; 0 where nothing was measured
  // yet: every path then weighs the mean of those measured, or all are 0).
  std::vector<double> Weights() const;

 private:
  std::vector<std::atomic<double>> rates_;
};

}  // namespace stripe

#endif  // ADXL_PLUGIN_UCX_PATHS_STRIPE_H_
