// Setting a UCX transport's configuration key on a UCP configuration, the
// same way on every UCX the plugin supports.
#ifndef ADXL_PLUGIN_UCX_CORE_UCX_CONFIG_H_
#define ADXL_PLUGIN_UCX_CORE_UCX_CONFIG_H_

#include <ucp/api/ucp.h>

// Sets transport setting `field` (e.g. "RX_SEG_SIZE" of the transport whose
// keys start with `tl_prefix`, "TCP_") to `value` on `config`, for every
// transport UCP opens with it.  UCX 1.13 takes the field without its
// transport's prefix and refuses nothing (a key no transport knows only
// draws ucp_worker_create's "invalid configuration" warning); later UCX
// refuses the short form (UCS_ERR_INVALID_PARAM) and takes the full name
// ("TCP_RX_SEG_SIZE"), which 1.13 would accept and ignore.  Hence the short
// form first, then the full name.  Returns UCP's status of the last try.
ucs_status_t ModifyTransportSetting(ucp_config_t *config, const char *tl_prefix, const char *field,
                                    const char *value);

#endif  // ADXL_PLUGIN_UCX_CORE_UCX_CONFIG_H_
