// adxl::AscendString is the vendor's ge::AscendString (graph/ascend_string.h),
// as in the vendor's adxl_types.h.
#ifndef ADXL_ASCEND_STRING_H_
#define ADXL_ASCEND_STRING_H_

#include "graph/ascend_string.h"

namespace adxl {
using AscendString = ge::AscendString;
}  // namespace adxl

#endif  // ADXL_ASCEND_STRING_H_
