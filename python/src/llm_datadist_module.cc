// Native part of the llm_datadist Python package (module llm_datadist._native):
// the C++ cache layer with statuses, no exceptions.  The package's Python code
// (llm_datadist/__init__.py) checks argument types and turns statuses into
// exceptions as docs/contract.md §10 says.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <iterator>
#include <tuple>

#include "cache_manager.h"
#include "host_pool.h"
#include "options.h"

namespace py = pybind11;
using namespace llm_datadist::internal;
namespace llm_datadist::internal::python { void RegisterLayerwise(py::module_ &m); }  // llm_datadist_layerwise.cc

namespace {

std::optional<LayerRange> Range(const std::optional<std::pair<uint32_t, uint32_t>> &r) {
  if (!r) return std::nullopt;
  return LayerRange{r->first, r->second};
}

LayerRangeArgs Layers(const std::optional<std::pair<uint32_t, uint32_t>> &src,
                      const std::optional<std::pair<uint32_t, uint32_t>> &dst, uint32_t tnpl) {
  LayerRangeArgs a;
  a.src_layer_range = Range(src);
  a.dst_layer_range = Range(dst);
  a.tensor_num_per_layer = tnpl;
  return a;
}

using OptRange = std::optional<std::pair<uint32_t, uint32_t>>;
using Blocks = std::vector<uint64_t>;

template <typename Key>
Status PullCacheT(CacheManager &m, const Key &k, const Cache &c, uint32_t b, int64_t size, OptRange s, OptRange d,
                  uint32_t t) {
  py::gil_scoped_release nogil;
  return m.PullCache(k, c, b, size, Layers(s, d, t));
}

template <typename Key>
Status PullBlocksT(CacheManager &m, const Key &k, const Cache &c, const Blocks &sb, const Blocks &db, OptRange s,
                   OptRange d, uint32_t t) {
  py::gil_scoped_release nogil;
  return m.PullBlocks(k, c, sb, db, Layers(s, d, t));
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  // Element types, from the one table (src/llm_datadist/cache_types.h).
  py::enum_<DataType> data_type(m, "DataType");
  for (const DataTypeInfo &t : kDataTypeTable) data_type.value(t.name, t.value);
  py::enum_<Placement>(m, "Placement").value("HOST", Placement::HOST).value("DEVICE", Placement::DEVICE);
  m.def("data_type_size", [](DataType t) { return DataTypeSize(t); });
  // Statuses, from the one table (src/llm_datadist/cache_types.h): the
  // rows first, then the aliases, as (name, value, description) tuples;
  // LLMStatusCode is built from them in llm_datadist/__init__.py.
  m.def("status_name", &StatusName);
  m.def("log_refusal", [](const std::string &message) { LogRefusal(message.c_str()); },
        "One ERROR line of the cache layer, for a call the package refuses before it reaches that layer.");
  m.def("status_table", [] {
    py::list table;
    for (const StatusInfo &s : kStatusTable) table.append(py::make_tuple(s.name, s.value, s.description));
    for (const StatusInfo &s : kStatusAliases) table.append(py::make_tuple(s.name, s.value, s.description));
    return table;
  });
  m.attr("MAX_REGISTERED_ADDRS") = kMaxRegisteredAddrs;
  py::tuple backends(std::size(kTransferBackends));
  for (size_t i = 0; i < std::size(kTransferBackends); ++i) backends[i] = py::str(kTransferBackends[i]);
  m.attr("TRANSFER_BACKENDS") = backends;
  // The one table of the option keys that go to the engine (options.h):
  // (engine key, drop_empty) for such a key, None for any other.
  m.def("engine_option_key", [](const std::string &key) -> std::optional<std::pair<std::string, bool>> {
    const std::optional<EngineKey> to = EngineOptionKey(key);
    if (!to) return std::nullopt;
    return std::make_pair(to->name, to->drop_empty);
  });

  py::class_<CacheDesc>(m, "CacheDesc")
      .def(py::init<>())
      .def_readwrite("num_tensors", &CacheDesc::num_tensors)
      .def_readwrite("shape", &CacheDesc::shape)
      .def_readwrite("data_type", &CacheDesc::data_type)
      .def_readwrite("placement", &CacheDesc::placement)
      .def_readwrite("batch_dim_index", &CacheDesc::batch_dim_index)
      .def_readwrite("seq_len_dim_index", &CacheDesc::seq_len_dim_index);
  py::class_<CacheKey>(m, "CacheKey")
      .def(py::init([](uint64_t c, uint64_t r, uint64_t mo, uint64_t p) { return CacheKey{c, r, mo, p}; }));
  py::class_<CacheKeyByIdAndIndex>(m, "CacheKeyByIdAndIndex")
      .def(py::init([](uint64_t c, int64_t id, uint32_t b) { return CacheKeyByIdAndIndex{c, id, b}; }));
  py::class_<BlocksCacheKey>(m, "BlocksCacheKey")
      .def(py::init([](uint64_t c, uint64_t mo) { return BlocksCacheKey{c, mo}; }));
  py::class_<Cache>(m, "Cache")
      .def_readonly("cache_id", &Cache::cache_id)
      .def_readonly("cache_desc", &Cache::cache_desc)
      .def_readonly("tensor_addrs", &Cache::tensor_addrs)
      .def_readonly("paged", &Cache::paged)
      .def_readonly("remote_accessible", &Cache::remote_accessible);

  py::class_<CacheManager>(m, "CacheManager")
      .def(py::init<>())
      .def("initialize",
           [](CacheManager &cm, uint64_t id, const std::string &local, const std::map<std::string, std::string> &o) {
             std::map<adxl::AscendString, adxl::AscendString> opts;
             for (const auto &kv : o) opts.emplace(kv.first.c_str(), kv.second.c_str());
             py::gil_scoped_release nogil;
             return cm.Initialize(id, local, opts);
           })
      .def("finalize",
           [](CacheManager &cm) {
             py::gil_scoped_release nogil;
             cm.Finalize();
           })
      .def("set_sync_timeout", &CacheManager::SetSyncTimeout)
      .def("registered_addr_count", &CacheManager::RegisteredAddrCount)
      .def("register_cache",
           [](CacheManager &cm, const CacheDesc &d, const std::vector<uintptr_t> &a, const std::vector<CacheKey> &k,
              std::optional<bool> ra) {
             Cache c;
             Status s;
             {
               py::gil_scoped_release nogil;
               s = cm.RegisterCache(d, a, k, ra, c);
             }
             return py::make_tuple(s, c);
           })
      .def("register_blocks_cache",
           [](CacheManager &cm, const CacheDesc &d, const std::vector<uintptr_t> &a,
              const std::optional<BlocksCacheKey> &k, std::optional<bool> ra) {
             Cache c;
             Status s;
             {
               py::gil_scoped_release nogil;
               s = cm.RegisterBlocksCache(d, a, k, ra, c);
             }
             return py::make_tuple(s, c);
           })
      .def("unregister_cache",
           [](CacheManager &cm, int64_t id) {
             py::gil_scoped_release nogil;
             return cm.UnregisterCache(id);
           })
      .def("link_clusters",
           [](CacheManager &cm, const std::vector<std::pair<uint64_t, std::string>> &cl, int32_t t) {
             std::vector<ClusterInfo> infos;
             for (const auto &c : cl) infos.push_back({c.first, c.second});
             std::vector<Status> rets;
             Status s;
             {
               py::gil_scoped_release nogil;
               s = cm.LinkClusters(infos, rets, t);
             }
             return py::make_tuple(s, rets);
           })
      .def(
          "unlink_clusters",
          [](CacheManager &cm, const std::vector<std::pair<uint64_t, std::string>> &cl, int32_t t, bool force) {
            std::vector<ClusterInfo> infos;
            for (const auto &c : cl) infos.push_back({c.first, c.second});
            std::vector<Status> rets;
            Status s;
            {
              py::gil_scoped_release nogil;
              s = cm.UnlinkClusters(infos, rets, t, force);
            }
            return py::make_tuple(s, rets);
          },
          py::arg("clusters"), py::arg("timeout"), py::arg("force") = false)
      .def("rebind",
           [](CacheManager &cm, const std::string &local, const std::map<std::string, std::string> &o,
              const std::string &what) {
             std::map<adxl::AscendString, adxl::AscendString> opts;
             for (const auto &kv : o) opts.emplace(kv.first.c_str(), kv.second.c_str());
             py::gil_scoped_release nogil;
             return cm.Rebind(local, opts, what.c_str());
           },
           py::arg("local"), py::arg("options"), py::arg("what") = "switch_role")
      .def("pull_cache", &PullCacheT<CacheKey>)
      .def("pull_cache", &PullCacheT<CacheKeyByIdAndIndex>)
      .def("pull_blocks", &PullBlocksT<BlocksCacheKey>)
      .def("pull_blocks", &PullBlocksT<CacheKey>)
      .def("pull_blocks", &PullBlocksT<CacheKeyByIdAndIndex>)
      .def("push_cache",
           [](CacheManager &cm, const CacheKeyByIdAndIndex &k, const Cache &c, uint32_t b, int64_t size, OptRange s,
              OptRange d, uint32_t t) {
             py::gil_scoped_release nogil;
             return cm.PushCache(k, c, b, size, Layers(s, d, t));
           })
      .def("push_blocks", [](CacheManager &cm, const BlocksCacheKey &k, const Cache &c, const Blocks &sb,
                             const Blocks &db, OptRange s, OptRange d, uint32_t t) {
        py::gil_scoped_release nogil;
        return cm.PushBlocks(k, c, sb, db, Layers(s, d, t));
      });
  llm_datadist::internal::python::RegisterLayerwise(m);

  // ---- The reference package's Python surface: additions ----
  // remove_cache_key / check_link_status (CacheManager), and the host memory
  // pool of allocate_cache (host_pool.h).
  py::class_<CacheManager> cm_more = py::reinterpret_borrow<py::class_<CacheManager>>(m.attr("CacheManager"));
  cm_more
      .def("remove_cache_key",
           [](CacheManager &cm, const CacheKey &k) {
             py::gil_scoped_release nogil;
             return cm.RemoveCacheKey(k);
           })
      .def("check_link_status", [](CacheManager &cm, uint64_t cluster) {
        py::gil_scoped_release nogil;
        return cm.CheckLinkStatus(cluster);
      });
  py::class_<HostPool>(m, "HostPool")
      .def(py::init<>())
      .def("init", [](HostPool &p, size_t size) {
        py::gil_scoped_release nogil;
        return p.Init(size);
      })
      .def("alloc",
           [](HostPool &p, size_t nbytes) {
             HostPool::Chunk c{0, 0};
             const Status s = p.Alloc(nbytes, &c);
             return py::make_tuple(s, c.first, c.second);
           })
      .def("release", &HostPool::Release)
      .def("free_bytes", &HostPool::FreeBytes)
      .def_property_readonly("base", &HostPool::Base)
      .def_property_readonly("size", &HostPool::Size)
      .def("close", [](HostPool &p) {
        py::gil_scoped_release nogil;
        p.Close();
      });
  m.attr("HOST_POOL_ALIGN") = HostPool::kAlign;
  // Local copies between registered host tensors (copy_cache, copy_blocks):
  // (dst, src, len) triples, GIL released.
  m.def("copy_host", [](const std::vector<std::tuple<uintptr_t, uintptr_t, size_t>> &ops) {
    py::gil_scoped_release nogil;
    for (const auto &op : ops) {
      std::memmove(reinterpret_cast<void *>(std::get<0>(op)), reinterpret_cast<const void *>(std::get<1>(op)),
                   std::get<2>(op));
    }
  });
  // ---- end of Python-surface additions ----
}
