"""LLM-DataDist cache layer on the ADXL engine (names follow the reference API).

    from llm_datadist import *
    dd = LLMDataDist(LLMRole.PROMPT, cluster_id=1)
    dd.init({"llm.listenIpInfo": "127.0.0.1:26210"})
    cache = dd.cache_manager.register_blocks_cache(CacheDesc(2, [16, 1024], DataType.DT_FLOAT16, Placement.HOST),
                                                   addrs, BlocksCacheKey(1), remote_accessible=True)

Errors (docs/contract.md §10): a wrong argument type raises TypeError, a wrong value
ValueError, None where an object is required AttributeError; any other failed
status raises LLMException (its status_code is an LLMStatusCode).  A wrong
value's ValueError is also an LLMException with status_code LLM_PARAM_INVALID,
as the reference package raises, so code written for either catches it.
"""
import ctypes
import enum
import json
import logging
import socket
import threading

from . import _native
from .status_codes import status_members as _status_members
from .vendor_types import KvCache, MemInfo, Memtype, make_status as _make_status

__all__ = [
    "BlocksCacheKey", "Cache", "CacheDesc", "CacheKey", "CacheKeyByIdAndIndex", "CacheManager", "DataType",
    "LLMClusterInfo", "LLMDataDist", "LLMException", "LLMRole", "LLMStatusCode", "Placement",
    # issue 14 (drop-in Python, items 1 and 3)
    "LLMConfig", "LlmConfig", "RegisterMemStatus",
    # issue 18 (the vendor's names): vendor_types.py
    "KvCache", "MemInfo", "Memtype", "Status",
]

DataType = _native.DataType
Placement = _native.Placement
_NUM_TENSORS_PER_LAYER = 2
_U64 = 2 ** 64


# Built from the C++ status table (src/llm_datadist/cache_types.h, the
# vendor's values): _status_members() (llm_datadist/status_codes.py) gives
# the vendor Python package's names first, so they are the canonical names.
LLMStatusCode = enum.IntEnum("LLMStatusCode", _status_members(_native.status_table()), module=__name__)
Status = _make_status(LLMStatusCode)
LLMStatusCode.__doc__ = "LLM-DataDist statuses (the vendor's names), from the C++ status table."


class LLMException(RuntimeError):
    """A failed call; status_code says why."""

    def __init__(self, message, status_code=None):
        super().__init__(message)
        self.status_code = LLMStatusCode.LLM_FAILED if status_code is None else status_code


class _ParamInvalid(LLMException, ValueError):
    """A wrong value: a ValueError, and the reference's LLMException(LLM_PARAM_INVALID)."""

    def __init__(self, message):
        super().__init__(message, LLMStatusCode.LLM_PARAM_INVALID)


class LLMRole(enum.Enum):
    PROMPT = 1
    DECODER = 2
    MIX = 3


def _code(status):
    # As the vendor's code_2_status: a value outside the table is LLM_FAILED.
    try:
        return LLMStatusCode(status)
    except ValueError:
        return LLMStatusCode.LLM_FAILED


def _check(status, what):
    if status == 0:
        return
    if status == LLMStatusCode.LLM_PARAM_INVALID:
        raise _ParamInvalid(f"{what}: invalid argument (see the llm_datadist ERROR line on stderr)")
    raise LLMException(f"{what} failed: {_native.status_name(status)}", _code(status))


def _need(value, name):
    if value is None:
        raise AttributeError(f"{name} must not be None")
    return value


def _int(value, name, lo=0, hi=_U64 - 1):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not lo <= value <= hi:
        raise _ParamInvalid(f"{name}={value} is out of range [{lo}, {hi}]")
    return value


def _int_seq(values, name, lo=0, hi=_U64 - 1):
    _need(values, name)
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list or tuple of int, not {type(values).__name__}")
    return [_int(v, f"{name}[{i}]", lo, hi) for i, v in enumerate(values)]


def _type(value, cls, name):
    _need(value, name)
    if not isinstance(value, cls):
        names = cls.__name__ if isinstance(cls, type) else " or ".join(c.__name__ for c in cls)
        raise TypeError(f"{name} must be {names}, not {type(value).__name__}")
    return value


def _opt_bool(value, name):
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool or None, not {type(value).__name__}")
    return value


def _layer_range(r, name):
    if r is None:
        return None
    if not isinstance(r, range):
        raise TypeError(f"{name} must be a range, not {type(r).__name__}")
    if r.step != 1 or r.start < 0 or r.stop <= r.start:
        raise _ParamInvalid(f"{name}={r!r}: the step must be 1 and the range non-empty and non-negative")
    return (r.start, r.stop)


def _layers(kwargs, what):
    unknown = set(kwargs) - {"src_layer_range", "dst_layer_range", "tensor_num_per_layer"}
    if unknown:
        raise TypeError(f"{what}() got unexpected keyword arguments {sorted(unknown)}")
    tnpl = _int(kwargs.get("tensor_num_per_layer", _NUM_TENSORS_PER_LAYER), "tensor_num_per_layer", 1, 2 ** 32 - 1)
    return (_layer_range(kwargs.get("src_layer_range"), "src_layer_range"),
            _layer_range(kwargs.get("dst_layer_range"), "dst_layer_range"), tnpl)


class CacheDesc:
    """num_tensors tensors of `shape` and `data_type`; dimension 0 is the batch (or the block index)."""

    def __init__(self, num_tensors, shape, data_type, placement=Placement.DEVICE, batch_dim_index=0,
                 seq_len_dim_index=-1, kv_tensor_format=None):
        self.num_tensors = _int(num_tensors, "num_tensors", 1, 2 ** 32 - 1)
        self.shape = _int_seq(shape, "shape", 1, 2 ** 63 - 1)
        if not self.shape:
            raise _ParamInvalid("shape must not be empty")
        self.data_type = _type(data_type, DataType, "data_type")
        self.placement = _type(placement, Placement, "placement")
        self.batch_dim_index = _int(batch_dim_index, "batch_dim_index", 0, 0)
        self.seq_len_dim_index = _int(seq_len_dim_index, "seq_len_dim_index", -1, 2 ** 31 - 1)
        self.kv_tensor_format = kv_tensor_format

    def _native(self):
        d = _native.CacheDesc()
        d.num_tensors, d.shape, d.data_type, d.placement = self.num_tensors, self.shape, self.data_type, self.placement
        d.batch_dim_index, d.seq_len_dim_index = self.batch_dim_index, self.seq_len_dim_index
        return d

    def __repr__(self):
        return (f"CacheDesc(num_tensors={self.num_tensors}, shape={self.shape}, data_type={self.data_type}, "
                f"placement={self.placement})")


def _key_args(cls, args, kwargs, names, defaults):
    """The reference keys' arguments: positional in `names` order, the first
    also spelled prompt_cluster_id=; returns {name: value}."""
    if len(args) + len(kwargs) > len(names):
        raise TypeError(f"{cls}() takes at most {len(names)} arguments ({len(args) + len(kwargs)} given)")
    kw = dict(kwargs)
    if "prompt_cluster_id" in kw:
        if "cluster_id" in kw or args:
            raise TypeError(f"{cls}() got both cluster_id and prompt_cluster_id")
        kw["cluster_id"] = kw.pop("prompt_cluster_id")
    for name, value in zip(names, args):
        if name in kw:
            raise TypeError(f"{cls}() got multiple values for argument '{name}'")
        kw[name] = value
    unknown = set(kw) - set(names)
    if unknown:
        raise TypeError(f"{cls}() got unexpected keyword arguments {sorted(unknown)}")
    for name in names:
        if name not in kw:
            if name not in defaults:
                raise TypeError(f"{cls}() missing required argument '{name}'" +
                                (" (or prompt_cluster_id)" if name == "cluster_id" else ""))
            kw[name] = defaults[name]
    return kw


class CacheKey:
    """Batch entry i of a cache registered with cache_keys[i] at cluster `cluster_id`.

    CacheKey(cluster_id, req_id, model_id=0, prefix_id=2**64-1); the cluster id
    may also be given as prompt_cluster_id= (the reference's spelling)."""

    def __init__(self, *args, **kwargs):
        kw = _key_args("CacheKey", args, kwargs, ("cluster_id", "req_id", "model_id", "prefix_id"),
                       {"model_id": 0, "prefix_id": _U64 - 1})
        self.cluster_id = _int(kw["cluster_id"], "cluster_id")
        self.req_id = _int(kw["req_id"], "req_id")
        self.model_id = _int(kw["model_id"], "model_id")
        self.prefix_id = _int(kw["prefix_id"], "prefix_id")

    @property
    def prompt_cluster_id(self):
        return self.cluster_id

    def _native(self):
        return _native.CacheKey(self.cluster_id, self.req_id, self.model_id, self.prefix_id)

    def __repr__(self):
        return f"CacheKey(cluster_id={self.cluster_id}, req_id={self.req_id}, model_id={self.model_id})"


class CacheKeyByIdAndIndex:
    """The cache `cache_id` of cluster `cluster_id`, batch entry `batch_index`."""

    def __init__(self, cluster_id, cache_id, batch_index=0):
        self.cluster_id = _int(cluster_id, "cluster_id")
        self.cache_id = _int(cache_id, "cache_id", 1, 2 ** 63 - 1)
        self.batch_index = _int(batch_index, "batch_index", 0, 2 ** 32 - 1)

    def _native(self):
        return _native.CacheKeyByIdAndIndex(self.cluster_id, self.cache_id, self.batch_index)


class BlocksCacheKey:
    """The paged cache registered with this key at cluster `cluster_id` (or prompt_cluster_id=)."""

    def __init__(self, *args, **kwargs):
        kw = _key_args("BlocksCacheKey", args, kwargs, ("cluster_id", "model_id"), {"model_id": 0})
        self.cluster_id = _int(kw["cluster_id"], "cluster_id")
        self.model_id = _int(kw["model_id"], "model_id")

    @property
    def prompt_cluster_id(self):
        return self.cluster_id

    def _native(self):
        return _native.BlocksCacheKey(self.cluster_id, self.model_id)


class Cache:
    """A registered cache (returned by register_cache / register_blocks_cache / allocate_*)."""

    def __init__(self, native, cache_desc, is_blocks_cache=None, addrs=None):
        self._cache = native
        self.cache_desc = cache_desc
        self._blocks = native.paged if is_blocks_cache is None else is_blocks_cache
        self._addrs = None if native is not None else list(addrs)
        self._pool_chunks = None  # allocate_cache / allocate_blocks_cache: the pool chunks to give back

    @classmethod
    def create_cpu_cache(cls, cache_desc, addrs):
        """A host cache that is not registered (cache_id -1), for swap_blocks."""
        _type(cache_desc, CacheDesc, "cache_desc")
        addrs = _int_seq(addrs, "addrs", 1)
        if cache_desc.placement != Placement.HOST:
            raise _ParamInvalid("cache_desc placement must be HOST")
        if len(addrs) != cache_desc.num_tensors:
            raise _ParamInvalid(f"{len(addrs)} addresses for num_tensors={cache_desc.num_tensors}")
        return cls(None, cache_desc, True, addrs)

    @property
    def cache_id(self):
        return -1 if self._cache is None else self._cache.cache_id

    @property
    def tensor_addrs(self):
        return list(self._addrs) if self._cache is None else list(self._cache.tensor_addrs)

    @property
    def remote_accessible(self):
        return False if self._cache is None else self._cache.remote_accessible

    @property
    def is_blocks_cache(self):
        return self._blocks

    def __repr__(self):
        return f"Cache(cache_id={self.cache_id}, {self.cache_desc!r})"


# ---------------------------------------------------------------------------
# Drop-in surface of the reference package (issue 14, items 1 and 3):
# LLMConfig, init's option families, the host memory pool, allocate /
# deallocate / copy / swap / remove_cache_key, check_link_status,
# switch_role, link / unlink with a rank table, query_register_mem_status.
# ---------------------------------------------------------------------------
_log = logging.getLogger("llm_datadist")
_INT32_MAX = 2 ** 31 - 1


class RegisterMemStatus(enum.Enum):
    OK = 0
    PREPARING = 1
    FAILED = 2


def _str(value, name):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def _bool(value, name):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


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
# Translated to the engine: the RDMA keys and LocalCommRes.  Passed to the
# engine unchanged: "adxl." keys and the engine's own (vendor) option names.
# Accepted without effect (logged once at INFO): every other "llm." / "ge." key.
_LLM_TO_ENGINE = {"llm.RdmaTrafficClass": "adxl.RdmaTrafficClass", "llm.RdmaServiceLevel": "adxl.RdmaServiceLevel",
                  "llm.LocalCommRes": "adxl.LocalCommRes"}
_ENGINE_OPTION_NAMES = {"RdmaTrafficClass", "RdmaServiceLevel", "AutoConnect", "EnableUseFabricMem", "BufferPool",
                        "LocalCommRes", "GlobalResourceConfig"}
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
    if backend not in ("", "hixl", "adxl"):
        raise _ParamInvalid(f"llm.TransferBackend {backend!r} is not one of 'hixl', 'adxl' (or empty)")
    if backend:
        _log_once("llm.TransferBackend", "every backend is the one UCX engine here")
    global_config = opts.pop("llm.GlobalResourceConfig", "")
    if global_config:  # empty: the vendor's "not configured"
        engine["GlobalResourceConfig"] = global_config
    for k, v in opts.items():
        if k in _LLM_TO_ENGINE:
            if v:  # the reference's empty LocalCommRes means "generate it": nothing to say here
                engine[_LLM_TO_ENGINE[k]] = v
        elif k.startswith("adxl.") or k in _ENGINE_OPTION_NAMES:
            engine[k] = v
        elif k.startswith("llm.") or k.startswith("ge."):
            _log_once(k, _WHY_NO_EFFECT.get(k, "an option of the reference's runtime"))
        else:
            raise _ParamInvalid(f"init: option {k!r} belongs to no known family (llm., ge., adxl. or an engine "
                                f"option name)")
    return listen, int(timeout), engine, pool


class _HostPool:
    """llm.HostMemPoolConfig ('{"memory_size": bytes}'): one AdxlEngine::MallocMem(MEM_HOST)
    region, handed out first-fit in 512-byte-aligned chunks."""

    _ALIGN = 512

    def __init__(self, cfg):
        try:
            conf = json.loads(cfg)
            size = conf["memory_size"]
        except (ValueError, KeyError, TypeError):
            raise _ParamInvalid(f"llm.HostMemPoolConfig {cfg!r}: expected a JSON object with memory_size") from None
        if isinstance(size, str) and size.isdigit():
            size = int(size)
        size = _int(size, "llm.HostMemPoolConfig memory_size", 1, 2 ** 63 - 1)
        size = (size + self._ALIGN - 1) // self._ALIGN * self._ALIGN
        s, base = _native.malloc_host(size)
        _check(s, "init: host memory pool")
        self.base, self.size = base, size
        self._lock = threading.Lock()
        self._free = [(base, size)]  # sorted (addr, len)

    def alloc(self, nbytes):
        n = max(self._ALIGN, (nbytes + self._ALIGN - 1) // self._ALIGN * self._ALIGN)
        with self._lock:
            for i, (a, ln) in enumerate(self._free):
                if ln >= n:
                    self._free[i:i + 1] = [(a + n, ln - n)] if ln > n else []
                    return a, n
        raise LLMException(f"host memory pool: no free range of {n} bytes (pool of {self.size})",
                           LLMStatusCode.LLM_OUT_OF_MEMORY)

    def release(self, chunks):
        with self._lock:
            free = sorted(self._free + list(chunks))
            merged = []
            for a, ln in free:
                if merged and merged[-1][0] + merged[-1][1] == a:
                    merged[-1] = (merged[-1][0], merged[-1][1] + ln)
                else:
                    merged.append((a, ln))
            self._free = merged

    def free_bytes(self):
        with self._lock:
            return sum(ln for _, ln in self._free)

    def close(self):
        if self.base:
            _native.free_host(self.base)
            self.base = 0


def _tensor_bytes(desc):
    n = _native.data_type_size(desc.data_type)
    for d in desc.shape:
        n *= d
    return n


def _block_map(value, name, list_values):
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict, not {type(value).__name__}")
    out = []
    for k, v in value.items():
        _int(k, f"{name} key")
        if list_values:
            for d in _int_seq(v, f"{name}[{k}]"):
                out.append((k, d))
        else:
            out.append((k, _int(v, f"{name}[{k}]")))
    return out


_cudart = None


def _device_runtime():
    """The CUDA runtime (ctypes), or None where there is none."""
    global _cudart
    if _cudart is None:
        for name in ("libcudart.so", "libcudart.so.12", "libcudart.so.11.0"):
            try:
                lib = ctypes.CDLL(name)
                count = ctypes.c_int(0)
                if lib.cudaGetDeviceCount(ctypes.byref(count)) == 0 and count.value > 0:
                    _cudart = lib
                    break
            except OSError:
                continue
        else:
            _cudart = False
    return _cudart or None


class _CacheManagerSurface:
    """CacheManager's allocate / deallocate / copy / swap / remove_cache_key."""

    def _allocate(self, what, cache_desc, keys, blocks_key):
        _type(cache_desc, CacheDesc, "cache_desc")
        if cache_desc.placement == Placement.DEVICE:
            if self._options.get("llm.MemPoolConfig"):
                raise LLMException(f"{what}: device memory pools are not supported here; allocate device memory "
                                   "yourself and use register_cache", LLMStatusCode.LLM_FEATURE_NOT_ENABLED)
            raise _ParamInvalid(f"{what}: you should config memory pool firstly and then set placement that "
                                "matches it (llm.MemPoolConfig for DEVICE)")
        if self._pool is None:
            raise _ParamInvalid(f"{what}: you should config memory pool firstly and then set placement that "
                                "matches it (llm.HostMemPoolConfig for HOST)")
        nbytes = _tensor_bytes(cache_desc)
        chunks = []
        try:
            for _ in range(cache_desc.num_tensors):
                chunks.append(self._pool.alloc(nbytes))
            addrs = [a for a, _ in chunks]
            if blocks_key is None and keys is None:
                s, c = self._m.register_blocks_cache(cache_desc._native(), addrs, None, True)
            elif keys is None:
                s, c = self._m.register_blocks_cache(cache_desc._native(), addrs, blocks_key._native(), True)
            else:
                s, c = self._m.register_cache(cache_desc._native(), addrs, [k._native() for k in keys], True)
            _check(s, what)
        except BaseException:
            self._pool.release(chunks)
            raise
        cache = Cache(c, cache_desc)
        cache._pool_chunks = chunks
        return cache

    def allocate_cache(self, cache_desc, cache_keys=()):
        """A non-paged host cache from the host pool (llm.HostMemPoolConfig), registered remote-accessible with
        cache_keys[i] naming batch entry i."""
        _need(cache_keys, "cache_keys")
        if not isinstance(cache_keys, (list, tuple)):
            raise TypeError("cache_keys must be a list or tuple of CacheKey")
        keys = [_type(k, CacheKey, "cache_keys[]") for k in cache_keys]
        return self._allocate("allocate_cache", cache_desc, keys, None)

    def allocate_blocks_cache(self, cache_desc, blocks_cache_key=None):
        """A paged host cache from the host pool, registered remote-accessible (under blocks_cache_key if given)."""
        if blocks_cache_key is not None:
            _type(blocks_cache_key, BlocksCacheKey, "blocks_cache_key")
        return self._allocate("allocate_blocks_cache", cache_desc, None, blocks_cache_key)

    def _deallocate(self, what, cache, blocks):
        _type(cache, Cache, "cache")
        if cache.is_blocks_cache != blocks:
            raise _ParamInvalid(f"{what}: param check failed, cache {'should' if blocks else 'can not'} be "
                                "blocks cache.")
        if cache._pool_chunks is None:
            raise _ParamInvalid(f"{what}: cache {cache.cache_id} was not allocated by allocate_*")
        _check(self._m.unregister_cache(cache.cache_id), what)
        self._pool.release(cache._pool_chunks)
        cache._pool_chunks = None

    def deallocate_cache(self, cache):
        """Unregisters (its keys go with it) and gives the memory back to the pool."""
        self._deallocate("deallocate_cache", cache, False)

    def deallocate_blocks_cache(self, cache):
        self._deallocate("deallocate_blocks_cache", cache, True)

    def remove_cache_key(self, cache_key):
        """Peers can no longer pull the batch entry by this key."""
        _type(cache_key, CacheKey, "cache_key")
        if cache_key.req_id == _U64 - 1 and cache_key.prefix_id == _U64 - 1:
            raise _ParamInvalid("remove_cache_key: one of req_id and prefix_id must be < 2**64-1")
        _check(self._m.remove_cache_key(cache_key._native()), "remove_cache_key")

    @staticmethod
    def _host_only(what, *caches):
        for c in caches:
            if c.cache_desc.placement != Placement.HOST:
                raise LLMException(f"{what}: device caches are copied by the device runtime; this package copies "
                                   "host caches only", LLMStatusCode.LLM_FEATURE_NOT_ENABLED)

    def copy_cache(self, dst, src, dst_batch_index=0, src_batch_index=0, offset=0, size=-1, req_id=None):
        """Local copy of batch entry src_batch_index of src into entry dst_batch_index of dst, every tensor:
        `size` bytes (-1: the rest of the entry) from byte `offset` of the entry."""
        _type(dst, Cache, "dst")
        _type(src, Cache, "src")
        _int(dst_batch_index, "dst_batch_index", 0, 2 ** 32 - 1)
        _int(src_batch_index, "src_batch_index", 0, 2 ** 32 - 1)
        _int(offset, "offset")
        _int(size, "size", -1, 2 ** 63 - 1)
        if req_id is not None:
            _int(req_id, "req_id")
        if src.is_blocks_cache or dst.is_blocks_cache:
            raise _ParamInvalid("copy_cache: param check failed, src and dst can not be blocks caches.")
        if size == 0:
            raise _ParamInvalid("copy_cache: size must be -1 or > 0")
        if src.cache_desc.num_tensors != dst.cache_desc.num_tensors:
            raise _ParamInvalid("copy_cache: src and dst have different numbers of tensors")
        self._host_only("copy_cache", dst, src)
        se = _tensor_bytes(src.cache_desc) // src.cache_desc.shape[0]
        de = _tensor_bytes(dst.cache_desc) // dst.cache_desc.shape[0]
        if src_batch_index >= src.cache_desc.shape[0] or dst_batch_index >= dst.cache_desc.shape[0]:
            raise _ParamInvalid("copy_cache: batch index out of range")
        n = min(se, de) - offset if size == -1 else size
        if n <= 0 or offset + n > se or offset + n > de:
            raise _ParamInvalid(f"copy_cache: offset {offset} + size {n} exceeds a batch entry ({se} / {de} bytes)")
        ops = [(d + dst_batch_index * de + offset, s + src_batch_index * se + offset, n)
               for d, s in zip(dst.tensor_addrs, src.tensor_addrs)]
        _native.copy_host(ops)

    def copy_blocks(self, cache, copy_block_info):
        """Local copy inside a paged cache: {src block: [dst blocks]}, every tensor."""
        _type(cache, Cache, "cache")
        pairs = _block_map(copy_block_info, "copy_block_info", True)
        if not cache.is_blocks_cache:
            raise _ParamInvalid("copy_blocks: param check failed, cache should be blocks cache.")
        self._host_only("copy_blocks", cache)
        nblocks = cache.cache_desc.shape[0]
        bb = _tensor_bytes(cache.cache_desc) // nblocks
        for s, d in pairs:
            if s >= nblocks or d >= nblocks:
                raise _ParamInvalid(f"copy_blocks: block {max(s, d)} out of range [0, {nblocks})")
        _native.copy_host([(a + d * bb, a + s * bb, bb) for a in cache.tensor_addrs for s, d in pairs])

    def swap_blocks(self, src_cache, dst_cache, src_to_dst):
        """Blocks between a host and a device cache ({src block: dst block}); needs a device runtime (CUDA):
        LLMException(LLM_FEATURE_NOT_ENABLED) where there is none."""
        _type(src_cache, Cache, "src_cache")
        _type(dst_cache, Cache, "dst_cache")
        pairs = _block_map(src_to_dst, "src_to_dst", False)
        if not (src_cache.is_blocks_cache and dst_cache.is_blocks_cache):
            raise _ParamInvalid("swap_blocks: param check failed, src and dst caches should be blocks caches.")
        sb = _tensor_bytes(src_cache.cache_desc) // src_cache.cache_desc.shape[0]
        db = _tensor_bytes(dst_cache.cache_desc) // dst_cache.cache_desc.shape[0]
        if sb != db:
            raise _ParamInvalid(f"swap_blocks: src block size:{sb} and dst block size:{db} must be equal")
        if src_cache.cache_desc.num_tensors != dst_cache.cache_desc.num_tensors:
            raise _ParamInvalid("swap_blocks: src and dst num_tensors must be equal")
        for s, d in pairs:
            if s >= src_cache.cache_desc.shape[0] or d >= dst_cache.cache_desc.shape[0]:
                raise _ParamInvalid(f"swap_blocks: block pair ({s}, {d}) out of range")
        places = (src_cache.cache_desc.placement, dst_cache.cache_desc.placement)
        if places not in ((Placement.HOST, Placement.DEVICE), (Placement.DEVICE, Placement.HOST)):
            raise _ParamInvalid(f"swap_blocks: swap from {places[0]} to {places[1]} is not supported")
        rt = _device_runtime()
        if rt is None:
            raise LLMException("swap_blocks: no device runtime (CUDA) in this process: host<->device copies are "
                               "unsupported here", LLMStatusCode.LLM_FEATURE_NOT_ENABLED)
        kind = 1 if places[0] == Placement.HOST else 2  # cudaMemcpyHostToDevice / DeviceToHost
        for sa, da in zip(src_cache.tensor_addrs, dst_cache.tensor_addrs):
            for s, d in pairs:
                r = rt.cudaMemcpy(ctypes.c_void_p(da + d * db), ctypes.c_void_p(sa + s * sb), ctypes.c_size_t(sb),
                                  ctypes.c_int(kind))
                if r != 0:
                    raise LLMException(f"swap_blocks: cudaMemcpy failed: error {r}", LLMStatusCode.LLM_FAILED)


class _DataDistSurface:
    """LLMDataDist's check_link_status, switch_role, link / unlink (rank table), query_register_mem_status."""

    def _surface_init(self):
        self._comms = {}  # comm_id -> [(cluster id, engine name)] linked by link()
        self._next_comm = 1
        self._options = {}
        self._listen = None

    def _manager(self):
        return self.cache_manager._m

    def check_link_status(self, remote_cluster_id):
        """Returns when the link to remote_cluster_id exists and is healthy; LLMException otherwise
        (LLM_NOT_YET_LINK: no link; LLM_FAILED: the link failed, unlink and link again)."""
        _int(remote_cluster_id, "remote_cluster_id")
        _check(self._manager().check_link_status(remote_cluster_id), "check_link_status")

    def switch_role(self, role, switch_options=None):
        """Changes the role (a label here).  llm.listenIpInfo in switch_options re-creates the engine on that
        address, which needs no cache registered and no link (else LLM_FEATURE_NOT_ENABLED)."""
        _type(role, LLMRole, "role")
        if switch_options is not None and not isinstance(switch_options, dict):
            raise TypeError(f"switch_options must be a dict, not {type(switch_options).__name__}")
        m = self._manager()
        opts = dict(switch_options or {})
        listen = opts.get("llm.listenIpInfo")
        if listen is not None and _str(listen, "llm.listenIpInfo") != self._listen:
            if m.registered_addr_count() != 0 or self._comms:
                raise LLMException("switch_role: a new listen address needs a new engine; unregister every cache "
                                   "and unlink first", LLMStatusCode.LLM_FEATURE_NOT_ENABLED)
            options = dict(self._options)
            options.update(opts)
            self.finalize()
            self.init(options)
        self.role = role

    def link(self, comm_name, cluster_rank_info, rank_table):
        """Links this cluster to every other cluster of cluster_rank_info ({cluster id: rank id}), each found in
        rank_table (the reference's JSON: server_list[].device[] with rank_id and device_ip; the engine of a
        rank is device_ip:device_port, or device_ip written "ip:port").  Every participant listens at its own
        rank's address and calls link() with the same arguments.  Returns a comm id for unlink."""
        _str(comm_name, "comm_name")
        if not 0 < len(comm_name) < 128:
            raise _ParamInvalid("comm_name must be 1 to 127 characters")
        if not isinstance(cluster_rank_info, dict):
            raise TypeError(f"cluster_rank_info must be a dict, not {type(cluster_rank_info).__name__}")
        for k, v in cluster_rank_info.items():
            _int(k, "cluster_rank_info key")
            _int(v, "cluster_rank_info value", 0, 2 ** 32 - 1)
        _str(rank_table, "rank_table")
        ranks = list(cluster_rank_info.values())
        if not 1 < len(ranks) <= 4:
            raise _ParamInvalid("cluster_rank_info must hold 2 to 4 clusters")
        if ranks != sorted(ranks) or len(set(ranks)) != len(ranks):
            raise _ParamInvalid("ranks in cluster_rank_info must be ordered and distinct")
        if self.cluster_id not in cluster_rank_info:
            raise _ParamInvalid(f"cluster_rank_info does not name this cluster ({self.cluster_id})")
        engines = _rank_engines(rank_table)
        peers = []
        for cid, rank in cluster_rank_info.items():
            if cid == self.cluster_id:
                continue
            if rank not in engines:
                raise _ParamInvalid(f"rank_table has no device with rank_id {rank} (cluster {cid})")
            peers.append((cid, engines[rank]))
        s, rets = self._manager().link_clusters(peers, 3000)
        if s != 0:
            done = [p for p, r in zip(peers, rets) if r == 0]
            if done:
                self._manager().unlink_clusters(done, 3000)
            _check(s, f"link({comm_name!r})")
        comm_id = self._next_comm
        self._next_comm += 1
        self._comms[comm_id] = peers
        return comm_id

    def unlink(self, comm_id):
        _int(comm_id, "comm_id")
        peers = self._comms.pop(comm_id, None)
        if peers is None:
            raise _ParamInvalid(f"unlink: comm_id {comm_id} is not linked")
        s, _ = self._manager().unlink_clusters(peers, 3000)
        _check(s, "unlink")

    def query_register_mem_status(self, comm_id):
        """Registrations are complete when register_* returns: OK for a linked comm_id."""
        _int(comm_id, "comm_id")
        if comm_id not in self._comms:
            raise _ParamInvalid(f"query_register_mem_status: comm_id {comm_id} is not linked")
        self._manager()
        return RegisterMemStatus.OK


def _rank_engines(rank_table):
    """{rank id: engine name} from a rank table (JSON text)."""
    try:
        table = json.loads(rank_table)
        devices = [d for server in table["server_list"] for d in server["device"]]
    except (ValueError, KeyError, TypeError):
        raise _ParamInvalid("rank_table must be JSON with server_list[].device[]") from None
    out = {}
    for d in devices:
        try:
            rank = int(d["rank_id"])
            ip = str(d["device_ip"])
        except (KeyError, TypeError, ValueError):
            raise _ParamInvalid(f"rank_table device {d!r} lacks rank_id or device_ip") from None
        port = d.get("device_port", d.get("port"))
        if port is not None:
            ip = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
        elif ip.count(":") != 1 and not ip.startswith("["):
            raise _ParamInvalid(f"rank_table device of rank {rank}: no port (device_port, or device_ip as ip:port)")
        out[rank] = ip
    return out
# ---------------------------------------------------------------------------
# end of the drop-in surface block
# ---------------------------------------------------------------------------


class CacheManager(_CacheManagerSurface):
    """Registers caches and pulls / pushes them by key (see src/llm_datadist/cache_manager.h)."""

    def __init__(self, native, host_pool=None, options=None):
        self._m = native
        self._pool = host_pool
        self._options = dict(options or {})

    def register_cache(self, cache_desc, addrs, cache_keys=(), remote_accessible=None):
        _type(cache_desc, CacheDesc, "cache_desc")
        addrs = _int_seq(addrs, "addrs", 1)
        _need(cache_keys, "cache_keys")
        if not isinstance(cache_keys, (list, tuple)):
            raise TypeError("cache_keys must be a list or tuple of CacheKey")
        keys = [_type(k, CacheKey, "cache_keys[]")._native() for k in cache_keys]
        if len(addrs) != cache_desc.num_tensors:
            raise _ParamInvalid(f"{len(addrs)} addresses for num_tensors={cache_desc.num_tensors}")
        s, c = self._m.register_cache(cache_desc._native(), addrs, keys, _opt_bool(remote_accessible, "remote_accessible"))
        _check(s, "register_cache")
        return Cache(c, cache_desc)

    def register_blocks_cache(self, cache_desc, addrs, blocks_cache_key=None, remote_accessible=None):
        _type(cache_desc, CacheDesc, "cache_desc")
        addrs = _int_seq(addrs, "addrs", 1)
        key = None if blocks_cache_key is None else _type(blocks_cache_key, BlocksCacheKey, "blocks_cache_key")._native()
        if len(addrs) != cache_desc.num_tensors:
            raise _ParamInvalid(f"{len(addrs)} addresses for num_tensors={cache_desc.num_tensors}")
        s, c = self._m.register_blocks_cache(cache_desc._native(), addrs, key,
                                             _opt_bool(remote_accessible, "remote_accessible"))
        _check(s, "register_blocks_cache")
        return Cache(c, cache_desc)

    def unregister_cache(self, cache_id):
        _check(self._m.unregister_cache(_int(_need(cache_id, "cache_id"), "cache_id", 1, 2 ** 63 - 1)),
               "unregister_cache")

    def pull_cache(self, cache_key, cache, batch_index=0, size=-1, **kwargs):
        _type(cache_key, (CacheKey, CacheKeyByIdAndIndex), "cache_key")
        _type(cache, Cache, "cache")
        s, d, t = _layers(kwargs, "pull_cache")
        _check(self._m.pull_cache(cache_key._native(), cache._cache, _int(batch_index, "batch_index", 0, 2 ** 32 - 1),
                                  _int(size, "size", -1, 2 ** 63 - 1), s, d, t), "pull_cache")

    def pull_blocks(self, src_cache_key, dst_cache, src_blocks=(), dst_blocks=(), **kwargs):
        _type(src_cache_key, (CacheKey, CacheKeyByIdAndIndex, BlocksCacheKey), "src_cache_key")
        _type(dst_cache, Cache, "dst_cache")
        sb, db = _int_seq(src_blocks, "src_blocks"), _int_seq(dst_blocks, "dst_blocks")
        s, d, t = _layers(kwargs, "pull_blocks")
        _check(self._m.pull_blocks(src_cache_key._native(), dst_cache._cache, sb, db, s, d, t), "pull_blocks")

    def push_cache(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None, dst_layer_range=None,
                   size=-1, tensor_num_per_layer=_NUM_TENSORS_PER_LAYER):
        _type(dst_cache_key, CacheKeyByIdAndIndex, "dst_cache_key")
        _type(src_cache, Cache, "src_cache")
        s, d, t = _layers(dict(src_layer_range=src_layer_range, dst_layer_range=dst_layer_range,
                               tensor_num_per_layer=tensor_num_per_layer), "push_cache")
        _check(self._m.push_cache(dst_cache_key._native(), src_cache._cache,
                                  _int(src_batch_index, "src_batch_index", 0, 2 ** 32 - 1),
                                  _int(size, "size", -1, 2 ** 63 - 1), s, d, t), "push_cache")

    def push_blocks(self, dst_cache_key, src_cache, src_blocks=(), dst_blocks=(), src_layer_range=None,
                    dst_layer_range=None, tensor_num_per_layer=_NUM_TENSORS_PER_LAYER):
        _type(dst_cache_key, BlocksCacheKey, "dst_cache_key")
        _type(src_cache, Cache, "src_cache")
        sb, db = _int_seq(src_blocks, "src_blocks"), _int_seq(dst_blocks, "dst_blocks")
        s, d, t = _layers(dict(src_layer_range=src_layer_range, dst_layer_range=dst_layer_range,
                               tensor_num_per_layer=tensor_num_per_layer), "push_blocks")
        _check(self._m.push_blocks(dst_cache_key._native(), src_cache._cache, sb, db, s, d, t), "push_blocks")


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


class LLMDataDist(_DataDistSurface):
    """One cluster: an engine plus its CacheManager.

    init(options) takes every key LLMConfig.generate_options() emits (see
    _init_options): "llm.listenIpInfo" ("ip:port" to be linkable, default
    "127.0.0.1" = client only), "llm.SyncKvCacheWaitTime" (ms, default 1000),
    "llm.HostMemPoolConfig" (the host pool of allocate_cache), the RDMA and
    LocalCommRes keys (to the engine) are applied; the other "llm." and "ge."
    keys are accepted and logged once at INFO; "adxl." keys and the engine's
    own option names go to AdxlEngine::Initialize; any other key is refused.
    """

    def __init__(self, role, cluster_id):
        self.role = _type(role, LLMRole, "role")
        self.cluster_id = _int(cluster_id, "cluster_id")
        self._native = None
        self._cache_manager = None
        self._surface_init()

    def init(self, options):
        _need(options, "options")
        if not isinstance(options, dict):
            raise TypeError("options must be a dict")
        if self._native is not None:
            return
        listen, timeout, engine_opts, pool_cfg = _init_options(options)
        m = _native.CacheManager()
        _check(m.initialize(self.cluster_id, listen, engine_opts), "init")
        try:
            _check(m.set_sync_timeout(timeout), "init")
            pool = _HostPool(pool_cfg) if pool_cfg else None
        except BaseException:
            m.finalize()
            raise
        self._native = m
        self._cache_manager = CacheManager(m, pool, options)
        self._options = dict(options)
        self._listen = listen

    @property
    def cache_manager(self):
        if self._cache_manager is None:
            raise LLMException("LLMDataDist is not initialized", LLMStatusCode.LLM_FAILED)
        return self._cache_manager

    def _clusters(self, clusters):
        _need(clusters, "clusters")
        if not isinstance(clusters, (list, tuple)):
            raise TypeError("clusters must be a list or tuple of LLMClusterInfo")
        return [(_int(_type(c, LLMClusterInfo, "clusters[]").remote_cluster_id, "remote_cluster_id"), c._engine())
                for c in clusters]

    def link_clusters(self, clusters, timeout=3000):
        cl = self._clusters(clusters)
        s, rets = self.cache_manager._m.link_clusters(cl, _int(timeout, "timeout", 1, 2 ** 31 - 1))
        return _code(s), [_code(r) for r in rets]

    def unlink_clusters(self, clusters, timeout=3000, force=False):
        cl = self._clusters(clusters)
        s, rets = self.cache_manager._m.unlink_clusters(cl, _int(timeout, "timeout", 1, 2 ** 31 - 1))
        return _code(s), [_code(r) for r in rets]

    def finalize(self):
        if self._native is not None:
            self._native.finalize()
            if self._cache_manager is not None and self._cache_manager._pool is not None:
                self._cache_manager._pool.close()  # after finalize: nothing registered uses it any more
        self._native = None
        self._cache_manager = None
        self._surface_init()


# ---- BEGIN layer-wise push (issue 14, item 2) -------------------------------------------------------------------
# LayerSynchronizer, TransferConfig, TransferWithCacheKeyConfig, CacheTask and
# CacheManager.transfer_cache_async, as the reference package names them
# (src/llm_datadist/cache_task.h for the rules).  Kept in one block.
import abc as _abc
import atexit as _atexit
import weakref as _weakref


class LayerSynchronizer(_abc.ABC):
    """Implemented by the caller: synchronize_layer(layer_index, timeout_in_millis) returns True once the layer
    may be sent, False when it is not ready in time (the task then ends with LLM_TIMEOUT).  Called from the task's
    background thread, layer by layer, in order; an exception ends the task with LLM_FAILED."""

    @_abc.abstractmethod
    def synchronize_layer(self, layer_index, timeout_in_millis):
        raise NotImplementedError


def _lw_range(r, name, required=False):
    if r is None:
        if required:
            raise ValueError(f"{name} is required")
        return None
    if not isinstance(r, range):
        raise TypeError(f"{name} must be a range, not {type(r).__name__}")
    if r.step != 1 or r.start < 0 or r.stop <= r.start or r.stop > 2 ** 32 - 1:
        raise LLMException(f"{name}={r!r}: the step must be 1 and the range non-empty and non-negative",
                           LLMStatusCode.LLM_PARAM_INVALID)
    return (r.start, r.stop)


class TransferConfig:
    """A destination by raw addresses: two (K, V) per layer of src_layer_range (None: every source layer)."""

    def __init__(self, dst_cluster_id, dst_addrs, src_layer_range=None, src_batch_index=0):
        self.dst_cluster_id = _int(dst_cluster_id, "dst_cluster_id")
        self.dst_addrs = _int_seq(dst_addrs, "dst_addrs", 1, 2 ** 64 - 1)
        self._src = _lw_range(src_layer_range, "src_layer_range")
        if self._src is not None and len(self.dst_addrs) != 2 * (self._src[1] - self._src[0]):
            raise LLMException(f"{len(self.dst_addrs)} dst_addrs for {self._src[1] - self._src[0]} layers "
                               "(two per layer)", LLMStatusCode.LLM_PARAM_INVALID)
        self.src_layer_range = src_layer_range
        self.src_batch_index = _int(src_batch_index, "src_batch_index", 0, 2 ** 32 - 1)

    def _native(self):
        return _native.TransferConfig(self.dst_cluster_id, self.dst_addrs, self._src, self.src_batch_index)


class TransferWithCacheKeyConfig:
    """A destination by the key of a remote-accessible cache: source layers -> destination layers."""

    def __init__(self, cache_key, src_layer_range=None, dst_layer_range=None, src_batch_index=0):
        self.cache_key = _type(cache_key, (BlocksCacheKey, CacheKeyByIdAndIndex), "cache_key")
        self._src = _lw_range(src_layer_range, "src_layer_range", required=True)
        self._dst = _lw_range(dst_layer_range, "dst_layer_range", required=True)
        if self._src[1] - self._src[0] != self._dst[1] - self._dst[0]:
            raise LLMException(f"src_layer_range {src_layer_range!r} and dst_layer_range {dst_layer_range!r} "
                               "differ in length", LLMStatusCode.LLM_PARAM_INVALID)
        self.src_layer_range, self.dst_layer_range = src_layer_range, dst_layer_range
        self.src_batch_index = _int(src_batch_index, "src_batch_index", 0, 2 ** 32 - 1)
        if isinstance(cache_key, BlocksCacheKey) and self.src_batch_index != 0:
            raise ValueError("src_batch_index must be 0 with a BlocksCacheKey")

    def _native(self):
        return _native.TransferWithCacheKeyConfig(self.cache_key._native(), self._src, self._dst, self.src_batch_index)


def _lw_timeout(t):
    return None if t is None else _int(t, "timeout_in_millis", 0, 2 ** 31 - 1)


class CacheTask:
    """A layer-wise push under way (returned by CacheManager.transfer_cache_async)."""

    def __init__(self, native):
        self._task = native

    def synchronize(self, timeout_in_millis=None):
        """Waits for every layer; the task's LLMStatusCode.  A timeout that passes cancels the task
        (LLM_TIMEOUT; nothing is pushed after)."""
        return _code(self._task.synchronize(_lw_timeout(timeout_in_millis)))

    def get_results(self, timeout_in_millis=None):
        """Waits like synchronize; one LLMStatusCode per transfer config, None for a config none of whose
        layers was pushed."""
        return [None if r is None else _code(r) for r in self._task.get_results(_lw_timeout(timeout_in_millis))]


def _lw_transfer_cache_async(self, src_cache, layer_synchronizer, transfer_configs, src_block_indices=None,
                             dst_block_indices=None, dst_block_memory_size=None):
    _type(src_cache, Cache, "src_cache")
    _type(layer_synchronizer, LayerSynchronizer, "layer_synchronizer")
    _need(transfer_configs, "transfer_configs")
    if not isinstance(transfer_configs, (list, tuple)):
        raise TypeError("transfer_configs must be a list or tuple of TransferConfig / TransferWithCacheKeyConfig")
    if not transfer_configs:
        raise ValueError("transfer_configs must not be empty")
    configs = [_type(c, (TransferConfig, TransferWithCacheKeyConfig), "transfer_configs[]")._native()
               for c in transfer_configs]
    sb = [] if src_block_indices is None else _int_seq(src_block_indices, "src_block_indices")
    db = [] if dst_block_indices is None else _int_seq(dst_block_indices, "dst_block_indices")
    bs = 0 if dst_block_memory_size is None else _int(dst_block_memory_size, "dst_block_memory_size")
    s, task = _native.transfer_cache_async(self._m, src_cache._cache, layer_synchronizer, configs, sb, db, bs)
    _check(s, "transfer_cache_async")
    return CacheTask(task)


CacheManager.transfer_cache_async = _lw_transfer_cache_async

# A task's thread needs the GIL to call the synchronizer, so the manager must be finalized with the GIL released
# (LLMDataDist.finalize does) before the interpreter goes: also when a program forgets to, or drops the object.
_lw_live = _weakref.WeakSet()
_lw_orig_init = LLMDataDist.init


def _lw_init(self, *args, **kwargs):
    r = _lw_orig_init(self, *args, **kwargs)
    _lw_live.add(self)
    return r


def _lw_finalize_all():
    for dd in list(_lw_live):
        try:
            dd.finalize()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


LLMDataDist.init = _lw_init
if "__del__" not in LLMDataDist.__dict__:
    LLMDataDist.__del__ = lambda self: self.finalize() if getattr(self, "_native", None) is not None else None
_atexit.register(_lw_finalize_all)
__all__ += ["CacheTask", "LayerSynchronizer", "TransferConfig", "TransferWithCacheKeyConfig"]
# ---- END layer-wise push ----------------------------------------------------------------------------------------
