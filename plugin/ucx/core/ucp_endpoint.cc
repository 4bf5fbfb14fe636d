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

constexpr int kCloseTimeoutMs = 2000;  // bound on a graceful endpoint close
// Bound on waiting for a forced close: UCP completes one without the peer,
// so this only keeps a wedged transport from holding the caller (an engine
// thread tearing a link down); the request is then left to UCP.
constexpr auto kForceCloseWait = std::chrono::seconds(1);

// Waits for a forced close, bounded by kForceCloseWait; a request still
// pending then is released to UCP, which frees it when it completes.
void WaitForcedClose(const UcpCore *core, ucp_worker_h worker, ucs_status_ptr_t req) {
  if (req == nullptr || UCS_PTR_IS_ERR(req)) return;
  const auto until = std::chrono::steady_clock::now() + kForceCloseWait;
  while (ucp_request_check_status(req) == UCS_INPROGRESS) {
    if (std::chrono::steady_clock::now() > until) {
      core->log(ADXL_PLUGIN_LOG_WARN, "a forced endpoint close did not complete within %lld ms; left to UCP",
               static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(kForceCloseWait).count()));
      break;
    }
    ucp_worker_progress(worker);
  }
  ucp_request_free(req);
}

}  // namespace

ucs_status_t WaitRequest(ucp_worker_h worker, ucs_status_ptr_t req, int timeout_ms) {
  if (req == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
  const auto start = std::chrono::steady_clock::now();
  ucs_status_t st;
  while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
    ucp_worker_progress(worker);
    if (timeout_ms >= 0 && std::chrono::steady_clock::now() - start > std::chrono::milliseconds(timeout_ms)) {
      ucp_request_cancel(worker, req);
      timeout_ms = -1;  // keep progressing until the cancellation lands
    }
  }
  ucp_request_free(req);
  return st;
}

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
  if (force) {
    WaitForcedClose(core, worker, ucp_ep_close_nbx(ep, &p));
    return;
  }
  if (WaitRequest(worker, ucp_ep_close_nbx(ep, &p), kCloseTimeoutMs) != UCS_OK) {
    // A graceful close that did not finish (peer gone): drop what is left.
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    WaitForcedClose(core, worker, ucp_ep_close_nbx(ep, &p));
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
