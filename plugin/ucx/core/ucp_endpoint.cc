// UCP endpoint helpers of the UCX plugin (ucp_endpoint.h).
#include "core/ucp_endpoint.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "core/ucp_core.h"

namespace {

constexpr auto kCloseWait = std::chrono::seconds(2);  // bound on a graceful endpoint close
// Bound on a forced close: UCP completes one without the peer, so this only
// keeps a wedged transport from holding the caller (an engine thread
// tearing a link down).
constexpr auto kForceCloseWait = std::chrono::seconds(1);

// Progresses `worker` until the close request `req` ends or `bound` passes,
// then frees it (UCP releases a request still pending when it ends).
// Whether it ended.
bool WaitClose(ucp_worker_h worker, ucs_status_ptr_t req, std::chrono::steady_clock::duration bound) {
  if (req == nullptr || UCS_PTR_IS_ERR(req)) return true;
  const auto until = std::chrono::steady_clock::now() + bound;
  bool ended = true;
  while (ucp_request_check_status(req) == UCS_INPROGRESS) {
    if (std::chrono::steady_clock::now() > until) {
      ended = false;
      break;
    }
    ucp_worker_progress(worker);
  }
  ucp_request_free(req);
  return ended;
}

}  // namespace

ucp_ep_h CreateUcpEp(const UcpCore *core, ucp_worker_h worker, const std::string &address, ucp_err_handler_cb_t on_error,
                     void *arg, ucs_status_t *st) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = reinterpret_cast<const ucp_address_t *>(address.data());
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = on_error;
  p.err_handler.arg = arg;
  ucp_ep_h ep = nullptr;
  *st = ucp_ep_create(worker, &p, &ep);
  if (*st != UCS_OK) {
    core->log(ADXL_PLUGIN_LOG_ERROR, "ucp_ep_create: %s", ucs_status_string(*st));
    return nullptr;
  }
  core->Wake();  // wire-up messages need progress
  return ep;
}

void CloseUcpEp(const UcpCore *core, ucp_worker_h worker, ucp_ep_h ep, bool force) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  // From here the endpoint is UCP's, whatever comes of the close: UCP
  // releases it when the request ends, failed or not, and refuses a second
  // close of it ("already been closed"), so there is never a second one.  A
  // graceful close that has not ended by its bound (a peer that went silent)
  // goes on inside UCP, which fails it when the transport gives up on the
  // peer, or destroys it with the worker.
  const auto bound = force ? kForceCloseWait : kCloseWait;
  if (!WaitClose(worker, ucp_ep_close_nbx(ep, &p), bound)) {
    core->log(ADXL_PLUGIN_LOG_WARN, "a %s endpoint close did not end within %lld ms; left to UCP",
              force ? "forced" : "graceful",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(bound).count()));
  }
}

std::string DescribeUcpEp(ucp_ep_h ep) {
  char *text = nullptr;
  size_t text_len = 0;
  FILE *f = open_memstream(&text, &text_len);
  if (f == nullptr) throw std::bad_alloc();
  ucp_ep_print_info(ep, f);
  fclose(f);
  std::unique_ptr<char, decltype(&free)> hold(text, free);
  // Lines look like "#   lane[0]:  1:posix/memory.0 md[1]  ... rma ...": keep
  // the distinct transport/device names in order.
  std::string out;
  const char *p = text;
  while ((p = strstr(p, "lane[")) != nullptr) {
    const char *colon = strchr(p, ':');
    if (colon == nullptr) break;
    const char *s = colon + 1;
    while (*s == ' ') ++s;
    while (*s >= '0' && *s <= '9') ++s;
    if (*s == ':') ++s;
    const char *e = s;
    while (*e != '\0' && *e != ' ' && *e != '\n') ++e;
    std::string name(s, e);
    size_t dot = name.rfind('.');
    if (dot != std::string::npos) name.resize(dot);
    if (!name.empty() && ("," + out + ",").find("," + name + ",") == std::string::npos) {
      if (!out.empty()) out += ",";
      out += name;
    }
    p = e;
  }
  return out.empty() ? "unknown" : out;
}
