// CoreAccess: how the library's facades other than AdxlEngine (hixl::Hixl)
// hold the one engine core, AdxlEngine::AdxlEngineImpl, without a copy of it.
#ifndef ADXL_SRC_CORE_ACCESS_H_
#define ADXL_SRC_CORE_ACCESS_H_

#include "engine_impl.h"

namespace adxl {
namespace detail {

struct CoreAccess {
  using Core = AdxlEngine::AdxlEngineImpl;
};

}  // namespace detail
}  // namespace adxl

#endif  // ADXL_SRC_CORE_ACCESS_H_
