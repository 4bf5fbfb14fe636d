// The calling thread's most recent ERROR line, kept for the ACL runtime's
// aclGetRecentErrMsg: programs written for the vendor's stack print it when a
// call fails, and with the host ACL emulation (emulation/acl) it should say
// what the engine said.  Two C functions, exported from libadxl and found by
// the emulation with dlsym(RTLD_DEFAULT), so neither library links the other.
//
// Every ERROR the engine or the cache layer reports is recorded here (by
// LogWrite, common/log.cc), whatever ADXL_LOG_LEVEL says is printed.
#ifndef ADXL_SRC_COMMON_RECENT_ERROR_H_
#define ADXL_SRC_COMMON_RECENT_ERROR_H_

#include <stddef.h>
#include <stdint.h>

extern "C" {

// Records msg as the calling thread's most recent error, stamped with
// CLOCK_MONOTONIC (ns), so that a reader can tell which of two records came
// last.
__attribute__((visibility("default"))) void adxl_recent_error_record(const char *msg);

// Copies the thread's most recent error (NUL-terminated, cut to size) into buf
// and clears it; *stamp_ns (may be NULL) gets its stamp.  1 when there was
// one, 0 when not (buf untouched).
__attribute__((visibility("default"))) int adxl_recent_error_take(char *buf, size_t size, uint64_t *stamp_ns);

}  // extern "C"

#endif  // ADXL_SRC_COMMON_RECENT_ERROR_H_
