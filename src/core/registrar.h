// Registrar: what peers learn of this engine: its registrations
// (docs/contract.md §4 and §5) and the metadata it publishes (adxl_ext.h).
//
// Owns the registry (memory/registry.h) and the subscribers: the server ends
// of links that peers opened to us, each of which must see every region
// change exactly once and in order, and must not miss one that happens while
// it is handshaking:
//  - Subscribe (control thread, server side of a handshake) snapshots the
//    registry into the HelloAck, then queues it on the connection and adds
//    the connection to the subscribers under one exclusive hold of mu_, in
//    which it checks that the table did not change since the snapshot
//    (version_).  The answer (about 85 bytes a region: 235 KB for 2800) is
//    encoded between the two holds, not under mu_, where it stalled every
//    RegisterMem and TransferSync of the engine (for tens of ms under TSan).
//  - Register / Deregister change the registry and copy the subscribers
//    under mu_ exclusively, then push outside it, one change at a time
//    (op_mu_).  So a change is either in a peer's snapshot or pushed to it,
//    and the push lands behind the queued HelloAck; pushes keep op_mu_'s
//    order, which is the registry's.
//  - A registration waits for nobody: the addition is queued to every
//    subscriber, and a peer whose transfer names a range it has not seen
//    yet asks for the whole table once before refusing the transfer
//    (SendTable, wire::TableRequest; refresh on miss).  So RegisterMem costs
//    the same with a thousand silent peers as with none, and a peer can use
//    a new region as soon as RegisterMem returned.
//  - A deregistration is sent to every subscriber at once (under op_mu_)
//    and then waits, with no lock held, until one short deadline
//    (deregister_wait_), for their acknowledgements (a peer
//    acknowledges once no transfer of its own uses the region); a peer that
//    misses the deadline, or cannot apply the change, is cut off (its
//    connection closed, which fails its link), so it never uses the region
//    after DeregisterMem returned SUCCESS.  Finalize ends such a wait at
//    once (StopWaits: FAILED, the connection left open for its Bye).
//  - Metadata (named, versioned blobs) follows the registrations' path: in
//    the HelloAck snapshot, pushed on every change without waiting
//    (MetadataUpdate), and in the answer to a TableRequest.
//
// Thread-safety: every method may be called from any thread.  Locks, in
// nesting order:
//  - op_mu_ serialises registrations, deregistrations and their pushes (a
//    registration's check, transport registration and insertion are one
//    step under it, so two calls for one range cannot both register it).
//    Held across the transport's registration and the pushes, which only
//    queue (ControlConn::PostToLoop, StartRequest), never across the wait
//    for peers' acknowledgements: a RegisterMem or DeregisterMem does not
//    queue behind a DeregisterMem waiting on a slow or stopped peer.  Taken
//    by API threads only, never by the control thread.
//  - withdrawing_mu_ guards withdrawing_ (the ids whose withdrawal is being
//    waited for; a second DeregisterMem of one waits on withdrawn_cv_ for
//    the first to end).  A leaf: taken under op_mu_ or alone, nothing is
//    taken under it, never held across a send.
//  - mu_ guards registry_, subscribers_, the metadata and version_: shared
//    for readers (snapshots, and a transfer's plan through RegistryView),
//    exclusive for changes.  Never held across a wait or a transport call:
//    sends under it only queue.  Inside it a transfer's plan takes a link's
//    region lock (Link::RegionsView), and sends take a connection's own
//    locks; nothing takes mu_ inside either.
#ifndef ADXL_SRC_CORE_REGISTRAR_H_
#define ADXL_SRC_CORE_REGISTRAR_H_

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "adxl/adxl_types.h"
#include "common/thread_annotations.h"
#include "config/options.h"
#include "control/control.h"
#include "control/wire.h"
#include "memory/registry.h"
#include "transport/transport.h"

namespace adxl {

class Registrar {
 public:
  Registrar(std::shared_ptr<Transport> transport, const EngineOptions &options);

  // RegisterMem / DeregisterMem after the lifecycle check (docs/contract.md §4).
  Status Register(const MemDesc &mem, MemType type, MemHandle *handle) ADXL_EXCLUDES(op_mu_, mu_);
  Status Deregister(MemHandle handle) ADXL_EXCLUDES(op_mu_, mu_);

  // Server side of a handshake: completes `answer` with the region table,
  // queues it on `conn` (seq as given, to be written by `deadline`) and
  // subscribes `conn` to region changes.  False when the answer cannot be
  // queued (the caller closes the connection).  *regions: how many it holds.
  bool Subscribe(const std::shared_ptr<ControlConn> &conn, wire::HelloAck answer, uint64_t seq,
                 Clock::time_point deadline, size_t *regions) ADXL_EXCLUDES(mu_);
  void Unsubscribe(const std::shared_ptr<ControlConn> &conn) ADXL_EXCLUDES(mu_);
  // PublishMetadata: creates or replaces the blob `name` (a new version)
  // and pushes it to every subscriber without waiting.  PARAM_INVALID for a
  // name or blob over the wire limits, RESOURCE_EXHAUSTED past
  // wire::kMaxMetadataEntries names or kMaxMetadataBytes in all.
  // Never waits: not serialised with registrations (op_mu_).
  Status Publish(const std::string &name, const std::string &blob) ADXL_EXCLUDES(mu_);
  // Waits until every subscriber holds the current version of `name` (or a
  // later one): the entry is sent again, as a request that a peer answers
  // once it has applied it, and so everything sent before it on the same
  // connection.  A peer that does not confirm within the deregistration
  // wait has its connection closed, as for a withdrawal: it must not keep
  // using an older table.  PARAM_INVALID for a name never published.  Holds
  // no lock while it waits.
  Status AwaitDelivered(const std::string &name) ADXL_EXCLUDES(mu_);
  // Finalize (docs/contract.md §3.3: calls in flight end at once): the
  // waits of Deregister and AwaitDelivered for peers' acknowledgements end
  // now and from now on, those calls returning FAILED.  The connections
  // stay open (closing them would cut the peers off before Finalize's Bye,
  // which tells them to stop using this engine's memory and waits, bounded,
  // until they have).
  void StopWaits() ADXL_EXCLUDES(mu_);

  // Answers a subscriber's TableRequest (control thread): a RegionAdd for
  // every current region, then the Ack of `seq`, all queued under mu_ so
  // that no change falls between them and later pushes (encoded outside it,
  // as Subscribe's answer).
  void SendTable(const std::shared_ptr<ControlConn> &conn, uint64_t seq, Clock::time_point deadline)
      ADXL_EXCLUDES(mu_);
  std::vector<std::shared_ptr<ControlConn>> Subscribers() const ADXL_EXCLUDES(mu_);

  // A read-only view of the registrations for as long as it lives (mu_
  // shared; the analysis sees it held): what a transfer plans against
  // (transfer_plan.h) and classifies its local side with (memory/
  // local_kind.h).  Registrations and deregistrations wait until it goes, so
  // keep it to the plan: nothing under it blocks or calls the transport.
  // A link's RegionsView may be taken inside it, never the other way round.
  class ADXL_SCOPED_CAPABILITY RegistryView : public ReaderLock {
   public:
    explicit RegistryView(const Registrar &r) ADXL_ACQUIRE_SHARED(r.mu_)
        : ReaderLock(&r.mu_), registry_(r.registry_.get()) {}
    ~RegistryView() ADXL_RELEASE_GENERIC() = default;  // ReaderLock unlocks; the analysis needs it said here
    // Valid while the view lives.
    const Registry &registry() const { return *registry_; }

   private:
    const Registry *registry_;
  };

 private:
  friend class Link;  // names mu_ in its lock order (Link::regions_mu_ is taken after it)
  // A deregistration's withdrawal of region `id` from `peers` (the
  // subscribers when it left the registry): StartWithdrawal sends it to
  // each, under op_mu_ (so pushes keep the registry's order); AwaitWithdrawal
  // waits for their acknowledgements until `deadline` with no lock held (see
  // the top of this file); a peer that does not confirm in time is closed.
  struct Withdrawal {
    uint64_t id = 0;
    std::vector<std::shared_ptr<ControlConn>> peers;
    std::vector<uint64_t> seqs;  // 0: not sent (the connection was closed)
    Clock::time_point deadline;
  };
  void StartWithdrawal(Withdrawal *w) ADXL_REQUIRES(op_mu_) ADXL_EXCLUDES(mu_);
  // False when StopWaits ended the wait (the peers left open).
  bool AwaitWithdrawal(const Withdrawal &w) ADXL_EXCLUDES(op_mu_, mu_);
  static wire::Region ToWire(const LocalRegion &r);

  // What peers learn of this engine, copied under mu_ (pointers and the
  // metadata: cheap) to be encoded outside it.  A snapshot is queued only
  // if version_ still equals its version; after kSnapshotAttempts - 1
  // attempts that lost such a race, the last one encodes under mu_ (so a
  // stream of registrations cannot starve a handshake).
  struct TableSnapshot {
    uint64_t version = 0;
    std::vector<std::shared_ptr<LocalRegion>> regions;
    std::vector<wire::Metadata> metadata;
  };
  static constexpr int kSnapshotAttempts = 3;
  void Snapshot(TableSnapshot *snap) const ADXL_REQUIRES_SHARED(mu_);
  // The HelloAck `answer` completed with `snap`, encoded for `conn`.
  static bool EncodeAnswer(ControlConn &conn, const wire::HelloAck &answer, const TableSnapshot &snap,
                           uint64_t seq, ControlConn::Frame *frame);
  // SendTable's frames: a RegionAdd per region, a MetadataUpdate per entry,
  // the Ack of `seq`.
  static bool EncodeTable(ControlConn &conn, const TableSnapshot &snap, uint64_t seq,
                          std::vector<ControlConn::Frame> *frames);
  // Registers [mem] with the transport; offers MallocMem memory as a
  // mapping to same-node peers when EnableUseFabricMem=1.
  Status RegisterWithTransport(const MemDesc &mem, MemType type, std::shared_ptr<LocalRegion> *region);

  const std::shared_ptr<Transport> transport_;
  const bool fabric_mem_;
  // How long DeregisterMem waits for peers' acknowledgements.
  const std::chrono::milliseconds deregister_wait_;
  // StopWaits was called: no wait for an acknowledgement goes on.
  std::atomic<bool> stopping_{false};

  Mutex op_mu_;
  mutable SharedMutex mu_ ADXL_ACQUIRED_AFTER(op_mu_);
  // The regions whose withdrawal a Deregister is waiting for (ids are never
  // reused): a second DeregisterMem of such a handle waits until the first
  // ends, so that it too returns only once no peer uses the region.
  Mutex withdrawing_mu_ ADXL_ACQUIRED_AFTER(op_mu_);
  CondVar withdrawn_cv_;
  std::set<uint64_t> withdrawing_ ADXL_GUARDED_BY(withdrawing_mu_);
  // Those whose wait StopWaits ended (only during Finalize, which then
  // destroys the Registrar): a second DeregisterMem of one returns FAILED too.
  std::set<uint64_t> stopped_ids_ ADXL_GUARDED_BY(withdrawing_mu_);
  std::unique_ptr<Registry> registry_ ADXL_GUARDED_BY(mu_);
  std::set<std::shared_ptr<ControlConn>> subscribers_ ADXL_GUARDED_BY(mu_);
  // Bumped by every change of the registry or the metadata (see TableSnapshot).
  uint64_t version_ ADXL_GUARDED_BY(mu_) = 0;
  // The HelloAck (one frame, at most wire::kMaxPayload, 4 MiB) carries the
  // region table and the published metadata, each with a budget of its own,
  // and the rest of the answer (node id, transport address, proof) in what
  // is left.  A registration or a publish that would overrun its budget is
  // refused (RESOURCE_EXHAUSTED), so that the answer always encodes: an
  // engine whose answer did not would refuse every inbound Connect.
  // Regions: at most kMaxRegions adverts of ~36 bytes plus the transport's
  // key (52 bytes with UCX 1.22 over TCP here: 0.35 MiB for 4096 regions),
  // so the budget binds only for keys of ~450 bytes and more.
  static constexpr size_t kMaxMetadataBytes = 2u << 20;
  // The rest: node id and transport address (each at most wire::kMaxString,
  // 64 KiB), the proof, the metadata entries' and the frame's own fields.
  static constexpr size_t kAnswerRestBytes = 192u << 10;
  static constexpr size_t kMaxAdvertBytes = wire::kMaxPayload - kMaxMetadataBytes - kAnswerRestBytes;
  size_t advert_bytes_ ADXL_GUARDED_BY(mu_) = 0;  // the adverts of the registered, advertised regions
  std::map<std::string, wire::Metadata> metadata_ ADXL_GUARDED_BY(mu_);
  size_t metadata_bytes_ ADXL_GUARDED_BY(mu_) = 0;
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_REGISTRAR_H_
