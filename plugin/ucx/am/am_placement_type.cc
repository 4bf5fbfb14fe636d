// PlacementType: UCP's generic datatype over a Placement (am_placement.h).
// Apart from Placement itself (am_placement.cc, which calls nothing of UCP
// and is a library of its own for the unit tests).
#include <string>

#include "am/am_placement.h"

namespace {

// UCP's generic-datatype callbacks: the receive buffer is the Placement.
void *StartPack(void *, const void *, size_t) { return nullptr; }  // never sent with this type
void *StartUnpack(void *, void *buffer, size_t) { return buffer; }
size_t PackedSize(void *state) { return state == nullptr ? 0 : static_cast<Placement *>(state)->total(); }
size_t Pack(void *, size_t, void *, size_t) { return 0; }
ucs_status_t Unpack(void *state, size_t offset, const void *src, size_t length) {
  // Always OK: a refused fragment is dropped, the receive still ends
  // normally, and its owner reads refused().
  static_cast<Placement *>(state)->Unpack(offset, src, length);
  return UCS_OK;
}
void Finish(void *) {}  // the Placement belongs to the receive's owner

}  // namespace

bool PlacementType::Create(std::string *why) {
  static const ucp_generic_dt_ops_t kOps = {StartPack, StartUnpack, PackedSize, Pack, Unpack, Finish};
  const ucs_status_t st = ucp_dt_create_generic(&kOps, nullptr, &type_);
  if (st != UCS_OK) {
    *why = std::string("ucp_dt_create_generic: ") + ucs_status_string(st);
    return false;
  }
  created_ = true;
  return true;
}

void PlacementType::Destroy() {
  if (created_) ucp_dt_destroy(type_);
  created_ = false;
}

void PlacementType::SetBuffer(Placement *placement, ucp_request_param_t *p, void **buffer, size_t *count) const {
  p->op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  p->datatype = type_;
  *buffer = placement;
  *count = 1;
}
