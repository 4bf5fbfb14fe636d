// Layer-wise push for the Python package (module llm_datadist._native):
// TransferConfig, TransferWithCacheKeyConfig, CacheTask and
// transfer_cache_async (our extension's layer-wise push:
// include/llm_datadist/llm_datadist_ext.h, llm_datadist_ext_layerwise.h).  Registered from
// the module init (llm_datadist_module.cc) by RegisterLayerwise(m).
//
// GIL: every call that waits (transfer_cache_async, which may read remote
// metadata; CacheTask.synchronize / get_results) releases it; the task's
// thread takes it only to call the Python synchronizer's synchronize_layer
// and to drop its reference.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "llm_datadist/llm_datadist.h"
#include "llm_datadist/llm_datadist_ext.h"

namespace py = pybind11;

namespace llm_datadist::ext {
namespace python {
namespace {

// A LayerSynchronizer calling obj.synchronize_layer(layer_index, timeout_in_millis)
// with the GIL: truthy -> send, falsy -> LLM_TIMEOUT, exception -> LLM_FAILED
// (reported through sys.unraisablehook).
class PyLayerSynchronizer : public LayerSynchronizer {
 public:
  explicit PyLayerSynchronizer(py::object obj) : obj_(std::move(obj)) {}
  ~PyLayerSynchronizer() override {
    if (!Py_IsInitialized()) {
      obj_.release();  // the interpreter is gone: leak rather than touch it
      return;
    }
    py::gil_scoped_acquire gil;
    obj_ = py::object();
  }
  bool SynchronizeLayer(uint32_t layer_index, int32_t timeout_ms) override {
    return WaitLayer(layer_index, timeout_ms) == LLM_SUCCESS;
  }
  Status WaitLayer(uint32_t layer_index, int32_t timeout_ms) override {
    py::gil_scoped_acquire gil;
    try {
      py::object r = obj_.attr("synchronize_layer")(layer_index, timeout_ms);
      const int truth = PyObject_IsTrue(r.ptr());
      if (truth < 0) throw py::error_already_set();
      return truth == 1 ? LLM_SUCCESS : LLM_TIMEOUT;
    } catch (py::error_already_set &e) {
      e.discard_as_unraisable("llm_datadist: LayerSynchronizer.synchronize_layer");
      return LLM_FAILED;
    }
  }

 private:
  py::object obj_;
};

using OptRange = std::optional<std::pair<uint32_t, uint32_t>>;

std::optional<LayerRange> Range(const OptRange &r) {
  if (!r) return std::nullopt;
  return LayerRange{r->first, r->second};
}

}  // namespace

void RegisterLayerwise(py::module_ &m) {
  py::class_<TransferConfig>(m, "TransferConfig")
      .def(py::init([](uint64_t cluster, const std::vector<uintptr_t> &addrs, OptRange src, uint32_t batch) {
        return TransferConfig{cluster, addrs, Range(src), batch};
      }));
  py::class_<TransferWithCacheKeyConfig>(m, "TransferWithCacheKeyConfig")
      .def(py::init([](const std::variant<BlocksCacheKey, CacheKeyByIdAndIndex> &key, std::pair<uint32_t, uint32_t> src,
                       std::pair<uint32_t, uint32_t> dst, uint32_t batch) {
        return TransferWithCacheKeyConfig{key, LayerRange{src.first, src.second}, LayerRange{dst.first, dst.second},
                                          batch};
      }));
  py::class_<CacheTask>(m, "CacheTask")
      .def("synchronize",
           [](CacheTask &t, std::optional<int32_t> timeout_ms) {
             py::gil_scoped_release nogil;
             return t.Synchronize(timeout_ms);
           })
      .def("get_results",
           [](CacheTask &t, std::optional<int32_t> timeout_ms) {
             py::gil_scoped_release nogil;
             return t.GetResults(timeout_ms);
           })
      .def("done", &CacheTask::Done)
      .def("layers_synchronized", &CacheTask::LayersSynchronized);
  m.def("transfer_cache_async", [](LlmDataDist &dd, const Cache &src, py::object synchronizer,
                                   const std::vector<TransferTarget> &targets, const std::vector<uint64_t> &src_blocks,
                                   const std::vector<uint64_t> &dst_blocks, uint64_t dst_block_bytes) {
    auto sync = std::make_shared<PyLayerSynchronizer>(std::move(synchronizer));
    CacheTask task;
    Status s;
    {
      py::gil_scoped_release nogil;
      s = TransferCacheAsync(dd, src, sync, targets, src_blocks, dst_blocks, dst_block_bytes, task);
      sync.reset();  // the task holds its own reference; ours goes (the destructor takes the GIL)
    }
    return py::make_tuple(s, task);
  });
}

}  // namespace python
}  // namespace llm_datadist::ext
