// PathsMover: the network paths' part of a registration (net_path.h): a
// host region registered with every path's UCP context and entered in every
// path's AM lane, so that peers reach it over each path.  All paths or none:
// a path that cannot register it fails the registration (logged), since a
// striped batch may touch the region on any path.  Without paths it does
// nothing.
#ifndef ADXL_PLUGIN_UCX_PATHS_PATHS_MOVER_H_
#define ADXL_PLUGIN_UCX_PATHS_PATHS_MOVER_H_

#include <memory>
#include <vector>

#include "core/mover.h"
#include "core/plugin_log.h"

class NetPath;

class PathsMover final : public Mover {
 public:
  PathsMover(const std::vector<std::unique_ptr<NetPath>> &paths, const PluginLog &log) : paths_(paths), log_(log) {}
  int Register(void *addr, size_t len, adxl_plugin_mem *mem) override;
  void Deregister(adxl_plugin_mem *mem) override;

 private:
  const std::vector<std::unique_ptr<NetPath>> &paths_;  // the context's: fixed while it is open
  const PluginLog &log_;                                // the context's
};

#endif  // ADXL_PLUGIN_UCX_PATHS_PATHS_MOVER_H_
