// CacheManager::ListenToBeReachedBack (cache_manager.h): on the two-way
// backend the cluster a LinkClusters links to may pull from and push to the
// linking one, by connecting back to the listen address the link notify
// announces.  The vendor's communicator needs no listener for that (its
// switch_role sample links from a cluster that just stopped listening and
// is pushed to over that link), so a linking cluster without a listen
// address starts listening before its first link: on an ephemeral port of
// the local address it reaches the first cluster from.  Best effort: when
// that cannot be done the link is made as before (client only; the other
// side's push then says why it cannot reach back).  The move is a move of
// the listener as the owner's are (ListenerMoves: SetRole, MoveListener, a
// rank-table link's): not made, the link then a client only, while a
// rank-table link holds the listener or another move is under way.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "cache_manager.h"
#include "cache_manager_impl.h"
#include "common/fd.h"
#include "common/log.h"

namespace llm_datadist::internal {
namespace {

// The IPv4 address this host reaches `remote` ("ip:port") from, or "" (an
// IPv6 or unparsable name): a UDP connect sends nothing, it only routes.
std::string SourceAddressFor(const std::string &remote) {
  const auto colon = remote.rfind(':');
  if (colon == std::string::npos || remote[0] == '[') return "";
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(static_cast<uint16_t>(std::strtoul(remote.c_str() + colon + 1, nullptr, 10)));
  if (inet_pton(AF_INET, remote.substr(0, colon).c_str(), &peer.sin_addr) != 1) return "";
  const adxl::Fd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return "";
  std::string out;
  sockaddr_in mine{};
  socklen_t len = sizeof(mine);
  char text[INET_ADDRSTRLEN] = {};
  if (connect(fd.get(), reinterpret_cast<const sockaddr *>(&peer), sizeof(peer)) == 0 &&
      getsockname(fd.get(), reinterpret_cast<sockaddr *>(&mine), &len) == 0 &&
      inet_ntop(AF_INET, &mine.sin_addr, text, sizeof(text)) != nullptr) {
    out = text;
  }
  return out;
}

// A TCP port free on `ip` now (the kernel's pick), or 0.  The engine binds
// it a moment later; a port taken in between fails that bind (retried).
unsigned FreePort(const std::string &ip) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) return 0;
  const adxl::Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return 0;
  unsigned port = 0;
  socklen_t len = sizeof(a);
  if (bind(fd.get(), reinterpret_cast<const sockaddr *>(&a), sizeof(a)) == 0 &&
      getsockname(fd.get(), reinterpret_cast<sockaddr *>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  return port;
}

// The owner's mark of a first-link move (ListenerMoves), ended however the
// move ends; nothing when there is no owner or the owner refused.
class FirstLinkMove {
 public:
  explicit FirstLinkMove(ListenerMoves *moves)
      : moves_(moves), token_(moves != nullptr ? moves->BeginFirstLinkMove() : 0) {}
  ~FirstLinkMove() {
    if (token_ != 0) moves_->EndFirstLinkMove(token_);
  }
  FirstLinkMove(const FirstLinkMove &) = delete;
  FirstLinkMove &operator=(const FirstLinkMove &) = delete;
  // The move may go ahead: no owner, or the owner marked it under way.
  bool allowed() const { return moves_ == nullptr || token_ != 0; }

 private:
  ListenerMoves *const moves_;
  const uint64_t token_;
};

}  // namespace

void CacheManager::ListenToBeReachedBack(const std::vector<ClusterInfo> &clusters, bool quiet) {
  std::string remote;
  std::map<adxl::AscendString, adxl::AscendString> options;
  uint64_t generation = 0;  // the move is for this Initialize only
  ListenerMoves *moves = nullptr;
  // Whether to move: Rebind needs no link either way and nothing under way;
  // otherwise this cluster stays as it is (a second link finds the listener
  // of the first).
  const auto wanted = [&]() -> bool {
    adxl::MutexLock lock(&impl_->mu);
    if (!impl_->live || impl_->stopping || !impl_->owned || Listens(impl_->local_name) || clusters.empty() ||
        impl_->busy > 0) {
      return false;
    }
    {
      adxl::MutexLock links_lock(&impl_->peers.mu);
      if (!impl_->peers.two_way || !impl_->peers.NoneLocked()) return false;
    }
    {
      adxl::MutexLock tasks_lock(&impl_->tasks.mu);
      if (!impl_->tasks.workers.empty()) return false;
    }
    remote = clusters[0].remote_engine;
    options = impl_->engine_options;
    generation = impl_->generation;
    moves = impl_->listener_moves;
    return true;
  };
  if (!wanted()) return;
  // The owner's moves and a rank-table link's hold of the listener exclude
  // this move as they exclude each other (asked with no lock held): a
  // rank-table link's peers reach this cluster where the link found or
  // moved the listener.
  const FirstLinkMove mark(moves);
  if (!mark.allowed()) {
    // Quiet: a rank-table link's own rounds (every 50 ms), under its own
    // hold; the link says once what it did with the listener.
    if (!quiet) {
      ADXL_INFO("LinkClusters: a rank-table link holds the listener or it is being moved; linking as a client "
                "only (the linked cluster cannot reach this one back)");
    }
    return;
  }
  // Again under the mark: a move that ended between the two (a rank-table
  // link's) may have started a listener, which this one must not replace;
  // and a Finalize and Initialize between the two made another instance,
  // whose listener this move is not for (the mark is the old instance's).
  const uint64_t first_generation = generation;
  if (moves != nullptr && (!wanted() || generation != first_generation)) return;
  const std::string ip = SourceAddressFor(remote);
  if (ip.empty()) {
    ADXL_INFO("LinkClusters: no IPv4 route to %s to listen on; linking as a client only (the linked cluster "
              "cannot reach this one back)", remote.c_str());
    return;
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    const unsigned port = FreePort(ip);
    if (port == 0) break;
    const std::string name = ip + ":" + std::to_string(port);
    const Status s = Rebind(name, options, "LinkClusters", generation);
    if (s == LLM_SUCCESS) {
      ADXL_INFO("LinkClusters: listening at %s so that the linked clusters can reach this one back", name.c_str());
      return;
    }
    if (s == LLM_EXIST_LINK || s == LLM_LINK_BUSY || s == LLM_FEATURE_NOT_ENABLED || s == LLM_FAILED) return;
  }
}

}  // namespace llm_datadist::internal
