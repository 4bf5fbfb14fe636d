// A plugin built before post_by existed, for tests/unit/post_deadline_test.cc:
// the UCX plugin's table (loaded from ADXL_UCX_PLUGIN_PATH) whose
// struct_size stops before post_by.  Its post_by slot holds a function that
// refuses everything, so that an engine reading past struct_size shows.
#include <dlfcn.h>

#include <cstddef>

#include "adxl/plugin/adxl_plugin.h"

namespace {

int RefusePostBy(adxl_plugin_ep_t *, int, const adxl_plugin_iov_t *, size_t, uint64_t, adxl_plugin_batch_t **) {
  return ADXL_PLUGIN_ERR_UNSUPPORTED;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const adxl_plugin_ops_t *adxl_plugin_get_ops(
    uint32_t engine_abi_version) {
  static adxl_plugin_ops_t table;
  static bool made = false;
  if (!made) {
    void *h = dlopen(ADXL_UCX_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    auto entry = h != nullptr ? reinterpret_cast<adxl_plugin_get_ops_fn>(dlsym(h, ADXL_PLUGIN_ENTRY)) : nullptr;
    const adxl_plugin_ops_t *ucx = entry != nullptr ? entry(engine_abi_version) : nullptr;
    if (ucx == nullptr) return nullptr;
    table = *ucx;
    table.struct_size = ADXL_PLUGIN_OPS_MIN_SIZE;
    table.post_by = RefusePostBy;
    made = true;
  }
  return &table;
}
