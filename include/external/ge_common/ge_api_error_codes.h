// ge::Status and the headers the vendor's public headers pull in through
// this one (its llm_datadist.h and hixl_types.h include it).
//
// Programs written for the vendor's stack use std::cout without including
// <iostream> themselves: on the vendor's stack it arrives through this
// header, so it does here too.
#ifndef GE_EXTERNAL_GE_COMMON_GE_API_ERROR_CODES_H_
#define GE_EXTERNAL_GE_COMMON_GE_API_ERROR_CODES_H_

#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/ascend_string.h"
#include "graph/types.h"

namespace ge {
using Status = uint32_t;
constexpr Status SUCCESS = 0U;
constexpr Status FAILED = 0xFFFFFFFFU;

// A status from its fields, laid out as the vendor lays them out: runtime
// (2 bits), type (2), level (3), system id (8), module id (5), code (12),
// high to low.  The vendor's llm_error_codes.h declares its codes with it.
constexpr Status MakeErrorNo(uint32_t runtime, uint32_t type, uint32_t level, uint32_t sysid, uint32_t modid,
                             uint32_t value) {
  return ((runtime & 0x3U) << 30U) | ((type & 0x3U) << 28U) | ((level & 0x7U) << 25U) | ((sysid & 0xFFU) << 17U) |
         ((modid & 0x1FU) << 12U) | (value & 0xFFFU);
}
}  // namespace ge

// Declares ge::Status `name` (use inside namespace ge).
#ifndef GE_ERRORNO_DEFINE
#define GE_ERRORNO_DEFINE(runtime, type, level, sysid, modid, name, value) \
  constexpr ::ge::Status name = ::ge::MakeErrorNo(runtime, type, level, sysid, modid, value)
#endif

#endif  // GE_EXTERNAL_GE_COMMON_GE_API_ERROR_CODES_H_
