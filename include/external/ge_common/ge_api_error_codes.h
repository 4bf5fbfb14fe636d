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
}  // namespace ge

#endif  // GE_EXTERNAL_GE_COMMON_GE_API_ERROR_CODES_H_
