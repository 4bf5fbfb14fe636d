// The ACL runtime for hosts: the umbrella header the vendor's programs include
// (#include "acl/acl.h").  AN EMULATION for development and CI on machines
// without the accelerator; see acl_rt.h for what it does and does not do.
#ifndef INC_EXTERNAL_ACL_ACL_H_
#define INC_EXTERNAL_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

// The emulated runtime's version (aclrtGetVersion is not provided).
#define ACL_MAJOR_VERSION 1
#define ACL_MINOR_VERSION 0
#define ACL_PATCH_VERSION 0

#endif  // INC_EXTERNAL_ACL_ACL_H_
