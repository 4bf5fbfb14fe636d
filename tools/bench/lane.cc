#include "lane.h"

#include <cstdlib>

namespace bench {

std::string LaneTls(Lane lane) {
  switch (lane) {
    // Shared memory only (posix, sysv, cma) plus self: the intra-node lane.
    case Lane::kHccs: return "sm,self";
    // TCP stands in for the network lane on machines without RDMA devices.
    case Lane::kRdma: return "tcp";
    default: return "";
  }
}

TlsChoice ApplyTls(const std::string &wanted) {
  TlsChoice c;
  if (const char *user = getenv("UCX_TLS")) {
    c.value = user;
    c.source = "user";
  } else if (!wanted.empty()) {
    setenv("UCX_TLS", wanted.c_str(), 0);
    c.value = wanted;
    c.source = "lane";
  } else {
    c.source = "default";
  }
  return c;
}

std::string TlsChoice::Describe() const {
  if (source == "default") return "UCX_TLS unset (UCX default: all transports)";
  return "UCX_TLS=" + value + (source == "user" ? " (set by the user; --lane does not override it)" : " (from --lane)");
}

}  // namespace bench
