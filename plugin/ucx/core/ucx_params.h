// UcxParams: what configures the UCX plugin besides UCX's own UCX_*
// variables: the parameters of open(), each documented at its field.  The
// plugin reads no environment variable of its own: the engine reads its
// ADXL_UCX_* settings through its option table (src/config/option_table.cc,
// adxl-info) and passes each set one as the parameter named at its field.
#ifndef ADXL_PLUGIN_UCX_CORE_UCX_PARAMS_H_
#define ADXL_PLUGIN_UCX_CORE_UCX_PARAMS_H_

#include <cstddef>
#include <string>
#include <utility>
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
  // Checked by Check(), from the text Parse kept (the engine's variable in
  // brackets):
  size_t cma_split_bytes = CmaTuning::kSplitMinBytes;  // "cma_split_bytes" (ADXL_UCX_CMA_SPLIT_BYTES)
  unsigned cma_spin_us = CmaTuning::kSpinUs;           // "cma_spin_us" (ADXL_UCX_CMA_SPIN_US)
  enum class RdmaProtocol { kAuto, kAm, kRma };
  RdmaProtocol rdma_protocol = RdmaProtocol::kAuto;  // "rdma_protocol": am|rma (ADXL_UCX_RDMA_PROTOCOL)
  // "rdma_connections" (ADXL_UCX_RDMA_CONNECTIONS): UCP endpoints (each its
  // own TCP connection) per link on the RDMA lane over active messages, in
  // [1, kMaxRdmaConnections].
  static constexpr unsigned kMaxRdmaConnections = 16;
  unsigned rdma_connections = 1;
  // "rdma_paths" (ADXL_UCX_RDMA_PATHS): local network interfaces, each a
  // path of the RDMA lane over active messages (net_path.h).  Not given (or
  // empty): every interface that is up, not loopback and has an IPv4
  // address, when there are two or more (PathsMover::Open); "none"
  // (rdma_paths_none): no paths, the context's own worker on whatever
  // interfaces UCX picks.  At most kMaxRdmaPaths distinct names.
  static constexpr size_t kMaxRdmaPaths = 16;
  std::vector<std::string> rdma_paths;
  bool rdma_paths_none = false;
  // The "test_*" parameters: fault-injection seams, acted on only by the
  // test build's plugin (fault_injection.h).
  FaultInjection faults;
  // Takes the parameters this plugin knows; unknown keys are ignored.
  static UcxParams Parse(const adxl_plugin_config_t *cfg);
  // Parses the checked parameters Parse kept as text into the fields above;
  // false (and *why, naming the parameter) when one has a value it does not
  // accept.
  bool Check(std::string *why);

 private:
  // The checked parameters as given: (key, value), in the order given.
  std::vector<std::pair<std::string, std::string>> checked_;
};

#endif  // ADXL_PLUGIN_UCX_CORE_UCX_PARAMS_H_
