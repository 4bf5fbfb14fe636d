// FromUcs (ucs_status.h).
#include "core/ucs_status.h"

#include "adxl/plugin/adxl_plugin.h"

int FromUcs(ucs_status_t st) {
  switch (st) {
    case UCS_OK:
      return ADXL_PLUGIN_OK;
    case UCS_INPROGRESS:
      return ADXL_PLUGIN_IN_PROGRESS;
    case UCS_ERR_CANCELED:
      return ADXL_PLUGIN_ERR_CANCELED;
    case UCS_ERR_INVALID_PARAM:
      return ADXL_PLUGIN_ERR_INVALID;
    case UCS_ERR_UNSUPPORTED:
      return ADXL_PLUGIN_ERR_UNSUPPORTED;
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_EXCEEDS_LIMIT:
      return ADXL_PLUGIN_ERR_NO_RESOURCE;
    default:
      return ADXL_PLUGIN_ERR_IO;
  }
}
