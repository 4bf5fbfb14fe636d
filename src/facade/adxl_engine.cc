// The public AdxlEngine: forwards to the engine core (core/engine.h) and
// implements the static helpers.
#include "adxl/adxl_engine.h"

#include <string>

#include "memory/acl_host.h"
#include "memory/device_memory.h"
#include "core/engine.h"
#include "memory/host_memory.h"
#include "common/log.h"

namespace adxl {

// The public header names a nested impl class (source compatibility with the
// vendor's header); it only owns the core.
class AdxlEngine::AdxlEngineImpl {
 public:
  Engine core;
};

AdxlEngine::AdxlEngine() : impl_(std::make_unique<AdxlEngineImpl>()) {}
AdxlEngine::~AdxlEngine() = default;

Status AdxlEngine::Initialize(const AscendString &local_engine, const std::map<AscendString, AscendString> &options) {
  return impl_->core.Initialize(local_engine, options);
}
void AdxlEngine::Finalize() { impl_->core.Finalize(); }
Status AdxlEngine::RegisterMem(const MemDesc &mem, MemType type, MemHandle &mem_handle) {
  return impl_->core.RegisterMem(mem, type, mem_handle);
}
Status AdxlEngine::DeregisterMem(MemHandle mem_handle) { return impl_->core.DeregisterMem(mem_handle); }
Status AdxlEngine::Connect(const AscendString &remote_engine, int32_t timeout_in_millis) {
  return impl_->core.Connect(remote_engine, timeout_in_millis);
}
Status AdxlEngine::Disconnect(const AscendString &remote_engine, int32_t timeout_in_millis) {
  return impl_->core.Disconnect(remote_engine, timeout_in_millis);
}
Status AdxlEngine::TransferSync(const AscendString &remote_engine, TransferOp operation,
                                const std::vector<TransferOpDesc> &op_descs, int32_t timeout_in_millis) {
  return impl_->core.TransferSync(remote_engine, operation, op_descs, timeout_in_millis);
}
Status AdxlEngine::TransferAsync(const AscendString &remote_engine, TransferOp operation,
                                 const std::vector<TransferOpDesc> &op_descs, const TransferArgs &,
                                 TransferReq &req) {
  return impl_->core.TransferAsync(remote_engine, operation, op_descs, req);
}
Status AdxlEngine::GetTransferStatus(const TransferReq &req, TransferStatus &status) {
  return impl_->core.GetTransferStatus(req, status);
}
Status AdxlEngine::SendNotify(const AscendString &remote_engine, const NotifyDesc &notify, int32_t timeout_in_millis) {
  return impl_->core.SendNotify(remote_engine, notify, timeout_in_millis);
}
Status AdxlEngine::GetNotifies(std::vector<NotifyDesc> &notifies) { return impl_->core.GetNotifies(notifies); }

// The extensions (adxl_ext.h) reach the engine behind an AdxlEngine here.
struct ext::EngineAccess {
  static Engine &Core(AdxlEngine &engine) { return engine.impl_->core; }
};

Status ext::GetLinkInfo(AdxlEngine &engine, const AscendString &remote_engine, ext::LinkInfo &info) {
  return ext::EngineAccess::Core(engine).GetLinkInfo(remote_engine, info);
}

Status ext::GetLinkRegions(AdxlEngine &engine, const AscendString &remote_engine,
                           std::vector<ext::LinkRegion> &regions) {
  return ext::EngineAccess::Core(engine).GetLinkRegions(remote_engine, regions);
}

Status ext::GetLinkStats(AdxlEngine &engine, const AscendString &remote_engine, ext::LinkStats &stats) {
  return ext::EngineAccess::Core(engine).GetLinkStats(remote_engine.GetString(), &stats);
}

Status ext::GetAllLinkStats(AdxlEngine &engine, std::vector<ext::LinkStats> &stats, ext::LinkStats *totals) {
  return ext::EngineAccess::Core(engine).GetAllLinkStats(&stats, totals);
}

Status ext::RenderPrometheus(AdxlEngine &engine, std::string &text) {
  return ext::EngineAccess::Core(engine).RenderPrometheus(&text);
}

Status ext::PublishMetadata(AdxlEngine &engine, const AscendString &name, const std::string &blob) {
  return ext::EngineAccess::Core(engine).PublishMetadata(std::string(name.GetString(), name.GetLength()), blob);
}

Status ext::AwaitMetadataDelivered(AdxlEngine &engine, const AscendString &name) {
  return ext::EngineAccess::Core(engine).AwaitMetadataDelivered(std::string(name.GetString(), name.GetLength()));
}

Status ext::GetPeerMetadata(AdxlEngine &engine, const AscendString &remote_engine, const AscendString &name,
                            std::string &blob, uint64_t &version, int32_t refresh_timeout_ms) {
  return ext::EngineAccess::Core(engine).GetPeerMetadata(remote_engine.GetString(), std::string(name.GetString(), name.GetLength()),
                                            refresh_timeout_ms, &blob, &version);
}

Status AdxlEngine::GetCapability(FeatureType feature_type, int32_t &value) {
  if (static_cast<int32_t>(feature_type) < 0) {
    ADXL_ERROR("GetCapability: negative feature %d", static_cast<int32_t>(feature_type));
    return PARAM_INVALID;
  }
  value = (feature_type == AUTO_CONNECT || feature_type == CLIENT_SERVER_COMM) ? FEATURE_SUPPORTED
                                                                               : FEATURE_NOT_SUPPORTED;
  return SUCCESS;
}

Status AdxlEngine::MallocMem(MemType type, size_t size, void **ptr) {
  if (size == 0 || ptr == nullptr || (type != MEM_HOST && type != MEM_DEVICE)) {
    ADXL_ERROR("MallocMem: %s", size == 0 ? "size 0" : ptr == nullptr ? "null ptr" : "unknown memory type");
    return PARAM_INVALID;
  }
  std::string why;
  if (type == MEM_DEVICE) {
    Status s = DeviceAlloc(size, ptr, &why);
    if (s == UNSUPPORTED) {
      // No CUDA device: the host ACL emulation's device memory, if the
      // process has the emulation (memory/acl_host.h).
      std::string acl_why;
      s = AclHostAlloc(size, ptr, &acl_why);
      if (s != UNSUPPORTED) why = acl_why;
      else why += "; " + acl_why;
    }
    if (s != SUCCESS) ADXL_ERROR("MallocMem(MEM_DEVICE, %zu): %s", size, why.c_str());
    return s;
  }
  Status s = HostAlloc(size, ptr, &why);
  if (s != SUCCESS) ADXL_ERROR("MallocMem(MEM_HOST, %zu): %s", size, why.c_str());
  return s;
}

Status AdxlEngine::ExportToShareableHandle(void *addr, ShareableHandle &handle) {
  if (IsDeviceBlock(addr) || IsAclHostBlock(addr)) {
    ADXL_ERROR("ExportToShareableHandle(%p): a MallocMem(MEM_DEVICE) block; device memory has no shareable handle "
               "here (peers reach it through RegisterMem and the transport)",
               addr);
    return UNSUPPORTED;
  }
  std::string why;
  Status s = HostExport(addr, &handle, &why);
  if (s != SUCCESS) ADXL_ERROR("ExportToShareableHandle(%p): %s", addr, why.c_str());
  return s;
}

Status AdxlEngine::FreeMem(void *ptr) {
  std::string why;
  Status s = SUCCESS;
  if (DeviceFree(ptr, &s, &why)) {
    if (s != SUCCESS) ADXL_ERROR("FreeMem(%p) (device memory): %s", ptr, why.c_str());
    return s;
  }
  if (AclHostFree(ptr, &s, &why)) {
    if (s != SUCCESS) ADXL_ERROR("FreeMem(%p) (emulated device memory): %s", ptr, why.c_str());
    return s;
  }
  s = HostFree(ptr, &why);
  if (s != SUCCESS) ADXL_ERROR("FreeMem(%p): %s", ptr, why.c_str());
  return s;
}

}  // namespace adxl
