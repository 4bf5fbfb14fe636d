// UcxParams: what configures the UCX plugin besides UCX's own UCX_*
// variables: the parameters of open() and the plugin's ADXL_UCX_*
// environment settings, each documented at its field (the user-facing text
// of the environment settings: src/config/option_table.cc, adxl-info).
#ifndef ADXL_PLUGIN_UCX_CORE_UCX_PARAMS_H_
#define ADXL_PLUGIN_UCX_CORE_UCX_PARAMS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "adxl/plugin/adxl_plugin.h"
#include "core/fault_injection.h"
#include "core/cma_tuning.h"

// The plugin parameters of open() (adxl_plugin_config_t::params) this
// plugin knows; unknown keys are ignored.
struct UcxParams {
  unsigned hccs_copy_threads = 1;      // "hccs_copy_threads": cma stripes (>= 1)
  std::string progress_cpus;           // "progress_cpus": "a-b,c,..." for the plugin's threads
  std::string rdma_traffic_class;      // "rdma_traffic_class" -> UCX IB_TRAFFIC_CLASS
  std::string rdma_service_level;      // "rdma_service_level" -> UCX IB_SL
  // Environment settings (listed by adxl-info: src/config/option_table.cc).
  size_t cma_split_bytes = CmaTuning::kSplitMinBytes;  // ADXL_UCX_CMA_SPLIT_BYTES
  unsigned cma_spin_us = CmaTuning::kSpinUs;           // ADXL_UCX_CMA_SPIN_US
  enum class RdmaProtocol { kAuto, kAm, kRma };
  RdmaProtocol rdma_protocol = RdmaProtocol::kAuto;  // ADXL_UCX_RDMA_PROTOCOL
  // ADXL_UCX_RDMA_CONNECTIONS: UCP endpoints (each its own TCP connection)
  // per link on the RDMA lane over active messages, in [1, kMaxRdmaConnections].
  static constexpr unsigned kMaxRdmaConnections = 16;
  unsigned rdma_connections = 1;
  // ADXL_UCX_RDMA_PATHS: local network interfaces, each a path of the RDMA
  // lane over active messages (net_path.h).  Unset (or empty): every
  // interface that is up, not loopback and has an IPv4 address, when there
  // are two or more (OpenPaths); "none" (rdma_paths_none): no paths, the
  // context's own worker on whatever interfaces UCX picks.  At most
  // kMaxRdmaPaths distinct names.
  static constexpr size_t kMaxRdmaPaths = 16;
  std::vector<std::string> rdma_paths;
  bool rdma_paths_none = false;
  // The "test_*" parameters: fault-injection seams, acted on only by the
  // test build's plugin (fault_injection.h).
  FaultInjection faults;
  static UcxParams Parse(const adxl_plugin_config_t *cfg);
  // Reads the environment settings into *this; false (and *why, naming the
  // variable) when one is set to a value it does not accept.
  bool ReadEnvironment(std::string *why);
};

#endif  // ADXL_PLUGIN_UCX_CORE_UCX_PARAMS_H_
