// Native part of the llm_datadist Python package (module llm_datadist._native):
// the public C++ API, the vendor's llm_datadist::LlmDataDist and our
// extension's calls on it (include/llm_datadist/llm_datadist_ext.h), with
// statuses, no exceptions.  Public headers only.  The package's Python code
// (llm_datadist/__init__.py) checks argument types and turns statuses into
// exceptions as docs/contract.md §10 says.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "llm_datadist/llm_datadist.h"
#include "llm_datadist/llm_datadist_ext.h"
#include "llm_datadist/llm_datadist_host_pool.h"
#include "released.h"

namespace py = pybind11;
using llm_datadist::LlmDataDist;
using llm_datadist::LlmRole;
using llm_datadist::Status;
using namespace llm_datadist::ext;
namespace llm_datadist::ext::python { void RegisterLayerwise(py::module_ &m); }  // llm_datadist_layerwise.cc

using Options = std::map<llm_datadist::AscendString, llm_datadist::AscendString>;

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

Options ToOptions(const std::map<std::string, std::string> &o) {
  Options opts;
  for (const auto &kv : o) opts.emplace(kv.first.c_str(), kv.second.c_str());
  return opts;
}

std::vector<ClusterEngine> ToClusters(const std::vector<std::pair<uint64_t, std::string>> &cl) {
  std::vector<ClusterEngine> infos;
  for (const auto &c : cl) infos.push_back({c.first, c.second});
  return infos;
}

template <typename Key>
Status PullCacheT(LlmDataDist &dd, const Key &k, const Cache &c, uint32_t b, int64_t size, OptRange s, OptRange d,
                  uint32_t t) {
  py::gil_scoped_release nogil;
  return PullCache(dd, k, c, b, size, Layers(s, d, t));
}

template <typename Key>
Status PullBlocksT(LlmDataDist &dd, const Key &k, const Cache &c, const Blocks &sb, const Blocks &db, OptRange s,
                   OptRange d, uint32_t t) {
  py::gil_scoped_release nogil;
  return PullBlocks(dd, k, c, sb, db, Layers(s, d, t));
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  // Element types, from the one table (llm_datadist_ext_types.h).
  py::enum_<DataType> data_type(m, "DataType");
  for (const DataTypeInfo &t : kDataTypeTable) data_type.value(t.name, t.value);
  py::enum_<Placement>(m, "Placement").value("HOST", Placement::HOST).value("DEVICE", Placement::DEVICE);
  m.def("data_type_size", [](DataType t) { return DataTypeSize(t); });
  // Statuses, from the cache layer's one table (ext::StatusTable): the
  // rows first, then the aliases, as (name, value, description) tuples;
  // LLMStatusCode is built from them in llm_datadist/__init__.py.
  m.def("status_name", [](Status s) { return std::string(StatusName(s)); });
  m.def("log_refusal", [](const std::string &message) { LogRefusal(message.c_str()); },
        "One ERROR line of the cache layer, for a call the package refuses before it reaches that layer.");
  m.def("status_table", [] {
    py::list table;
    for (const adxl::StatusInfo &s : StatusTable()) table.append(py::make_tuple(s.name, s.value, s.description));
    return table;
  });
  m.attr("MAX_REGISTERED_ADDRS") = kMaxRegisteredAddrs;
  m.attr("TRANSFER_BACKENDS") = py::tuple(py::cast(TransferBackends()));
  // The one table of the option keys that go to the engine (ext::EngineOptionKey):
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
      // A cache as the package holds it, for swap_blocks (whose host cache
      // may be Cache.create_cpu_cache's, never registered).
      .def(py::init([](int64_t id, const CacheDesc &d, const std::vector<uintptr_t> &a, bool paged) {
        Cache c;
        c.cache_id = id;
        c.cache_desc = d;
        c.tensor_addrs = a;
        c.paged = paged;
        return c;
      }))
      .def_readonly("cache_id", &Cache::cache_id)
      .def_readonly("cache_desc", &Cache::cache_desc)
      .def_readonly("tensor_addrs", &Cache::tensor_addrs)
      .def_readonly("paged", &Cache::paged)
      .def_readonly("remote_accessible", &Cache::remote_accessible);

  py::enum_<LlmRole>(m, "LlmRole")
      .value("kPrompt", LlmRole::kPrompt)
      .value("kDecoder", LlmRole::kDecoder)
      .value("kMix", LlmRole::kMix);
  // One cluster: the vendor's LlmDataDist, driven through its own calls
  // (finalize, unregister_cache) and our extension's (the rest).
  py::class_<LlmDataDist>(m, "LlmDataDist")
      .def(py::init<uint64_t, LlmRole>())
      .def("initialize",
           [](LlmDataDist &dd, const std::string &local, const std::map<std::string, std::string> &o) {
             const Options opts = ToOptions(o);
             py::gil_scoped_release nogil;
             return InitializeEngine(dd, local, opts);
           })
      .def("finalize",
           [](LlmDataDist &dd) {
             py::gil_scoped_release nogil;
             dd.Finalize();
           })
      .def("set_sync_timeout", [](LlmDataDist &dd, int32_t ms) { return SetSyncTimeout(dd, ms); })
      .def("registered_addr_count", [](LlmDataDist &dd) { return RegisteredAddrCount(dd); })
      .def("register_cache",
           [](LlmDataDist &dd, const CacheDesc &d, const std::vector<uintptr_t> &a, const std::vector<CacheKey> &k,
              std::optional<bool> ra) {
             return WithOut(Cache{}, [&](Cache &c) { return RegisterCache(dd, d, a, k, ra, c); });
           })
      .def("register_blocks_cache",
           [](LlmDataDist &dd, const CacheDesc &d, const std::vector<uintptr_t> &a,
              const std::optional<BlocksCacheKey> &k, std::optional<bool> ra) {
             return WithOut(Cache{}, [&](Cache &c) { return RegisterBlocksCache(dd, d, a, k, ra, c); });
           })
      .def("unregister_cache",
           [](LlmDataDist &dd, int64_t id) {
             py::gil_scoped_release nogil;
             return dd.UnregisterKvCache(id);
           })
      .def("link_clusters",
           [](LlmDataDist &dd, const std::vector<std::pair<uint64_t, std::string>> &cl, int32_t t) {
             const std::vector<ClusterEngine> infos = ToClusters(cl);
             return WithOut(std::vector<Status>{}, [&](auto &rets) { return LinkClusters(dd, infos, rets, t); });
           })
      .def(
          "unlink_clusters",
          [](LlmDataDist &dd, const std::vector<std::pair<uint64_t, std::string>> &cl, int32_t t, bool force) {
            const std::vector<ClusterEngine> infos = ToClusters(cl);
            return WithOut(std::vector<Status>{},
                           [&](auto &rets) { return UnlinkClusters(dd, infos, rets, t, force); });
          },
          py::arg("clusters"), py::arg("timeout"), py::arg("force") = false)
      .def("rebind",
           [](LlmDataDist &dd, const std::string &local, const std::map<std::string, std::string> &o,
              const std::string &what) {
             const Options opts = ToOptions(o);
             py::gil_scoped_release nogil;
             return MoveListener(dd, local, opts, what.c_str());
           },
           py::arg("local"), py::arg("options"), py::arg("what") = "switch_role")
      // The rank-table link: (status, comm id); waits for the peers with the GIL released.
      .def("link_rank_table",
           [](LlmDataDist &dd, const std::string &comm_name, const std::vector<std::pair<uint64_t, uint32_t>> &ranks,
              const std::string &rank_table) {
             return WithOut(uint64_t{0},
                            [&](uint64_t &id) { return LinkRankTable(dd, comm_name, ranks, rank_table, id); });
           })
      .def("unlink_comm",
           [](LlmDataDist &dd, uint64_t comm_id) {
             py::gil_scoped_release nogil;
             return UnlinkComm(dd, comm_id);
           })
      .def("query_register_mem_status",
           [](LlmDataDist &dd, uint64_t comm_id) { return QueryRegisterMemStatus(dd, comm_id); })
      .def("pull_cache", &PullCacheT<CacheKey>)
      .def("pull_cache", &PullCacheT<CacheKeyByIdAndIndex>)
      .def("pull_blocks", &PullBlocksT<BlocksCacheKey>)
      .def("pull_blocks", &PullBlocksT<CacheKey>)
      .def("pull_blocks", &PullBlocksT<CacheKeyByIdAndIndex>)
      .def("push_cache",
           [](LlmDataDist &dd, const CacheKeyByIdAndIndex &k, const Cache &c, uint32_t b, int64_t size, OptRange s,
              OptRange d, uint32_t t) {
             py::gil_scoped_release nogil;
             return PushCache(dd, k, c, b, size, Layers(s, d, t));
           })
      .def("push_blocks",
           [](LlmDataDist &dd, const BlocksCacheKey &k, const Cache &c, const Blocks &sb, const Blocks &db,
              OptRange s, OptRange d, uint32_t t) {
             py::gil_scoped_release nogil;
             return PushBlocks(dd, k, c, sb, db, Layers(s, d, t));
           })
      .def("remove_cache_key",
           [](LlmDataDist &dd, const CacheKey &k) {
             py::gil_scoped_release nogil;
             return RemoveCacheKey(dd, k);
           })
      .def("check_link_status",
           [](LlmDataDist &dd, uint64_t cluster) {
             py::gil_scoped_release nogil;
             return CheckLinkStatus(dd, cluster);
           })
      // Local copies (copy_cache, copy_blocks): the class's own calls, by cache id.
      .def("copy_cache",
           [](LlmDataDist &dd, int64_t src, int64_t dst, uint32_t src_batch, uint32_t dst_batch, uint64_t offset,
              int64_t size) {
             llm_datadist::Cache s{}, d{};
             s.cache_id = src;
             d.cache_id = dst;
             py::gil_scoped_release nogil;
             return dd.CopyKvCache(s, d, src_batch, dst_batch, offset, size);
           })
      .def("copy_blocks",
           [](LlmDataDist &dd, int64_t src, int64_t dst, const Blocks &src_blocks,
              const std::vector<Blocks> &dst_blocks_list) {
             llm_datadist::Cache s{}, d{};
             s.cache_id = src;
             d.cache_id = dst;
             py::gil_scoped_release nogil;
             return dd.CopyKvBlocks(s, d, src_blocks, dst_blocks_list);
           })
      .def("swap_blocks", [](LlmDataDist &dd, const Cache &src, const Cache &dst, const Blocks &src_blocks,
                             const std::vector<Blocks> &dst_blocks_list) {
        py::gil_scoped_release nogil;
        return SwapKvBlocks(dd, src, dst, src_blocks, dst_blocks_list);
      });
  llm_datadist::ext::python::RegisterLayerwise(m);

  // The host memory pool of allocate_cache (llm_datadist_host_pool.h).
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
}
