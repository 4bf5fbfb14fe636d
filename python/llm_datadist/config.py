"""Configuration: LLMConfig (the reference's option builder), init()'s option
families (_init_options), the cluster descriptions link_clusters takes
(LLMClusterInfo), roles and registration statuses."""
import enum
import json
import logging
import socket
import threading

from . import _native
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
    @property
    def listen_ip_info(self):
        return self._listen_ip_info

    @listen_ip_info.setter
    def listen_ip_info(self, v):
        self._listen_ip_info = _str(v, "listen_ip_info")

    @property
    def device_id(self):
        return self._device_id

    @device_id.setter
    def device_id(self, v):
        ids = v if isinstance(v, (list, tuple)) else [v]
        if not isinstance(v, (list, tuple, int)) or isinstance(v, bool) or not ids:
            raise TypeError(f"device_id must be an int or a non-empty list/tuple of int, not {type(v).__name__}")
        for i in ids:
            _int(i, "device_id", 0, _INT32_MAX)
        self._device_id = v

    @property
    def sync_kv_timeout(self):
        return self._sync_kv_timeout

    @sync_kv_timeout.setter
    def sync_kv_timeout(self, v):
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise TypeError(f"sync_kv_timeout must be an int or str, not {type(v).__name__}")
        if isinstance(v, str) and not v.isdigit():
            raise _ParamInvalid(f"sync_kv_timeout {v!r} must be digits")
        _int(int(v), "sync_kv_timeout", 1, _INT32_MAX)
        self._sync_kv_timeout = v

    @property
    def deploy_res_path(self):
        return self._deploy_res_path

    @deploy_res_path.setter
    def deploy_res_path(self, v):
        self._deploy_res_path = _str(v, "deploy_res_path")

    @property
    def ge_options(self):
        return self._ge_options

    @ge_options.setter
    def ge_options(self, v):
        if not isinstance(v, dict):
            raise TypeError(f"ge_options must be a dict, not {type(v).__name__}")
        for k, val in v.items():
            _str(k, "ge_options key")
            _str(val, f"ge_options[{k!r}]")
        self._ge_options = v

    @property
    def enable_switch_role(self):
        return self._enable_switch_role

    @enable_switch_role.setter
    def enable_switch_role(self, v):
        self._enable_switch_role = _bool(v, "enable_switch_role")

    @property
    def link_total_time(self):
        return 0 if self._link_total_time is None else self._link_total_time

    @link_total_time.setter
    def link_total_time(self, v):
        self._link_total_time = _int(v, "link_total_time", 0, 2 ** 32 - 1)

    @property
    def link_retry_count(self):
        return 1 if self._link_retry_count is None else self._link_retry_count

    @link_retry_count.setter
    def link_retry_count(self, v):
        self._link_retry_count = _int(v, "link_retry_count", 1, 100)

    @property
    def cluster_info(self):
        return self._cluster_info

    @cluster_info.setter
    def cluster_info(self, v):
        try:
            json.loads(_str(v, "cluster_info"))
        except ValueError:
            raise _ParamInvalid("cluster_info must be a JSON text") from None
        self._cluster_info = v

    @property
    def output_max_size(self):
        return self._output_max_size

    @output_max_size.setter
    def output_max_size(self, v):
        self._output_max_size = _int(v, "output_max_size", 0, 2 ** 63 - 1)

    @property
    def mem_utilization(self):
        return self._mem_utilization

    @mem_utilization.setter
    def mem_utilization(self, v):
        if not isinstance(v, float):
            raise TypeError(f"mem_utilization must be a float, not {type(v).__name__}")
        if not 0.0 <= v <= 1.0:
            raise _ParamInvalid(f"mem_utilization must be in range [0,1], current:{v}")
        self._mem_utilization = v

    @property
    def buf_pool_cfg(self):
        return self._buf_pool_cfg

    @buf_pool_cfg.setter
    def buf_pool_cfg(self, v):
        self._buf_pool_cfg = _str(v, "buf_pool_cfg")

    @property
    def mem_pool_cfg(self):
        return self._mem_pool_cfg

    @mem_pool_cfg.setter
    def mem_pool_cfg(self, v):
        self._mem_pool_cfg = _str(v, "mem_pool_cfg")

    @property
    def host_mem_pool_cfg(self):
        return self._host_mem_pool_cfg

    @host_mem_pool_cfg.setter
    def host_mem_pool_cfg(self, v):
        self._host_mem_pool_cfg = _str(v, "host_mem_pool_cfg")

    @property
    def enable_cache_manager(self):
        return bool(self._enable_cache_manager)

    @enable_cache_manager.setter
    def enable_cache_manager(self, v):
        self._enable_cache_manager = _bool(v, "enable_cache_manager")

    @property
    def enable_remote_cache_accessible(self):
        return bool(self._enable_remote_cache_accessible)

    @enable_remote_cache_accessible.setter
    def enable_remote_cache_accessible(self, v):
        self._enable_remote_cache_accessible = _bool(v, "enable_remote_cache_accessible")

    @property
    def rdma_traffic_class(self):
        return self._rdma_traffic_class

    @rdma_traffic_class.setter
    def rdma_traffic_class(self, v):
        self._rdma_traffic_class = _int(v, "rdma_traffic_class", 0, 2 ** 32 - 1)

    @property
    def rdma_service_level(self):
        return self._rdma_service_level

    @rdma_service_level.setter
    def rdma_service_level(self, v):
        self._rdma_service_level = _int(v, "rdma_service_level", 0, 2 ** 32 - 1)

    @property
    def local_comm_res(self):
        return "" if self._local_comm_res is None else self._local_comm_res

    @local_comm_res.setter
    def local_comm_res(self, v):
        self._local_comm_res = _str(v, "local_comm_res")

    # Honoured by init(): llm.TransferBackend is checked ("hixl", "adxl" or
    # empty: every backend is the one engine here); llm.GlobalResourceConfig
    # goes to the engine's GlobalResourceConfig (empty: not configured).
    @property
    def transfer_backend(self):
        return "" if self._transfer_backend is None else self._transfer_backend

    @transfer_backend.setter
    def transfer_backend(self, v):
        self._transfer_backend = _str(v, "transfer_backend")

    @property
    def global_resource_config(self):
        return "" if self._global_resource_config is None else self._global_resource_config

    @global_resource_config.setter
    def global_resource_config(self, v):
        self._global_resource_config = _str(v, "global_resource_config")


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

    @property
    def remote_cluster_id(self):
        return self._remote_cluster_id

    @remote_cluster_id.setter
    def remote_cluster_id(self, value):
        self._remote_cluster_id = _int(value, "remote_cluster_id")

    @property
    def remote_role_type(self):
        return self._remote_role_type

    @remote_role_type.setter
    def remote_role_type(self, value):
        if isinstance(value, bool) or not isinstance(value, (LLMRole, int)):
            raise TypeError(f"remote_role_type must be an LLMRole or int, not {type(value).__name__}")
        self._remote_role_type = value

    @property
    def local_ip_info_list(self):
        return self._local_ip_info_list

    @property
    def remote_ip_info_list(self):
        return self._remote_ip_info_list

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
