// Striping of a batch over a link's network paths (stripe.h).
#include "paths/stripe.h"

#include <algorithm>
#include <numeric>

namespace stripe {
namespace {

// The weights as shares summing to 1, each at least kMinShare (when n
// shares of kMinShare fit), all equal when none is positive.
std::vector<double> Shares(const std::vector<double> &weights) {
  const size_t n = weights.size();
  std::vector<double> share(n, 1.0 / static_cast<double>(n));
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (!(sum > 0)) return share;
  const double floor = static_cast<double>(n) * kMinShare < 1.0 ? kMinShare : 0.0;
  // Floor the small ones, then scale the rest into what is left.
  double floored = 0, rest = 0;
  for (size_t i = 0; i < n; ++i) {
    share[i] = std::max(weights[i], 0.0) / sum;
    if (share[i] < floor) {
      floored += floor;
    } else {
      rest += share[i];
    }
  }
  for (size_t i = 0; i < n; ++i) {
    share[i] = share[i] < floor ? floor : share[i] * (1.0 - floored) / rest;
  }
  return share;
}

}  // namespace

std::vector<std::vector<Piece>> StripeOps(const size_t *lens, size_t count, const std::vector<double> &weights,
                                          size_t whole_on) {
  const size_t n = std::max<size_t>(weights.size(), 1);
  std::vector<std::vector<Piece>> slices(n);
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += lens[i];
  if (n < 2 || total < kStripeMinBytes) {
    std::vector<Piece> &all = slices[std::min(whole_on, n - 1)];
    for (size_t i = 0; i < count; ++i) all.push_back({i, 0, lens[i]});
    return slices;
  }
  const std::vector<double> share = Shares(weights);
  // Cut points in bytes from the batch's start: slice s ends at cut[s].
  std::vector<size_t> cut(n);
  double acc = 0;
  for (size_t s = 0; s + 1 < n; ++s) {
    acc += share[s];
    cut[s] = static_cast<size_t>(acc * static_cast<double>(total));
  }
  cut[n - 1] = total;
  size_t s = 0;    // the slice being filled
  size_t at = 0;   // bytes of the batch before ops[i]
  for (size_t i = 0; i < count; ++i) {
    const size_t len = lens[i];
    size_t done = 0;  // bytes of op i already given to a slice
    if (len == 0) slices[s].push_back({i, 0, 0});  // kept, where it stands in the order
    while (done < len) {
      while (s + 1 < n && cut[s] <= at + done) ++s;
      size_t end = len;  // this piece ends at offset `end` of op i
      bool cut_inside = false;
      if (s + 1 < n && at + len > cut[s]) {
        // Slice s ends inside this operation: at an aligned offset, or at
        // the operation's end when that is within kCutAlign.
        end = (cut[s] - at + kCutAlign / 2) / kCutAlign * kCutAlign;
        if (end + kCutAlign > len) end = len;
        cut_inside = true;
      }
      if (end > done) {
        slices[s].push_back({i, done, end - done});
        done = end;
      }
      if (cut_inside) ++s;  // slice s is complete
    }
    at += len;
  }
  return slices;
}

void PathRates::Record(size_t i, size_t bytes, double seconds) {
  if (i >= rates_.size() || bytes < kMinRateSampleBytes || !(seconds > 0)) return;
  const double sample = static_cast<double>(bytes) / seconds;
  const double old = rates_[i].load(std::memory_order_relaxed);
  // Half the weight to the newest sample: a path whose rate changed (a
  // competing flow came or went) is followed within a few batches.
  rates_[i].store(old > 0 ? (old + sample) / 2 : sample, std::memory_order_relaxed);
}

std::vector<double> PathRates::Weights() const {
  std::vector<double> w(rates_.size());
  double sum = 0;
  size_t measured = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = rates_[i].load(std::memory_order_relaxed);
    if (w[i] > 0) {
      sum += w[i];
      ++measured;
    }
  }
  if (measured == 0) return w;
  for (double &x : w) {
    if (!(x > 0)) x = sum / static_cast<double>(measured);
  }
  return w;
}

}  // namespace stripe
