// ModifyTransportSetting (ucx_config.h).
#include "core/ucx_config.h"

#include <string>

ucs_status_t ModifyTransportSetting(ucp_config_t *config, const char *tl_prefix, const char *field,
                                    const char *value) {
  const ucs_status_t st = ucp_config_modify(config, field, value);
  if (st != UCS_ERR_INVALID_PARAM) return st;
  return ucp_config_modify(config, (std::string(tl_prefix) + field).c_str(), value);
}
