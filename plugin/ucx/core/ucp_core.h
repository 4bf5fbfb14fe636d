// UcpCore: what the parts of the plugin below its movers need of a plugin
// context: the UCP context and worker, the engine's logger and the wake-up
// of the progress thread.  adxl_plugin_context (ucx_context.h) is one, and
// adds the movers and the progress thread; the parts in core/ take a
// UcpCore and never include the context.
//
// Thread-safety: the fields are written only by the context's Open and
// Close; log and Wake may be called from any thread, UCP callbacks included.
#ifndef ADXL_PLUGIN_UCX_CORE_UCP_CORE_H_
#define ADXL_PLUGIN_UCX_CORE_UCP_CORE_H_

#include <ucp/api/ucp.h>

#include "core/plugin_log.h"

struct UcpCore {
  ucp_context_h ucp = nullptr;
  ucp_worker_h worker = nullptr;  // UCS_THREAD_MODE_MULTI
  PluginLog log;                  // the engine's logger, set by Open
  int wake_fd = -1;               // eventfd the progress thread sleeps on (with the workers' fds)

  // Wakes the progress thread (posted work it must drive, deferred work).
  void Wake() const;
};

#endif  // ADXL_PLUGIN_UCX_CORE_UCP_CORE_H_
