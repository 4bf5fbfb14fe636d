// The host memory pool of the Python package's allocate_cache: the class is
// public, our extension's (include/llm_datadist/llm_datadist_host_pool.h,
// which states its contract and lock); host_pool.cc implements it.
#ifndef LLM_DATADIST_SRC_HOST_POOL_H_
#define LLM_DATADIST_SRC_HOST_POOL_H_

#include "cache_types.h"
#include "llm_datadist/llm_datadist_host_pool.h"

namespace llm_datadist::internal {

// Public, our extension's (include/llm_datadist/llm_datadist_host_pool.h).
using ext::HostPool;

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_SRC_HOST_POOL_H_
