// StagedTransfers: TransferSync through the buffer pool (core/buffer_pool.h)
// when the local side is unregistered host memory and BufferPool is on
// (docs/contract.md §3.5, §6.2).
//
// Decides whether a call is staged (every local range unregistered: yes;
// every one registered: no, the ordinary path; a mix: PARAM_INVALID), makes
// the pool on first use, and runs the call through it with the link's post
// and fence.  Thread-safety: any thread.  pool_mu_ is a leaf (engine.h) that
// guards pool_, held only to make or read it; the pool lives until the
// object goes (Finalize, after every call left).  The classification reads
// the registrations through Registrar::RegistryView, outside pool_mu_.
#ifndef ADXL_SRC_CORE_STAGED_TRANSFERS_H_
#define ADXL_SRC_CORE_STAGED_TRANSFERS_H_

#include <memory>
#include <string>
#include <vector>

#include "adxl/adxl_types.h"
#include "common/thread_annotations.h"
#include "config/options.h"
#include "core/buffer_pool.h"
#include "core/connector.h"
#include "core/registrar.h"
#include "transport/transport.h"

namespace adxl {

class StagedTransfers {
 public:
  StagedTransfers(std::shared_ptr<Transport> transport, const EngineOptions &options, const Registrar *registrar,
                  Connector *connector);

  // *handled false: not a staged call, continue normally.  Otherwise the
  // call's status, with *link the link it used (for counting; null when it
  // got none) and *bytes what it moved.
  Status Run(const std::string &remote, TransferOp op, const std::vector<TransferOpDesc> &descs,
             Clock::time_point deadline, int32_t timeout_ms, bool *handled, std::shared_ptr<Link> *link,
             uint64_t *bytes) ADXL_EXCLUDES(pool_mu_);

 private:
  const std::shared_ptr<Transport> transport_;
  const uint32_t buffers_;
  const uint32_t buffer_mib_;
  const Registrar *const registrar_;
  Connector *const connector_;
  Mutex pool_mu_;
  std::unique_ptr<BufferPool> pool_ ADXL_GUARDED_BY(pool_mu_);  // made on first use
};

}  // namespace adxl

#endif  // ADXL_SRC_CORE_STAGED_TRANSFERS_H_
