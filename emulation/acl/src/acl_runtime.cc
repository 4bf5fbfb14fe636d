// The emulated runtime's process, device and stream calls, and
// aclGetRecentErrMsg.  A device is a number: setting one records it as the
// calling thread's current device, which aclrtMalloc stamps on its blocks.
#include <atomic>
#include <cstdlib>

#include "acl/acl.h"
#include "acl_state.h"

using acl_host::Fail;

namespace {

std::atomic<bool> g_initialized{false};

aclError CheckDevice(const char *call, int32_t id) {
  if (id < 0 || static_cast<uint32_t>(id) >= acl_host::DeviceCount()) {
    return Fail(ACL_ERROR_RT_INVALID_DEVICEID, "%s(%d): no such device (the host emulation has devices 0..%u; "
                "ADXL_ACL_HOST_DEVICES sets how many)", call, id, acl_host::DeviceCount() - 1);
  }
  return ACL_SUCCESS;
}

// The context of device d is &g_contexts[d]: its address is the handle.
struct Context {
  int32_t device;
};
Context g_contexts[1024];

bool ContextDevice(aclrtContext context, int32_t *device) {
  const uintptr_t c = reinterpret_cast<uintptr_t>(context);
  const uintptr_t base = reinterpret_cast<uintptr_t>(&g_contexts[0]);
  if (c < base || (c - base) % sizeof(Context) != 0) return false;
  const uintptr_t d = (c - base) / sizeof(Context);
  if (d >= acl_host::DeviceCount()) return false;
  *device = static_cast<int32_t>(d);
  return true;
}

aclrtContext ContextOf(int32_t device) { return &g_contexts[device]; }

}  // namespace

extern "C" {

aclError aclInit(const char *configPath) {
  (void)configPath;  // dump/profiling settings: nothing to configure on a host
  bool expected = false;
  if (!g_initialized.compare_exchange_strong(expected, true)) {
    return Fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized (call aclFinalize first)");
  }
  return ACL_SUCCESS;
}

aclError aclFinalize(void) {
  bool expected = true;
  if (!g_initialized.compare_exchange_strong(expected, false)) {
    return Fail(ACL_ERROR_UNINITIALIZE, "aclFinalize: aclInit was not called");
  }
  return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
  aclError e = CheckDevice("aclrtSetDevice", deviceId);
  if (e != ACL_SUCCESS) return e;
  acl_host::ThreadDevice() = deviceId;
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
  aclError e = CheckDevice("aclrtResetDevice", deviceId);
  if (e != ACL_SUCCESS) return e;
  // Memory stays: the vendor's programs free their blocks after resetting.
  if (acl_host::ThreadDevice() == deviceId) acl_host::ThreadDevice() = -1;
  return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *deviceId) {
  if (deviceId == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is NULL");
  if (acl_host::ThreadDevice() < 0) {
    return Fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice: no device set on this thread (call aclrtSetDevice)");
  }
  *deviceId = acl_host::ThreadDevice();
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t *count) {
  if (count == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is NULL");
  *count = acl_host::DeviceCount();
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void) { return ACL_SUCCESS; }

aclError aclrtGetPhyDevIdByLogicDevId(const int32_t logicDevId, int32_t *const phyDevId) {
  if (phyDevId == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetPhyDevIdByLogicDevId: phyDevId is NULL");
  aclError e = CheckDevice("aclrtGetPhyDevIdByLogicDevId", logicDevId);
  if (e != ACL_SUCCESS) return e;
  *phyDevId = logicDevId;
  return ACL_SUCCESS;
}

aclError aclrtGetLogicDevIdByUserDevId(const int32_t userDevid, int32_t *const logicDevId) {
  if (logicDevId == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetLogicDevIdByUserDevId: logicDevId is NULL");
  aclError e = CheckDevice("aclrtGetLogicDevIdByUserDevId", userDevid);
  if (e != ACL_SUCCESS) return e;
  *logicDevId = userDevid;
  return ACL_SUCCESS;
}

const char *aclrtGetSocName(void) {
  static const char *const name = [] {
    const char *env = getenv("ADXL_ACL_HOST_SOC_NAME");
    return env != nullptr && *env != '\0' ? env : "Ascend910B3";
  }();
  return name;
}

aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
  if (context == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context is NULL");
  aclError e = CheckDevice("aclrtCreateContext", deviceId);
  if (e != ACL_SUCCESS) return e;
  *context = ContextOf(deviceId);
  acl_host::ThreadDevice() = deviceId;  // a new context becomes the thread's current one
  return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
  int32_t device = 0;
  if (!ContextDevice(context, &device)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtDestroyContext(%p): unknown context", context);
  }
  return ACL_SUCCESS;  // one context per device lives as long as the process
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  int32_t device = 0;
  if (!ContextDevice(context, &device)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtSetCurrentContext(%p): unknown context", context);
  }
  acl_host::ThreadDevice() = device;
  return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context) {
  if (context == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: context is NULL");
  if (acl_host::ThreadDevice() < 0) {
    return Fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetCurrentContext: no context on this thread (call aclrtSetDevice)");
  }
  *context = ContextOf(acl_host::ThreadDevice());
  return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream *stream) {
  if (stream == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is NULL");
  try {
    *stream = acl_host::Streams::Get().Create();
  } catch (...) {  // no exception leaves a C call
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtCreateStream: out of memory");
  }
  return ACL_SUCCESS;
}

aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag) {
  (void)priority;  // one queue: work runs when submitted
  (void)flag;
  if (stream == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStreamWithConfig: stream is NULL");
  return aclrtCreateStream(stream);
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  if (timeout < -1) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStreamWithTimeout: timeout %d (ms, or -1)", timeout);
  }
  if (stream != nullptr && !acl_host::Streams::Get().Has(stream)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtSynchronizeStreamWithTimeout(%p): unknown stream", stream);
  }
  return ACL_SUCCESS;  // work ran when it was submitted
}

aclError aclrtStreamAbort(aclrtStream stream) {
  if (stream == nullptr || !acl_host::Streams::Get().Has(stream)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtStreamAbort(%p): unknown stream", stream);
  }
  return ACL_SUCCESS;  // nothing is pending: work ran when it was submitted
}

aclError aclrtDestroyStream(aclrtStream stream) {
  if (!acl_host::Streams::Get().Destroy(stream)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtDestroyStream(%p): unknown stream (never created, or destroyed)",
                stream);
  }
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  if (stream != nullptr && !acl_host::Streams::Get().Has(stream)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtSynchronizeStream(%p): unknown stream", stream);
  }
  return ACL_SUCCESS;  // work ran when it was submitted
}

const char *aclGetRecentErrMsg(void) { return acl_host::TakeRecentError(); }

}  // extern "C"
