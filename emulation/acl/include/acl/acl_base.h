// ACL base types and return codes, as the vendor's acl/acl_base.h names them,
// for the host emulation of the ACL runtime (emulation/acl/README.md).
//
// THIS IS AN EMULATION for development and CI on machines without the
// accelerator: "device" memory is host memory, and only the runtime calls that
// KV-transfer programs use exist.  It installs into its own include and lib
// directory so that it never shadows a real ACL runtime.
#ifndef INC_EXTERNAL_ACL_ACL_BASE_H_
#define INC_EXTERNAL_ACL_ACL_BASE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Always default visibility: the library is built with hidden symbols and
// exports exactly the calls declared here.
#define ACL_FUNC_VISIBILITY __attribute__((visibility("default")))

typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclrtContext;
typedef int aclError;
typedef uint16_t aclFloat16;

// Return codes (values are the vendor's).
static const int ACL_ERROR_NONE = 0;
static const int ACL_SUCCESS = 0;
static const int ACL_ERROR_INVALID_PARAM = 100000;
static const int ACL_ERROR_UNINITIALIZE = 100001;
static const int ACL_ERROR_REPEAT_INITIALIZE = 100002;
static const int ACL_ERROR_INVALID_FILE = 100003;
static const int ACL_ERROR_BAD_ALLOC = 200000;
static const int ACL_ERROR_API_NOT_SUPPORT = 200001;
static const int ACL_ERROR_INVALID_DEVICE = 200002;
static const int ACL_ERROR_INTERNAL_ERROR = 500000;
static const int ACL_ERROR_FAILURE = 500001;

// Runtime return codes (the vendor's rt error codes).
static const int32_t ACL_RT_SUCCESS = 0;
static const int32_t ACL_ERROR_RT_PARAM_INVALID = 107000;
static const int32_t ACL_ERROR_RT_INVALID_DEVICEID = 107001;
static const int32_t ACL_ERROR_RT_CONTEXT_NULL = 107002;
static const int32_t ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000;
static const int32_t ACL_ERROR_RT_MEMORY_ALLOCATION = 207001;
static const int32_t ACL_ERROR_RT_INTERNAL_ERROR = 507000;

// The most recent error message of the calling thread, or NULL when there is
// none.  In this emulation: the last ERROR the ADXL engine (or this runtime)
// reported on the thread; reading it clears it, and the text stays valid until
// the thread's next call of aclGetRecentErrMsg.
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void);

#ifdef __cplusplus
}
#endif

#endif  // INC_EXTERNAL_ACL_ACL_BASE_H_
