// UCS status -> ADXL_PLUGIN_* status, for every part of the plugin.
#ifndef ADXL_PLUGIN_UCX_CORE_UCS_STATUS_H_
#define ADXL_PLUGIN_UCX_CORE_UCS_STATUS_H_

#include <ucs/type/status.h>

int FromUcs(ucs_status_t st);

#endif  // ADXL_PLUGIN_UCX_CORE_UCS_STATUS_H_
