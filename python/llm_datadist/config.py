"""Configuration: LLMConfig (the reference's option builder), init()'s option
families (_init_options), the cluster descriptions link_clusters takes
(LLMClusterInfo), roles and registration statuses."""
import enum
import json
import logging
import socket
import threading

from . import _native
from ._properties import _checked, _getter
from .errors import _ParamInvalid
from .validation import _INT32_MAX, _bool, _int, _str


_log = logging.getLogger("llm_datadist")


class LLMRole(enum.Enum):
    PROMPT = 1
    DECODER = 2
    MIX = 3


class RegisterMemStatus(enum.Enum):
    OK = 0
    PREPARING = 1
    FAILED = 2


# The checks of LLMConfig's and LLMClusterInfo's fields that are more than a
# type and a range: check(value, name) raises TypeError for a wrong type and
# ValueError (an LLMException too) for a wrong value, else returns the value.
def _check_device_id(v, name):
    ids = v if isinstance(v, (list, tuple)) else [v]
    if not isinstance(v, (list, tuple, int)) or isinstance(v, bool) or not ids:
        raise TypeError(f"{name} must be an int or a non-empty list/tuple of int, not {type(v).__name__}")
    for i in ids:
        _int(i, name, 0, _INT32_MAX)
    return v


def _check_sync_kv_timeout(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise TypeError(f"{name} must be an int or str, not {type(v).__name__}")
    if isinstance(v, str) and not v.isdigit():
        raise _ParamInvalid(f"{name} {v!r} must be digits")
    _int(int(v), name, 1, _INT32_MAX)
    return v


def _check_ge_options(v, name):
    if not isinstance(v, dict):
        raise TypeError(f"{name} must be a dict, not {type(v).__name__}")
    for k, val in v.items():
        _str(k, f"{name} key")
        _str(val, f"{name}[{k!r}]")
    return v


def _check_cluster_info(v, name):
    try:
        json.loads(_str(v, name))
    except ValueError:
        raise _ParamInvalid(f"{name} must be a JSON text") from None
    return v


def _check_mem_utilization(v, name):
    if not isinstance(v, float):
        raise TypeError(f"{name} must be a float, not {type(v).__name__}")
    if not 0.0 <= v <= 1.0:
        raise _ParamInvalid(f"{name} must be in range [0,1], current:{v}")
    return v


def _check_remote_role_type(v, name):
    if isinstance(v, bool) or not isinstance(v, (LLMRole, int)):
        raise TypeError(f"{name} must be an LLMRole or int, not {type(v).__name__}")
    return v


class LLMConfig:
    """The reference's LLMConfig: fields set one by one, then generate_options()
    gives the option dict for LLMDataDist.init.  Unset fields emit nothing,
    except mem_utilization (default 0.95), as in the reference."""

    def __init__(self):
        self._listen_ip_info = ""
        self._device_id = None
        self._sync_kv_timeout = None
        self._deploy_res_path = ""
        self._ge_options = {}
        self._enable_switch_role = False
        self._link_total_time = None
        self._link_retry_count = None
        self._cluster_info = ""
        self._output_max_size = ""
        self._mem_utilization = 0.95
        self._buf_pool_cfg = ""
        self._mem_pool_cfg = ""
        self._host_mem_pool_cfg = ""
        self._enable_cache_manager = None
        self._enable_remote_cache_accessible = None
        self._rdma_traffic_class = None
        self._rdma_service_level = None
        self._local_comm_res = None
        self._transfer_backend = None
        self._global_resource_config = None

    def generate_options(self):
        """The option dict (str -> str) for LLMDataDist.init."""
        o = dict(self._ge_options)
        if self._listen_ip_info:
            o["llm.listenIpInfo"] = self._listen_ip_info
        if self._device_id is not None:
            ids = self._device_id if isinstance(self._device_id, (list, tuple)) else [self._device_id]
            o["ge.exec.deviceId"] = ";".join(str(i) for i in ids)
            o["ge.session_device_id"] = str(ids[0])
        if self._sync_kv_timeout is not None:
            o["llm.SyncKvCacheWaitTime"] = str(self._sync_kv_timeout)
        text = {"llm.deployResPath": self._deploy_res_path, "llm.BufPoolCfg": self._buf_pool_cfg,
                "llm.MemPoolConfig": self._mem_pool_cfg, "llm.HostMemPoolConfig": self._host_mem_pool_cfg,
                "llm.ClusterInfo": self._cluster_info, "llm.OutputMaxSize": self._output_max_size}
        o.update({k: str(v) for k, v in text.items() if v})
        for key, flag in (("llm.EnableCacheManager", self._enable_cache_manager),
                          ("llm.EnableRemoteCacheAccessible", self._enable_remote_cache_accessible)):
            if flag is not None:
                o[key] = "1" if flag else "0"
        if self._enable_switch_role:
            o["llm.EnableSwitchRole"] = "1"
        for key, value in (("llm.LinkTotalTime", self._link_total_time),
                           ("llm.LinkRetryCount", self._link_retry_count),
                           ("llm.MemoryUtilization", self._mem_utilization),
                           ("llm.RdmaTrafficClass", self._rdma_traffic_class),
                           ("llm.RdmaServiceLevel", self._rdma_service_level),
                           ("llm.LocalCommRes", self._local_comm_res),
                           ("llm.TransferBackend", self._transfer_backend),
                           ("llm.GlobalResourceConfig", self._global_resource_config)):
            if value is not None:
                o[key] = str(value)
        return o

    # The vendor's gen_options spelling.
    gen_options = generate_options

    # Fields: (name, check) -> property.  The checks raise TypeError for a
    # wrong type and ValueError (an LLMException too) for a wrong value.
    listen_ip_info = _checked("listen_ip_info", _str)
    device_id = _checked("device_id", _check_device_id)
    sync_kv_timeout = _checked("sync_kv_timeout", _check_sync_kv_timeout)
    deploy_res_path = _checked("deploy_res_path", _str)
    ge_options = _checked("ge_options", _check_ge_options)
    enable_switch_role = _checked("enable_switch_role", _bool)
    link_total_time = _checked("link_total_time", _int, 0, 2 ** 32 - 1, unset=0)
    link_retry_count = _checked("link_retry_count", _int, 1, 100, unset=1)
    cluster_info = _checked("cluster_info", _check_cluster_info)
    output_max_size = _checked("output_max_size", _int, 0, 2 ** 63 - 1)
    mem_utilization = _checked("mem_utilization", _check_mem_utilization)
    buf_pool_cfg = _checked("buf_pool_cfg", _str)
    mem_pool_cfg = _checked("mem_pool_cfg", _str)
    host_mem_pool_cfg = _checked("host_mem_pool_cfg", _str)
    enable_cache_manager = _checked("enable_cache_manager", _bool, unset=False)
    enable_remote_cache_accessible = _checked("enable_remote_cache_accessible", _bool, unset=False)
    rdma_traffic_class = _checked("rdma_traffic_class", _int, 0, 2 ** 32 - 1)
    rdma_service_level = _checked("rdma_service_level", _int, 0, 2 ** 32 - 1)
    local_comm_res = _checked("local_comm_res", _str, unset="")

    # Honoured by init(): llm.TransferBackend is checked ("hixl", "adxl" or
    # empty: every backend is the one engine here); llm.GlobalResourceConfig
    # goes to the engine's GlobalResourceConfig (empty: not configured).
    transfer_backend = _checked("transfer_backend", _str, unset="")
    global_resource_config = _checked("global_resource_config", _str, unset="")


LlmConfig = LLMConfig

# init()'s option families.  Applied here: listen address, timeout, host pool.
# To the engine, by the C++ cache layer's one table (include/llm_datadist/llm_datadist_ext.h
# EngineOptionKey, _native.engine_option_key): the RDMA keys, LocalCommRes and
# GlobalResourceConfig translated, "adxl." keys and the engine's own (vendor)
# option names unchanged.  Accepted without effect (logged once at INFO):
# every other "llm." / "ge." key.
_WHY_NO_EFFECT = {
    "llm.EnableCacheManager": "this package always runs in CacheManager mode",
    "llm.EnableRemoteCacheAccessible": "remote access is per cache here (remote_accessible)",
    "llm.MemoryUtilization": "no device memory is reserved here",
    "llm.MemPoolConfig": "no device memory pool here (allocate device memory yourself and register_cache it)",
    "llm.Role": "the role is a label here",
}
_logged_keys = set()
_logged_lock = threading.Lock()


def _log_once(key, why):
    with _logged_lock:
        if key in _logged_keys:
            return
        _logged_keys.add(key)
    _log.info("llm_datadist: option %s accepted, no effect here (%s)", key, why)


def _init_options(options):
    """Splits init()'s options: (listen, timeout_ms, engine options, host pool config)."""
    opts = {}
    for k, v in options.items():
        if not isinstance(k, str):
            raise TypeError(f"option keys must be str, not {type(k).__name__}")
        opts[k] = v if isinstance(v, str) else str(v)
    listen = opts.pop("llm.listenIpInfo", "") or opts.pop("llm.ListenIpInfo", "")  # Python's, C++'s spelling
    ip, port = opts.pop("llm.ListenIp", ""), opts.pop("llm.ListenPort", "")
    if not listen and ip:
        listen = f"[{ip}]:{port}" if ":" in ip and port else (f"{ip}:{port}" if port else ip)
    listen = listen or "127.0.0.1"
    timeout = opts.pop("llm.SyncKvCacheWaitTime", "1000")
    if not timeout.isdigit() or not 0 < int(timeout) <= _INT32_MAX:
        raise _ParamInvalid(f"llm.SyncKvCacheWaitTime {timeout!r} must be an integer in [1, {_INT32_MAX}]")
    pool = opts.pop("llm.HostMemPoolConfig", "")
    engine = {}
    backend = opts.pop("llm.TransferBackend", "")
    if backend not in _native.TRANSFER_BACKENDS:  # the C++ cache layer's list
        raise _ParamInvalid(f"llm.TransferBackend {backend!r} is not one of 'hixl', 'adxl' (or empty)")
    if backend:  # the C++ cache layer takes it: "hixl" makes links one-way, as the vendor's HIXL backend
        engine["llm.TransferBackend"] = backend
    for k, v in opts.items():
        to_engine = _native.engine_option_key(k)
        if to_engine is not None:
            name, drop_empty = to_engine
            if v or not drop_empty:  # empty: the vendor's "not configured" (LocalCommRes: "generate it")
                engine[name] = v
        elif k.startswith("llm.") or k.startswith("ge."):
            _log_once(k, _WHY_NO_EFFECT.get(k, "an option of the reference's runtime"))
        else:
            raise _ParamInvalid(f"init: option {k!r} belongs to no known family (llm., ge., adxl. or an engine "
                                f"option name)")
    return listen, int(timeout), engine, pool


class LLMClusterInfo:
    """A remote cluster to link: its id and the ip:port its engine listens on.

    As the reference: remote_cluster_id (uint64), remote_role_type (LLMRole or
    int), append_local_ip_info / append_remote_ip_info(ip: str or int, port:
    uint16); an IPv4 string is kept as the reference's int (inet_aton read
    little-endian).  The first remote ip info names the engine to connect to;
    local ip info is accepted and not used (the engine picks the interface).
    """

    def __init__(self):
        self._remote_cluster_id = None
        self._remote_role_type = None
        self._local_ip_info_list = []
        self._remote_ip_info_list = []

    @staticmethod
    def _ip_port(ip, port):
        if isinstance(ip, bool) or not isinstance(ip, (str, int)):
            raise TypeError(f"ip must be a str or int, not {type(ip).__name__}")
        _int(port, "port", 0, 2 ** 16 - 1)
        if isinstance(ip, int):
            return _int(ip, "ip", 0, 2 ** 32 - 1), port
        try:
            return int.from_bytes(socket.inet_aton(ip), "little"), port
        except OSError:
            try:
                socket.inet_pton(socket.AF_INET6, ip.strip("[]"))
            except OSError:
                raise _ParamInvalid(f"ip {ip!r} is neither an IPv4 nor an IPv6 address") from None
            return ip.strip("[]"), port

    remote_cluster_id = _checked("remote_cluster_id", _int)

    remote_role_type = _checked("remote_role_type", _check_remote_role_type)

    local_ip_info_list = _getter("_local_ip_info_list")
    remote_ip_info_list = _getter("_remote_ip_info_list")

    # Earlier names of this package.
    local_ip_info = local_ip_info_list
    remote_ip_info = remote_ip_info_list

    def append_local_ip_info(self, ip, port):
        self._local_ip_info_list.append(self._ip_port(ip, port))

    def append_remote_ip_info(self, ip, port):
        self._remote_ip_info_list.append(self._ip_port(ip, port))

    def _engine(self):
        if not self._remote_ip_info_list:
            raise _ParamInvalid("LLMClusterInfo has no remote ip info (call append_remote_ip_info)")
        ip, port = self._remote_ip_info_list[0]
        if isinstance(ip, int):
            ip = socket.inet_ntoa(ip.to_bytes(4, "little"))
        return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
