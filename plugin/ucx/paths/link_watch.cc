// Carrier changes of the local interfaces over routing netlink (link_watch.h).
#include "paths/link_watch.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

bool LinkWatch::Open(std::string *why) {
  Close();
  fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd_ < 0) {
    *why = std::string("netlink socket: ") + strerror(errno);
    return false;
  }
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  sa.nl_groups = RTMGRP_LINK;
  if (bind(fd_, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0) {
    *why = std::string("netlink bind: ") + strerror(errno);
    Close();
    return false;
  }
  return true;
}

void LinkWatch::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void LinkWatch::Drain(std::vector<std::pair<unsigned, bool>> *changes) {
  if (fd_ < 0) return;
  // Aligned for the nlmsghdr/ifinfomsg reads below.
  alignas(nlmsghdr) char buf[16384];
  while (true) {
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // ENOBUFS: the kernel dropped messages; the caller re-reads every
      // interface it cares about (reported as index 0).
      if (n < 0 && errno == ENOBUFS) changes->emplace_back(0u, false);
      return;
    }
    size_t left = static_cast<size_t>(n);
    for (auto *h = reinterpret_cast<nlmsghdr *>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if ((h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK) ||
          h->nlmsg_len < NLMSG_LENGTH(sizeof(ifinfomsg))) {
        continue;
      }
      const auto *ifi = static_cast<const ifinfomsg *>(NLMSG_DATA(h));
      const bool running = h->nlmsg_type == RTM_NEWLINK && (ifi->ifi_flags & IFF_RUNNING) != 0;
      changes->emplace_back(static_cast<unsigned>(ifi->ifi_index), running);
    }
  }
}

bool LinkWatch::Running(unsigned ifindex) {
  char name[IF_NAMESIZE];
  if (if_indextoname(ifindex, name) == nullptr) return false;
  const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return true;  // cannot tell: assume it runs (connections will say otherwise)
  ifreq req{};
  memcpy(req.ifr_name, name, strnlen(name, IF_NAMESIZE - 1));  // req is zeroed: terminated
  const int rc = ioctl(s, SIOCGIFFLAGS, &req);
  close(s);
  return rc != 0 || (req.ifr_flags & IFF_RUNNING) != 0;
}
