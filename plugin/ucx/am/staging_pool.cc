#include "am/staging_pool.h"

void StagingPool::Buffer::Reset() {
  if (pool_ != nullptr && data_ != nullptr) pool_->Put(data_, memh_);
  pool_ = nullptr;
  data_ = nullptr;
  memh_ = nullptr;
}

void StagingPool::Init(ucp_context_h ucp, size_t max_buffers) {
  ucp_ = ucp;
  max_buffers_ = max_buffers;
}

StagingPool::Buffer StagingPool::Get() {
  {
    adxl::MutexLock l(&mu_);
    if (!free_.empty()) {
      const Entry e = free_.back();
      free_.pop_back();
      return Buffer(this, e.data, e.memh);
    }
    if (ucp_ == nullptr || all_.size() + growing_ >= max_buffers_) return Buffer();
    ++growing_;
  }
  // Grow by one, outside the lock: ucp_mem_map allocates and registers.
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  p.address = nullptr;
  p.length = kBufferBytes;
  p.flags = UCP_MEM_MAP_ALLOCATE;
  ucp_mem_h memh = nullptr;
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
  const bool ok = ucp_mem_map(ucp_, &p, &memh) == UCS_OK;
  if (ok && ucp_mem_query(memh, &attr) != UCS_OK) attr.address = nullptr;
  bool keep = ok && attr.address != nullptr;
  {
    adxl::MutexLock l(&mu_);
    --growing_;
    if (keep) {
      try {
        free_.reserve(all_.size() + 1);  // Put() then never allocates
        all_.push_back({static_cast<char *>(attr.address), memh});
      } catch (...) {
        keep = false;
      }
    }
  }
  if (!keep) {
    if (ok) ucp_mem_unmap(ucp_, memh);
    return Buffer();
  }
  return Buffer(this, static_cast<char *>(attr.address), memh);
}

void StagingPool::Put(char *data, ucp_mem_h memh) {
  adxl::MutexLock l(&mu_);
  free_.push_back({data, memh});  // capacity reserved in Get()
}

void StagingPool::Close() {
  std::vector<Entry> all;
  {
    adxl::MutexLock l(&mu_);
    all.swap(all_);
    free_.clear();
  }
  for (const Entry &e : all) ucp_mem_unmap(ucp_, e.memh);
}
