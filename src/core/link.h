// Link: this engine's directional connection to one peer (docs/contract.md §5).
//
// A link exists on the side that called Connect.  It owns the control
// connection (client end), the transport endpoint, and the peer's advertised
// regions with their unpacked keys.  State moves CONNECTING -> CONNECTED and
// then to FAILED (peer died, heartbeat lost, transfer timed out) or is
// removed by Disconnect; a failed link answers every transfer FAILED until
// it is disconnected and connected again.
//
// Thread-safety: any thread.  `conn`, `endpoint`, `peer_node_id` and
// `transports` are written once by Connect before the link is published as
// connected, and only read after.  Locks:
//  - regions_mu_ guards the peer's region table and its published metadata:
//    shared for readers (a transfer's plan through RegionsView, the
//    CoversRemote checks, the extension API), exclusive for the control
//    thread that applies the peer's changes.  Taken last: a plan takes it
//    inside Registrar::mu_ (Registrar::RegistryView, then RegionsView; the
//    order is declared with ADXL_ACQUIRED_AFTER, so clang checks it); it
//    is held across no call out of the link, nothing that blocks, and no
//    transport call (keys are unpacked before it is taken).
//  - state_mu_ (the wait for the outcome of Connect) is a leaf.
// The two are never held together.  Fail and Shutdown cancel the endpoint,
// which may wait for copies in progress: callers keep them off the control
// thread.
#ifndef ADXL_SRC_CORE_LINK_H_
#define ADXL_SRC_CORE_LINK_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adxl/adxl_ext.h"
#include "adxl/adxl_types.h"
#include "common/thread_annotations.h"
#include "control/control.h"
#include "control/wire.h"
#include "core/link_stats.h"
#include "core/registrar.h"  // the lock order: regions_mu_ after Registrar::mu_
#include "core/remote_region.h"
#include "transport/transport.h"

namespace adxl {

enum class LinkState { kConnecting, kConnected, kFailed };

class Link {
 public:
  using Table = RemoteRegionTable;

  // `stats`: the peer's counters (LinkStatsBook), shared with earlier and
  // later links to the same peer; fresh ones when none are given.
  explicit Link(std::string remote, std::shared_ptr<LinkCounters> stats = std::make_shared<LinkCounters>())
      : stats(std::move(stats)), remote_(std::move(remote)) {}

  const std::string &remote() const { return remote_; }
  LinkState state() const { return state_.load(); }
  bool disconnected() const { return disconnected_.load(); }

  // Set once, by Connect, before the link is published as connected.
  std::shared_ptr<ControlConn> conn;
  std::shared_ptr<Endpoint> endpoint;
  std::string peer_node_id;
  std::string transports;

  // ---- The peer's regions.
  // Adds a region the peer advertised (handshake or RegionAdd): validates
  // it, unpacks its key on `endpoint` (outside the lock) and inserts it.
  // SUCCESS also when it is known already; PARAM_INVALID for an invalid or
  // overlapping region, RESOURCE_EXHAUSTED past wire::kMaxRegions regions
  // (more than any engine may register), FAILED when the key does not unpack
  // (each logged).
  Status AddRegion(const wire::Region &r) ADXL_EXCLUDES(regions_mu_);
  // Removes a region the peer withdrew; returns it (null when unknown) so
  // that the caller can acknowledge once the last transfer lets go of it.
  std::shared_ptr<RemoteRegion> WithdrawRegion(uint64_t id) ADXL_EXCLUDES(regions_mu_);
  // Refresh on miss: asks the peer for its current region table (one
  // TableRequest; the peer sends its regions, then the Ack) and waits until
  // they are applied or `deadline`.  False when no answer came in time.
  bool RefreshRegions(Clock::time_point deadline);
  // Before a transfer naming remote ranges this link's table lacks is
  // refused (the peer registered them after our table was made): true when
  // every remote range of `descs` is in the table now (the peer's push
  // arrived meanwhile), else whether a refresh (RefreshRegions) answered
  // before `deadline` or kRefreshOnMissWait, whichever comes first.  True
  // means: look the ranges up once more.
  bool RefreshOnMiss(const std::vector<TransferOpDesc> &descs, Clock::time_point deadline)
      ADXL_EXCLUDES(regions_mu_);
  // How long RefreshOnMiss waits for the peer's table.  A live peer answers
  // in well under a millisecond; one that has not answered in 200 ms is
  // stopped or overloaded, and the transfer is refused (PARAM_INVALID)
  // rather than spending the rest of its deadline on the question.
  static constexpr std::chrono::milliseconds kRefreshOnMissWait{200};
  // Whether every remote range of `descs` lies in regions the peer registered.
  bool CoversRemote(const std::vector<TransferOpDesc> &descs) const ADXL_EXCLUDES(regions_mu_);
  // Whether [addr, addr + len) lies in regions the peer registered.
  bool CoversRemote(uint64_t addr, uint64_t len) const ADXL_EXCLUDES(regions_mu_);
  // A read-only view of the peer's region table for as long as it lives
  // (regions_mu_ shared; the analysis sees it held): what a transfer plans
  // against (transfer_plan.h).  Region changes from the peer wait until it
  // goes, so keep it to the plan; taken after Registrar::RegistryView.
  class ADXL_SCOPED_CAPABILITY RegionsView : public ReaderLock {
   public:
    explicit RegionsView(const Link &link) ADXL_ACQUIRE_SHARED(link.regions_mu_)
        : ReaderLock(&link.regions_mu_), table_(&link.regions_) {}
    ~RegionsView() ADXL_RELEASE_GENERIC() = default;  // ReaderLock unlocks; the analysis needs it said here
    // Valid while the view lives.
    const Table &table() const { return *table_; }

   private:
    const Table *table_;
  };
  size_t region_count() const ADXL_EXCLUDES(regions_mu_);
  // The peer's regions in address order, each with the path transfers to it
  // take (adxl_ext.h GetLinkRegions).
  std::vector<ext::LinkRegion> Regions() const ADXL_EXCLUDES(regions_mu_);

  // ---- The peer's published metadata (adxl_ext.h).
  // Keeps `entry` unless a newer version of its name is known already.
  // RESOURCE_EXHAUSTED (logged, nothing kept) for a new name past
  // wire::kMaxMetadataEntries names, more than any engine publishes.
  Status SetMetadata(wire::Metadata entry) ADXL_EXCLUDES(regions_mu_);
  // The latest version of `name` (0 and an empty blob: never published).
  void GetMetadata(const std::string &name, std::string *blob, uint64_t *version) const ADXL_EXCLUDES(regions_mu_);

  // ---- Data path.
  // Posts one batch on the endpoint.  RESOURCE_EXHAUSTED when the transport
  // is out of resources, FAILED otherwise (the link fails when the endpoint
  // did); logs one ERROR line.  `deadline`: the call's, when it has one:
  // the transport then lands no byte of the batch after it (Endpoint::Post).
  Status Post(TransferOp op, const adxl_plugin_iov_t *iov, size_t count, std::unique_ptr<Batch> *batch,
              Clock::time_point deadline = Endpoint::kNoDeadline);
  // After a transfer timed out: nothing more leaves this side (the link
  // fails, the endpoint is force-closed), and the target is asked to drain
  // what already left, waiting at most kFenceWait for its confirmation.
  void FenceAfterTimeout();
  // How long FenceAfterTimeout waits.  TransferSync must return within its
  // deadline plus 50 ms; a live target answers in a few ms, and a stopped or
  // dead one would not answer in any bound, so waiting longer buys nothing:
  // what keeps a stopped target's memory safe is that the lane moves data
  // only while the initiator's (now force-closed) request lives.
  static constexpr std::chrono::milliseconds kFenceWait{40};
  // How long the target drains for a fence (Transport::Drain) before it
  // answers: within kFenceWait, with room for the answer to travel.
  static constexpr std::chrono::milliseconds kFenceDrain{30};

  // ---- State.
  // Publishes the outcome of Connect to concurrent callers: connected,
  // unless the link failed meanwhile (its control connection is in the
  // loop before Connect returns, so a Bye or EOF can fail it first), which
  // stays.  Whether it is connected now.
  bool SetConnected() ADXL_EXCLUDES(state_mu_);
  // Marks the link failed (idempotent): cancels the endpoint so that every
  // batch in flight ends now, and logs why once.
  void Fail(const std::string &why) ADXL_EXCLUDES(state_mu_);
  // The user disconnected: requests on the link report NOT_CONNECTED, the
  // endpoint is cancelled and the link settles as failed without a warning.
  void Shutdown() ADXL_EXCLUDES(state_mu_);
  // Waits until the link leaves CONNECTING or the deadline passes.
  bool WaitSettled(Clock::time_point deadline) ADXL_EXCLUDES(state_mu_);

  // Counters (extension API).
  std::atomic<uint64_t> bytes_read{0}, bytes_written{0}, ops{0};
  // Per-direction statistics of transfers and connects (adxl_ext.h
  // LinkStats), lock-free; never null.
  const std::shared_ptr<LinkCounters> stats;
  // The channel pool (core/link_table.h TakeEvictable): when the link was
  // connected and last handed to a transfer or notify (steady clock, ns,
  // fine enough to order uses a microsecond apart; last_used_ns 0: never).
  std::atomic<int64_t> connected_ns{0}, last_used_ns{0};
  static int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  }

 private:
  // AddRegion's bound: true when `id` is known or one more region fits
  // (else logged, RegionsFull).
  bool HasRoomForRegion(uint64_t id) const ADXL_EXCLUDES(regions_mu_);
  Status RegionsFull(uint64_t id) const;  // logs; RESOURCE_EXHAUSTED

  const std::string remote_;
  std::atomic<LinkState> state_{LinkState::kConnecting};
  std::atomic<bool> disconnected_{false};
  Mutex state_mu_;  // serialises transitions with the wake-up of WaitSettled
  CondVar state_cv_;

  // After Registrar::mu_ (a plan holds both), checked by the analysis.
  mutable SharedMutex regions_mu_ ADXL_ACQUIRED_AFTER(Registrar::mu_);
  Table regions_ ADXL_GUARDED_BY(regions_mu_);
  std::map<uint64_t, uintptr_t> region_addr_by_id_ ADXL_GUARDED_BY(regions_mu_);  // withdrawals name ids
  std::map<std::string, wire::Metadata> metadata_ ADXL_GUARDED_BY(regions_mu_);
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_LINK_H_
