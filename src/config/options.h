// Engine options: every key Initialize accepts, its default and its checks.
//
// Vendor keys (docs/contract.md §3.5).  Each also accepted with the "adxl." prefix; the
// un-prefixed spelling wins when both are given.
//   RdmaTrafficClass   int in [0,255], multiple of 4; default 132, env HCCL_RDMA_TC
//   RdmaServiceLevel   int in [0,7]; default 4, env HCCL_RDMA_SL
//   AutoConnect        "0" | "1"; default "0"
//   BufferPool         "N:S" (N buffers of S MiB, both > 0) or "0:0" (off); default "4:8"
//   LocalCommRes       JSON object; "version" accepted, vendor device fields ignored
//   GlobalResourceConfig JSON object; keys:
//       comm_resource_config.protocol_desc  "hccs:host"|"hccs:device"|"roce:host"|"roce:device"
//                                           or a list of them: lanes allowed (default all)
//       connect_pool.task_queue_capacity    int > 0, default 128 (HIXL async connect)
//       connect_pool.thread_num             int > 0, default 2
//   EnableUseFabricMem "0" | "1"; default "0"
// Project keys ("adxl." prefix only), each with an environment fallback:
//   adxl.MaxRegistrations   ADXL_MAX_REGISTRATIONS   default 256
//   adxl.MaxDeviceMemory    ADXL_MAX_DEVICE_MEMORY   bytes, default 50 GiB
//   adxl.MaxHostMemory      ADXL_MAX_HOST_MEMORY     bytes, default 1 TiB
//   adxl.HeartbeatMs        ADXL_HEARTBEAT_MS        ping period; a peer silent for
//                                                    3 periods is dead; default 1000
//   adxl.HccsCopyThreads    ADXL_HCCS_COPY_THREADS   threads one large HCCS-lane copy (cma)
//                                                    is striped over, 1..64; default 0: the
//                                                    CPUs of the transport's NUMA node, at
//                                                    most 4
//   adxl.PluginPath         ADXL_PLUGIN_PATH         ':'-separated directories searched
//                                                    before the library's own plugin dir
//   adxl.Plugin             ADXL_PLUGIN              plugin name, default "ucx"
//   adxl.AuthToken          ADXL_AUTH_TOKEN          shared secret, 1..1024 bytes; default
//                                                    none.  When set, a peer is linked only if it
//                                                    has the same token (mutual HMAC-SHA256
//                                                    challenge-response at the handshake, the
//                                                    token never crosses the wire); an empty
//                                                    environment value counts as unset.
// Anything else, or a malformed value, is PARAM_INVALID at Initialize.
#ifndef ADXL_SRC_CONFIG_OPTIONS_H_
#define ADXL_SRC_CONFIG_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace adxl {

struct EngineOptions {
  int traffic_class = 132;
  int service_level = 4;
  bool auto_connect = false;
  uint32_t pool_buffers = 4;
  uint32_t pool_buffer_mib = 8;
  bool fabric_mem = false;
  // Allowed "protocol:placement" pairs; empty means everything is allowed.
  std::vector<std::string> protocols;
  uint32_t connect_queue_capacity = 128;
  uint32_t connect_threads = 2;

  uint32_t max_registrations = 256;
  uint64_t max_device_bytes = 50ull << 30;
  uint64_t max_host_bytes = 1ull << 40;
  uint32_t heartbeat_ms = 1000;
  uint32_t hccs_copy_threads = 0;  // 0: automatic
  std::string plugin_path;
  std::string plugin = "ucx";
  std::string auth_token;  // empty: no access control
};

// Parses `options` (plus environment fallbacks) into *out.  On error returns
// false with a message naming the key and what was wrong.
bool ParseOptions(const std::map<std::string, std::string> &options, EngineOptions *out, std::string *why);

}  // namespace adxl

#endif  // ADXL_SRC_CONFIG_OPTIONS_H_
