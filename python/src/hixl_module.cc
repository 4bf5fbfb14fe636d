// Python bindings of the HIXL facade (module hixl._hixl, re-exported by the
// hixl package): class Hixl over hixl::Hixl (include/hixl/hixl.h), with the
// reference package's names and defaults.  Methods return the C++ status
// (hixl.SUCCESS, ...); calls with an out-parameter return (status, value).
// Memory handles and requests are opaque integers; user_data is an integer
// carried unchanged from TransferArgs to TransferResult.  Every call releases
// the GIL while the C++ call runs (Python objects are built after it
// returns), so transfers of several threads and processes overlap.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "hixl/hixl.h"
#include "released.h"

namespace py = pybind11;

namespace {

constexpr int32_t kDefaultTimeoutMs = 1000;

std::map<hixl::AscendString, hixl::AscendString> ToOptions(const std::map<std::string, std::string> &in) {
  std::map<hixl::AscendString, hixl::AscendString> out;
  for (const auto &kv : in) out.emplace(kv.first.c_str(), kv.second.c_str());
  return out;
}

uintptr_t Int(const void *p) { return reinterpret_cast<uintptr_t>(p); }

std::tuple<hixl::Status, int32_t> Capability(hixl::FeatureType f) {
  int32_t v = hixl::FEATURE_NOT_SUPPORTED;
  hixl::Status s;
  {
    py::gil_scoped_release nogil;
    s = hixl::Hixl::GetCapability(f, v);
  }
  return {s, v};
}

}  // namespace

PYBIND11_MODULE(_hixl, m) {
  m.doc() = "HIXL engine (bindings of include/hixl/hixl.h)";

  // Statuses: the engine's one table (include/adxl/adxl_types.h), shared with
  // the adxl package; hixl.Status (an IntEnum) is built from it in __init__.py.
  for (const adxl::StatusInfo &s : adxl::kStatusTable) m.attr(s.name) = s.value;
  m.def("status_table", [] {
    py::list table;
    for (const adxl::StatusInfo &s : adxl::kStatusTable) table.append(py::make_tuple(s.name, s.value, s.description));
    return table;
  });
  m.def("status_name", [](hixl::Status s) { return adxl::StatusName(s); });

  m.attr("OPTION_ENABLE_USE_FABRIC_MEM") = hixl::OPTION_ENABLE_USE_FABRIC_MEM;
  m.attr("OPTION_RDMA_TRAFFIC_CLASS") = hixl::OPTION_RDMA_TRAFFIC_CLASS;
  m.attr("OPTION_RDMA_SERVICE_LEVEL") = hixl::OPTION_RDMA_SERVICE_LEVEL;
  m.attr("OPTION_BUFFER_POOL") = hixl::OPTION_BUFFER_POOL;
  m.attr("OPTION_GLOBAL_RESOURCE_CONFIG") = hixl::OPTION_GLOBAL_RESOURCE_CONFIG;
  m.attr("OPTION_AUTO_CONNECT") = hixl::OPTION_AUTO_CONNECT;
  m.attr("OPTION_LOCAL_COMM_RES") = hixl::OPTION_LOCAL_COMM_RES;
  m.attr("FEATURE_SUPPORTED") = static_cast<int32_t>(hixl::FEATURE_SUPPORTED);
  m.attr("FEATURE_NOT_SUPPORTED") = static_cast<int32_t>(hixl::FEATURE_NOT_SUPPORTED);

  // The types HIXL shares with ADXL (MemType, TransferOpDesc, ...) are the
  // same C++ types the adxl module binds: module-local here, so that both
  // packages import into one process.
  py::enum_<hixl::MemType>(m, "MemType", py::module_local())
      .value("MEM_DEVICE", hixl::MEM_DEVICE)
      .value("MEM_HOST", hixl::MEM_HOST)
      .export_values();
  py::enum_<hixl::TransferOp>(m, "TransferOp", py::module_local()).value("READ", hixl::READ).value("WRITE", hixl::WRITE).export_values();
  py::enum_<hixl::TransferStatus>(m, "TransferStatus", py::module_local())
      .value("WAITING", hixl::TransferStatus::WAITING)
      .value("COMPLETED", hixl::TransferStatus::COMPLETED)
      .value("TIMEOUT", hixl::TransferStatus::TIMEOUT)
      .value("FAILED", hixl::TransferStatus::FAILED);
  py::enum_<hixl::AsyncConnectStatus>(m, "AsyncConnectStatus", py::module_local())
      .value("NOT_CONNECT", hixl::AsyncConnectStatus::NOT_CONNECT)
      .value("CONNECT_PENDING", hixl::AsyncConnectStatus::CONNECT_PENDING)
      .value("CONNECTING", hixl::AsyncConnectStatus::CONNECTING)
      .value("CONNECTED", hixl::AsyncConnectStatus::CONNECTED)
      .value("CONNECT_FAILED", hixl::AsyncConnectStatus::CONNECT_FAILED)
      .value("DISCONNECT_PENDING", hixl::AsyncConnectStatus::DISCONNECT_PENDING)
      .value("DISCONNECTING", hixl::AsyncConnectStatus::DISCONNECTING)
      .export_values();  // hixl.CONNECTED etc., as the vendor's package exports them
  py::enum_<hixl::FeatureType>(m, "FeatureType", py::module_local())
      .value("AUTO_CONNECT", hixl::AUTO_CONNECT)
      .value("CLIENT_SERVER_COMM", hixl::CLIENT_SERVER_COMM)
      .export_values();
  // TransferStatus stays unexported, as in the vendor's package: its TIMEOUT
  // and FAILED would shadow the statuses hixl.TIMEOUT and hixl.FAILED.

  py::class_<hixl::MemDesc>(m, "MemDesc", py::module_local())
      .def(py::init([](uintptr_t addr, size_t len) { return hixl::MemDesc{addr, len}; }), py::arg("addr"),
           py::arg("len"))
      .def_readwrite("addr", &hixl::MemDesc::addr)
      .def_readwrite("len", &hixl::MemDesc::len)
      .def_readwrite("local_only", &hixl::MemDesc::local_only)
      .def("__repr__", [](const hixl::MemDesc &d) {
        return "MemDesc(addr=" + std::to_string(d.addr) + ", len=" + std::to_string(d.len) + ")";
      });
  py::class_<hixl::TransferOpDesc>(m, "TransferOpDesc", py::module_local())
      .def(py::init([](uintptr_t l, uintptr_t r, size_t n) { return hixl::TransferOpDesc{l, r, n}; }),
           py::arg("local_addr"), py::arg("remote_addr"), py::arg("len"))
      .def_readwrite("local_addr", &hixl::TransferOpDesc::local_addr)
      .def_readwrite("remote_addr", &hixl::TransferOpDesc::remote_addr)
      .def_readwrite("len", &hixl::TransferOpDesc::len);
  py::class_<hixl::TransferArgs>(m, "TransferArgs", py::module_local())
      .def(py::init([](uintptr_t user_data) {
             hixl::TransferArgs a{};
             a.user_data = reinterpret_cast<const void *>(user_data);
             return a;
           }),
           py::arg("user_data") = 0)
      .def_property(
          "user_data", [](const hixl::TransferArgs &a) { return Int(a.user_data); },
          [](hixl::TransferArgs &a, uintptr_t v) { a.user_data = reinterpret_cast<const void *>(v); });
  py::class_<hixl::GetTransferStatusArgs>(m, "GetTransferStatusArgs", py::module_local())
      .def(py::init([](uint32_t max_query_count, bool skip_waiting) {
             return hixl::GetTransferStatusArgs{max_query_count, skip_waiting};
           }),
           py::arg("max_query_count") = UINT32_MAX, py::arg("skip_waiting") = false)
      .def_readwrite("max_query_count", &hixl::GetTransferStatusArgs::max_query_count)
      .def_readwrite("skip_waiting", &hixl::GetTransferStatusArgs::skip_waiting);
  py::class_<hixl::TransferResult>(m, "TransferResult", py::module_local())
      .def(py::init<>())
      .def_property(
          "req", [](const hixl::TransferResult &r) { return Int(r.req); },
          [](hixl::TransferResult &r, uintptr_t v) { r.req = reinterpret_cast<hixl::TransferReq>(v); })
      .def_property(
          "user_data", [](const hixl::TransferResult &r) { return Int(r.user_data); },
          [](hixl::TransferResult &r, uintptr_t v) { r.user_data = reinterpret_cast<const void *>(v); })
      .def_readwrite("status", &hixl::TransferResult::status)
      .def("__repr__", [](const hixl::TransferResult &r) {
        return "TransferResult(req=" + std::to_string(Int(r.req)) + ", user_data=" + std::to_string(Int(r.user_data)) +
               ", status=" + std::to_string(static_cast<int>(r.status)) + ")";
      });
  py::class_<hixl::NotifyDesc>(m, "NotifyDesc", py::module_local())
      .def(py::init([](const std::string &name, const std::string &msg) {
             hixl::NotifyDesc n;
             n.name = hixl::AscendString(name.c_str());
             n.notify_msg = hixl::AscendString(msg.c_str());
             return n;
           }),
           py::arg("name"), py::arg("notify_msg"))
      .def_property(
          "name", [](const hixl::NotifyDesc &n) { return std::string(n.name.GetString()); },
          [](hixl::NotifyDesc &n, const std::string &s) { n.name = hixl::AscendString(s.c_str()); })
      .def_property(
          "notify_msg", [](const hixl::NotifyDesc &n) { return std::string(n.notify_msg.GetString()); },
          [](hixl::NotifyDesc &n, const std::string &s) { n.notify_msg = hixl::AscendString(s.c_str()); });

  using hixl::Hixl;
  py::class_<Hixl> hixl_class(m, "Hixl", py::module_local());
  hixl_class.def(py::init<>())
      .def(
          "initialize",
          [](Hixl &h, const std::string &local, const std::map<std::string, std::string> &opts) {
            auto o = ToOptions(opts);
            py::gil_scoped_release nogil;
            return h.Initialize(local.c_str(), o);
          },
          py::arg("local_engine"), py::arg("options") = std::map<std::string, std::string>{})
      .def("finalize",
           [](Hixl &h) {
             py::gil_scoped_release nogil;
             h.Finalize();
           })
      .def(
          "register_mem",
          [](Hixl &h, const hixl::MemDesc &mem, hixl::MemType type) {
            hixl::MemHandle handle = nullptr;
            hixl::Status s;
            {
              py::gil_scoped_release nogil;
              s = h.RegisterMem(mem, type, handle);
            }
            return std::make_tuple(s, Int(handle));
          },
          py::arg("mem_desc"), py::arg("mem_type"))
      .def(
          "deregister_mem",
          [](Hixl &h, uintptr_t handle) {
            py::gil_scoped_release nogil;
            return h.DeregisterMem(reinterpret_cast<hixl::MemHandle>(handle));
          },
          py::arg("mem_handle"))
      .def(
          "get_async_connect_status",
          [](Hixl &h, const std::string &r) {
            return WithOut(hixl::AsyncConnectStatus::NOT_CONNECT,
                           [&](auto &st) { return h.GetAsyncConnectStatus(r.c_str(), st); });
          },
          py::arg("remote_engine"))
      .def("get_all_async_connect_status",
           [](Hixl &h) {
             const auto [s, all] = WithOut(std::map<hixl::AscendString, hixl::AsyncConnectStatus>{},
                                           [&](auto &m) { return h.GetAsyncConnectStatus(m); });
             std::map<std::string, hixl::AsyncConnectStatus> out;
             for (const auto &kv : all) out.emplace(kv.first.GetString(), kv.second);
             return std::make_tuple(s, out);
           })
      .def(
          "transfer_sync",
          [](Hixl &h, const std::string &r, hixl::TransferOp op, const std::vector<hixl::TransferOpDesc> &d,
             int32_t t) {
            py::gil_scoped_release nogil;
            return h.TransferSync(r.c_str(), op, d, t);
          },
          py::arg("remote_engine"), py::arg("op"), py::arg("op_descs"),
          py::arg("timeout_in_millis") = kDefaultTimeoutMs)
      .def(
          "transfer_async",
          [](Hixl &h, const std::string &r, hixl::TransferOp op, const std::vector<hixl::TransferOpDesc> &d,
             const hixl::TransferArgs &args) {
            hixl::TransferReq req = nullptr;
            hixl::Status s;
            {
              py::gil_scoped_release nogil;
              s = h.TransferAsync(r.c_str(), op, d, args, req);
            }
            return std::make_tuple(s, Int(req));
          },
          py::arg("remote_engine"), py::arg("op"), py::arg("op_descs"), py::arg("args") = hixl::TransferArgs{})
      .def(
          "get_transfer_status",
          [](Hixl &h, uintptr_t req) {
            return WithOut(hixl::TransferStatus::FAILED, [&](auto &st) {
              return h.GetTransferStatus(reinterpret_cast<hixl::TransferReq>(req), st);
            });
          },
          py::arg("req_id"))
      .def(
          "get_all_transfer_status",
          [](Hixl &h, const hixl::GetTransferStatusArgs &args) {
            return WithOut(std::vector<hixl::TransferResult>{}, [&](auto &r) { return h.GetTransferStatus(args, r); });
          },
          py::arg("args") = hixl::GetTransferStatusArgs{})
      .def(
          "send_notify",
          [](Hixl &h, const std::string &r, const hixl::NotifyDesc &n, int32_t t) {
            py::gil_scoped_release nogil;
            return h.SendNotify(r.c_str(), n, t);
          },
          py::arg("remote_engine"), py::arg("notify"), py::arg("timeout_in_millis") = kDefaultTimeoutMs)
      .def("get_notifies",
           [](Hixl &h) { return WithOut(std::vector<hixl::NotifyDesc>{}, [&](auto &v) { return h.GetNotifies(v); }); })
      .def_static("get_capability", &Capability, py::arg("feature_type"));
  // The four calls that take (remote engine, timeout): one binding each of
  // this table's rows, the GIL released.
  using RemoteCall = hixl::Status (Hixl::*)(const hixl::AscendString &, int32_t);
  const std::pair<const char *, RemoteCall> remote_calls[] = {{"connect", &Hixl::Connect},
                                                              {"disconnect", &Hixl::Disconnect},
                                                              {"connect_async", &Hixl::ConnectAsync},
                                                              {"disconnect_async", &Hixl::DisconnectAsync}};
  for (const auto &[name, call] : remote_calls) {
    hixl_class.def(
        name,
        [call = call](Hixl &h, const std::string &r, int32_t t) {
          py::gil_scoped_release nogil;
          return (h.*call)(r.c_str(), t);
        },
        py::arg("remote_engine"), py::arg("timeout_in_millis") = kDefaultTimeoutMs);
  }
  m.def("get_capability", &Capability, py::arg("feature_type"));
}
