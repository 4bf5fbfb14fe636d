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
using namespace pybind11::literals;  // "key"_a = value: the dicts below

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
  return py::dict("count"_a = p.count, "last_ns"_a = p.last_ns, "total_ns"_a = p.total_ns, "max_ns"_a = p.max_ns);
}

py::dict DirectionDict(const ext::DirectionStats &s) {
  const ext::LatencyStats &l = s.latency;
  py::dict lat("count"_a = l.count, "sum_ns"_a = l.sum_ns, "p50_ns"_a = l.p50_ns, "p99_ns"_a = l.p99_ns,
               "max_ns"_a = l.max_ns, "buckets"_a = l.buckets);
  return py::dict("transfers"_a = s.transfers, "descriptors"_a = s.descriptors, "bytes"_a = s.bytes,
                  "errors"_a = s.errors, "timeouts"_a = s.timeouts, "latency"_a = lat);
}

py::dict StatsDict(const ext::LinkStats &s) {
  return py::dict("remote"_a = s.remote, "linked"_a = s.linked, "connects"_a = s.connects,
                  "connect_failures"_a = s.connect_failures, "tcp_connect"_a = PhaseDict(s.tcp_connect),
                  "handshake"_a = PhaseDict(s.handshake), "wireup"_a = PhaseDict(s.wireup),
                  "read"_a = DirectionDict(s.read), "write"_a = DirectionDict(s.write));
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
