// Python bindings of the ADXL engine (module adxl._adxl, re-exported by the
// adxl package).  Methods keep the C++ names in snake_case and return the
// C++ status; out-parameters come back in a tuple (status, value).  Blocking
// calls release the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"

namespace py = pybind11;
using namespace adxl;

namespace {

std::map<AscendString, AscendString> Options(const std::map<std::string, std::string> &in) {
  std::map<AscendString, AscendString> out;
  for (const auto &kv : in) out.emplace(kv.first.c_str(), kv.second.c_str());
  return out;
}

// Per-link statistics (adxl_ext.h LinkStats) as plain dicts: nested
// {"read": {...}, "write": {...}, "tcp_connect": {...}, ...}, keys as the
// C++ field names, so that they print and serialise (json.dumps) as they are.
py::dict PhaseDict(const ext::ConnectPhaseStats &p) {
  py::dict d;
  d["count"] = p.count;
  d["last_ns"] = p.last_ns;
  d["total_ns"] = p.total_ns;
  d["max_ns"] = p.max_ns;
  return d;
}

py::dict DirectionDict(const ext::DirectionStats &s) {
  py::dict lat;
  lat["count"] = s.latency.count;
  lat["sum_ns"] = s.latency.sum_ns;
  lat["p50_ns"] = s.latency.p50_ns;
  lat["p99_ns"] = s.latency.p99_ns;
  lat["max_ns"] = s.latency.max_ns;
  lat["buckets"] = s.latency.buckets;
  py::dict d;
  d["transfers"] = s.transfers;
  d["descriptors"] = s.descriptors;
  d["bytes"] = s.bytes;
  d["errors"] = s.errors;
  d["timeouts"] = s.timeouts;
  d["latency"] = lat;
  return d;
}

py::dict StatsDict(const ext::LinkStats &s) {
  py::dict d;
  d["remote"] = s.remote;
  d["linked"] = s.linked;
  d["connects"] = s.connects;
  d["connect_failures"] = s.connect_failures;
  d["tcp_connect"] = PhaseDict(s.tcp_connect);
  d["handshake"] = PhaseDict(s.handshake);
  d["wireup"] = PhaseDict(s.wireup);
  d["read"] = DirectionDict(s.read);
  d["write"] = DirectionDict(s.write);
  return d;
}

}  // namespace

PYBIND11_MODULE(_adxl, m) {
  m.doc() = "ADXL transfer engine (bindings of include/adxl/adxl_engine.h)";
  // Statuses, from the one table (include/adxl/adxl_types.h): the constants
  // (adxl.SUCCESS, ...), the table itself, and StatusName.  adxl.Status (an
  // IntEnum) is built from the table in adxl/__init__.py.
  for (const StatusInfo &s : kStatusTable) m.attr(s.name) = s.value;
  m.def(
      "status_table",
      [] {
        py::list table;
        for (const StatusInfo &s : kStatusTable) table.append(py::make_tuple(s.name, s.value, s.description));
        return table;
      },
      "The statuses as (name, value, description) tuples, from the C++ table.");
  m.def("status_name", [](Status s) { return StatusName(s); }, "StatusName: 'SUCCESS', ...; 'UNKNOWN' otherwise.");
  m.attr("OPTION_RDMA_TRAFFIC_CLASS") = OPTION_RDMA_TRAFFIC_CLASS;
  m.attr("OPTION_RDMA_SERVICE_LEVEL") = OPTION_RDMA_SERVICE_LEVEL;
  m.attr("OPTION_BUFFER_POOL") = OPTION_BUFFER_POOL;
  m.attr("OPTION_LOCAL_COMM_RES") = OPTION_LOCAL_COMM_RES;
  m.attr("OPTION_AUTO_CONNECT") = OPTION_AUTO_CONNECT;

  py::enum_<MemType>(m, "MemType").value("MEM_DEVICE", MEM_DEVICE).value("MEM_HOST", MEM_HOST).export_values();
  py::enum_<TransferOp>(m, "TransferOp").value("READ", READ).value("WRITE", WRITE).export_values();
  py::enum_<TransferStatus>(m, "TransferStatus")
      .value("WAITING", TransferStatus::WAITING)
      .value("COMPLETED", TransferStatus::COMPLETED)
      .value("TIMEOUT", TransferStatus::TIMEOUT)
      .value("FAILED", TransferStatus::FAILED);
  py::enum_<FeatureType>(m, "FeatureType")
      .value("AUTO_CONNECT", AUTO_CONNECT)
      .value("CLIENT_SERVER_COMM", CLIENT_SERVER_COMM);

  py::class_<MemDesc>(m, "MemDesc")
      .def(py::init([](uintptr_t addr, size_t len) { return MemDesc{addr, len}; }), py::arg("addr"), py::arg("len"))
      .def_readwrite("addr", &MemDesc::addr)
      .def_readwrite("len", &MemDesc::len)
      .def_readwrite("local_only", &MemDesc::local_only);
  py::class_<TransferOpDesc>(m, "TransferOpDesc")
      .def(py::init([](uintptr_t l, uintptr_t r, size_t n) { return TransferOpDesc{l, r, n}; }),
           py::arg("local_addr"), py::arg("remote_addr"), py::arg("len"))
      .def_readwrite("local_addr", &TransferOpDesc::local_addr)
      .def_readwrite("remote_addr", &TransferOpDesc::remote_addr)
      .def_readwrite("len", &TransferOpDesc::len);
  py::class_<NotifyDesc>(m, "NotifyDesc")
      .def(py::init([](const std::string &name, const std::string &msg) {
             return NotifyDesc{name.c_str(), msg.c_str()};
           }),
           py::arg("name"), py::arg("notify_msg"))
      .def_property_readonly("name", [](const NotifyDesc &n) { return std::string(n.name.GetString()); })
      .def_property_readonly("notify_msg", [](const NotifyDesc &n) { return std::string(n.notify_msg.GetString()); });

  // Handles and requests are opaque integers on the Python side.
  py::class_<AdxlEngine>(m, "AdxlEngine")
      .def(py::init<>())
      .def("initialize",
           [](AdxlEngine &e, const std::string &local, const std::map<std::string, std::string> &opts) {
             auto o = Options(opts);
             py::gil_scoped_release nogil;
             return e.Initialize(local.c_str(), o);
           },
           py::arg("local_engine"), py::arg("options") = std::map<std::string, std::string>{})
      .def("finalize", [](AdxlEngine &e) {
        py::gil_scoped_release nogil;
        e.Finalize();
      })
      .def("register_mem",
           [](AdxlEngine &e, const MemDesc &mem, MemType type) {
             MemHandle h = nullptr;
             Status s;
             {
               py::gil_scoped_release nogil;
               s = e.RegisterMem(mem, type, h);
             }
             return py::make_tuple(s, reinterpret_cast<uintptr_t>(h));
           },
           py::arg("mem"), py::arg("type"))
      .def("deregister_mem",
           [](AdxlEngine &e, uintptr_t h) {
             py::gil_scoped_release nogil;
             return e.DeregisterMem(reinterpret_cast<MemHandle>(h));
           },
           py::arg("mem_handle"))
      .def("connect",
           [](AdxlEngine &e, const std::string &r, int32_t t) {
             py::gil_scoped_release nogil;
             return e.Connect(r.c_str(), t);
           },
           py::arg("remote_engine"), py::arg("timeout_in_millis") = 1000)
      .def("disconnect",
           [](AdxlEngine &e, const std::string &r, int32_t t) {
             py::gil_scoped_release nogil;
             return e.Disconnect(r.c_str(), t);
           },
           py::arg("remote_engine"), py::arg("timeout_in_millis") = 1000)
      .def("transfer_sync",
           [](AdxlEngine &e, const std::string &r, TransferOp op, const std::vector<TransferOpDesc> &d, int32_t t) {
             py::gil_scoped_release nogil;
             return e.TransferSync(r.c_str(), op, d, t);
           },
           py::arg("remote_engine"), py::arg("operation"), py::arg("op_descs"), py::arg("timeout_in_millis") = 1000)
      .def("transfer_async",
           [](AdxlEngine &e, const std::string &r, TransferOp op, const std::vector<TransferOpDesc> &d) {
             TransferReq req = nullptr;
             Status s;
             {
               py::gil_scoped_release nogil;
               s = e.TransferAsync(r.c_str(), op, d, TransferArgs{}, req);
             }
             return py::make_tuple(s, reinterpret_cast<uintptr_t>(req));
           },
           py::arg("remote_engine"), py::arg("operation"), py::arg("op_descs"))
      .def("get_transfer_status",
           [](AdxlEngine &e, uintptr_t req) {
             TransferStatus st = TransferStatus::FAILED;
             TransferReq r = reinterpret_cast<TransferReq>(req);
             Status s = e.GetTransferStatus(r, st);
             return py::make_tuple(s, st);
           },
           py::arg("req"))
      .def("send_notify",
           [](AdxlEngine &e, const std::string &r, const NotifyDesc &n, int32_t t) {
             py::gil_scoped_release nogil;
             return e.SendNotify(r.c_str(), n, t);
           },
           py::arg("remote_engine"), py::arg("notify"), py::arg("timeout_in_millis") = 1000)
      .def("get_notifies",
           [](AdxlEngine &e) {
             std::vector<NotifyDesc> v;
             Status s = e.GetNotifies(v);
             return py::make_tuple(s, v);
           })
      // Extensions (adxl_ext.h): per-link statistics.
      .def("get_link_stats",
           [](AdxlEngine &e, const std::string &r) {
             ext::LinkStats st;
             const Status s = ext::GetLinkStats(e, r.c_str(), st);
             return py::make_tuple(s, s == SUCCESS ? py::object(StatsDict(st)) : py::none());
           },
           py::arg("remote_engine"), "(status, dict): adxl_ext.h GetLinkStats")
      .def("get_all_link_stats",
           [](AdxlEngine &e) {
             std::vector<ext::LinkStats> all;
             ext::LinkStats totals;
             const Status s = ext::GetAllLinkStats(e, all, &totals);
             py::list l;
             for (const auto &st : all) l.append(StatsDict(st));
             return py::make_tuple(s, l, StatsDict(totals));
           },
           "(status, [dict per peer], totals dict): adxl_ext.h GetAllLinkStats")
      .def("render_prometheus",
           [](AdxlEngine &e) {
             std::string text;
             const Status s = ext::RenderPrometheus(e, text);
             return py::make_tuple(s, text);
           },
           "(status, text): adxl_ext.h RenderPrometheus")
      .def_static("malloc_mem",
                  [](MemType type, size_t size) {
                    void *p = nullptr;
                    Status s = AdxlEngine::MallocMem(type, size, &p);
                    return py::make_tuple(s, reinterpret_cast<uintptr_t>(p));
                  },
                  py::arg("type"), py::arg("size"))
      .def_static("free_mem", [](uintptr_t p) { return AdxlEngine::FreeMem(reinterpret_cast<void *>(p)); },
                  py::arg("ptr"))
      .def_static("get_capability",
                  [](FeatureType f) {
                    int32_t v = 0;
                    Status s = AdxlEngine::GetCapability(f, v);
                    return py::make_tuple(s, v);
                  },
                  py::arg("feature_type"));
}
