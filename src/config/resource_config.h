// The vendor's two JSON options, LocalCommRes and GlobalResourceConfig
// (docs/contract.md §3.5, §9.3): every key the vendor documents either does
// here what it does there or is accepted, checked against the vendor's range,
// and logged once per process (WARN) as not applicable on this host.  None is
// dropped in silence.
//
//   does the same here  comm_resource_config.protocol_desc (the lanes links may
//                       use), connect_pool.thread_num / task_queue_capacity
//                       (the HIXL facade's asynchronous connects),
//                       channel_pool.max_channel (1..512, default 512) /
//                       high_waterline / low_waterline (fractions in (0, 1),
//                       plain decimals, given together, low < high): the
//                       channel pool of outgoing links (core/connector.h),
//                       on when any of the three is given
//   not applicable      fabric_memory.* (no fabric VMM), comm_resource_config.
//                       listen_port / max_active_channels / qos (device NICs); in
//                       LocalCommRes everything but `version` (device lists,
//                       the rank table serving frameworks pass routinely: one
//                       INFO line per process names its keys, no WARN)
//   refused             protocols of hardware no host here has (ub_ctp, ub_tp,
//                       ub_rtp, uboe, ubg): PARAM_INVALID naming the lanes
//                       that exist
// Option parsing in src/config/option_table.cc calls these (the one table).
#ifndef ADXL_SRC_CONFIG_RESOURCE_CONFIG_H_
#define ADXL_SRC_CONFIG_RESOURCE_CONFIG_H_

#include <string>

#include "config/options.h"

namespace adxl {

// `key` is the option's spelling (for messages).  False with *why on a bad value.
bool ApplyLocalCommResJson(const std::string &key, const std::string &text, std::string *why);
bool ApplyGlobalResourceConfigJson(const std::string &key, const std::string &text, EngineOptions *o,
                                   std::string *why);
std::string ShowGlobalResourceConfigJson(const EngineOptions &o);

// The lanes this engine has, in words (for error lines).
const char *ExistingLanesText();

}  // namespace adxl

#endif  // ADXL_SRC_CONFIG_RESOURCE_CONFIG_H_
