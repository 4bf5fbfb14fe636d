// LinkWatch: carrier changes of this host's network interfaces, from the
// kernel's routing netlink (RTMGRP_LINK), so that a path whose link went
// down is known at once instead of when TCP gives up on its connections
// (minutes with the default retransmission limits).
//
// The watch only reports the kernel's view of the local interface: a link
// that loses carrier (cable, switch port, `ip link set down`, the far end
// of a veth) shows here; a path that keeps carrier but drops traffic
// further away does not (net_paths.h says what covers that case).
//
// Thread-safety: Open and Close from one thread; Drain from one thread at a
// time (the progress thread); Running from any thread.  No locks.
#ifndef ADXL_PLUGIN_UCX_PATHS_LINK_WATCH_H_
#define ADXL_PLUGIN_UCX_PATHS_LINK_WATCH_H_

#include <string>
#include <utility>
#include <vector>

class LinkWatch {
 public:
  LinkWatch() = default;
  ~LinkWatch() { Close(); }
  LinkWatch(const LinkWatch &) = delete;
  LinkWatch &operator=(const LinkWatch &) = delete;

  // Opens the netlink socket (non-blocking); false with *why when the
  // kernel refuses it (carrier changes are then not watched).
  bool Open(std::string *why);
  void Close();
  // The socket, readable when changes are queued (for an epoll set); -1
  // when not open.
  int fd() const { return fd_; }

  // Reads every queued message; appends (interface index, running) for each
  // interface the kernel reported (a removed interface: not running).
  void Drain(std::vector<std::pair<unsigned, bool>> *changes);

  // Whether interface `ifindex` is up with carrier now (IFF_RUNNING).
  static bool Running(unsigned ifindex);

 private:
  int fd_ = -1;
};

#endif  // ADXL_PLUGIN_UCX_PATHS_LINK_WATCH_H_
