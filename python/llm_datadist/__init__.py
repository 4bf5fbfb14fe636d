"""LLM-DataDist cache layer on the ADXL engine (names follow the reference API).

    from llm_datadist import *
    dd = LLMDataDist(LLMRole.PROMPT, cluster_id=1)
    dd.init({"llm.listenIpInfo": "127.0.0.1:26210"})
    cache = dd.cache_manager.register_blocks_cache(CacheDesc(2, [16, 1024], DataType.DT_FLOAT16, Placement.HOST),
                                                   addrs, BlocksCacheKey(1), remote_accessible=True)

Errors (docs/contract.md §10): a wrong argument type raises TypeError, a wrong value
ValueError, None where an object is required AttributeError; any other failed
status raises LLMException (its status_code is an LLMStatusCode).
"""
import enum

from . import _native

__all__ = [
    "BlocksCacheKey", "Cache", "CacheDesc", "CacheKey", "CacheKeyByIdAndIndex", "CacheManager", "DataType",
    "LLMClusterInfo", "LLMDataDist", "LLMException", "LLMRole", "LLMStatusCode", "Placement",
]

DataType = _native.DataType
Placement = _native.Placement
_NUM_TENSORS_PER_LAYER = 2
_U64 = 2 ** 64


# Built from the C++ status table (include/llm_datadist/cache_types.h): its
# rows, then the other names of some values (LLM_UNSUPPORTED,
# LLM_RESOURCE_EXHAUSTED: aliases, the C++ header's earlier names), then
# LLM_UNKNOWN, this package's answer for a value outside the table.
LLMStatusCode = enum.IntEnum(
    "LLMStatusCode", [(name, value) for name, value, _ in _native.status_table()] + [("LLM_UNKNOWN", 0xFFFFFFFF)],
    module=__name__)
LLMStatusCode.__doc__ = "LLM-DataDist statuses (the vendor's names), from the C++ status table."


class LLMException(RuntimeError):
    """A failed call; status_code says why."""

    def __init__(self, message, status_code):
        super().__init__(message)
        self.status_code = status_code


class LLMRole(enum.Enum):
    PROMPT = 1
    DECODER = 2
    MIX = 3


def _code(status):
    try:
        return LLMStatusCode(status)
    except ValueError:
        return LLMStatusCode.LLM_UNKNOWN


def _check(status, what):
    if status == 0:
        return
    if status == LLMStatusCode.LLM_PARAM_INVALID:
        raise ValueError(f"{what}: invalid argument (see the llm_datadist ERROR line on stderr)")
    raise LLMException(f"{what} failed: {_native.status_name(status)}", _code(status))


def _need(value, name):
    if value is None:
        raise AttributeError(f"{name} must not be None")
    return value


def _int(value, name, lo=0, hi=_U64 - 1):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{name}={value} is out of range [{lo}, {hi}]")
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
        raise ValueError(f"{name}={r!r}: the step must be 1 and the range non-empty and non-negative")
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
            raise ValueError("shape must not be empty")
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


class CacheKey:
    """Batch entry i of a cache registered with cache_keys[i] at cluster `cluster_id`."""

    def __init__(self, cluster_id, req_id, model_id=0, prefix_id=_U64 - 1):
        self.cluster_id = _int(cluster_id, "cluster_id")
        self.req_id = _int(req_id, "req_id")
        self.model_id = _int(model_id, "model_id")
        self.prefix_id = _int(prefix_id, "prefix_id")

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
    """The paged cache registered with this key at cluster `cluster_id`."""

    def __init__(self, cluster_id, model_id=0):
        self.cluster_id = _int(cluster_id, "cluster_id")
        self.model_id = _int(model_id, "model_id")

    @property
    def prompt_cluster_id(self):
        return self.cluster_id

    def _native(self):
        return _native.BlocksCacheKey(self.cluster_id, self.model_id)


class Cache:
    """A registered cache (returned by register_cache / register_blocks_cache)."""

    def __init__(self, native, cache_desc):
        self._cache = native
        self.cache_desc = cache_desc

    @property
    def cache_id(self):
        return self._cache.cache_id

    @property
    def tensor_addrs(self):
        return list(self._cache.tensor_addrs)

    @property
    def remote_accessible(self):
        return self._cache.remote_accessible

    def __repr__(self):
        return f"Cache(cache_id={self.cache_id}, {self.cache_desc!r})"


class CacheManager:
    """Registers caches and pulls / pushes them by key (see include/llm_datadist/cache_manager.h)."""

    def __init__(self, native):
        self._m = native

    def register_cache(self, cache_desc, addrs, cache_keys=(), remote_accessible=None):
        _type(cache_desc, CacheDesc, "cache_desc")
        addrs = _int_seq(addrs, "addrs", 1)
        _need(cache_keys, "cache_keys")
        if not isinstance(cache_keys, (list, tuple)):
            raise TypeError("cache_keys must be a list or tuple of CacheKey")
        keys = [_type(k, CacheKey, "cache_keys[]")._native() for k in cache_keys]
        if len(addrs) != cache_desc.num_tensors:
            raise ValueError(f"{len(addrs)} addresses for num_tensors={cache_desc.num_tensors}")
        s, c = self._m.register_cache(cache_desc._native(), addrs, keys, _opt_bool(remote_accessible, "remote_accessible"))
        _check(s, "register_cache")
        return Cache(c, cache_desc)

    def register_blocks_cache(self, cache_desc, addrs, blocks_cache_key=None, remote_accessible=None):
        _type(cache_desc, CacheDesc, "cache_desc")
        addrs = _int_seq(addrs, "addrs", 1)
        key = None if blocks_cache_key is None else _type(blocks_cache_key, BlocksCacheKey, "blocks_cache_key")._native()
        if len(addrs) != cache_desc.num_tensors:
            raise ValueError(f"{len(addrs)} addresses for num_tensors={cache_desc.num_tensors}")
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
    """A remote cluster to link: its id and the ip:port its engine listens on."""

    def __init__(self):
        self.remote_cluster_id = 0
        self.local_ip_info = []
        self.remote_ip_info = []

    def append_local_ip_info(self, ip, port):
        self.local_ip_info.append((ip, port))

    def append_remote_ip_info(self, ip, port):
        self.remote_ip_info.append((ip, port))

    def _engine(self):
        if not self.remote_ip_info:
            raise ValueError("LLMClusterInfo has no remote ip info")
        ip, port = self.remote_ip_info[0]
        ip = ip if isinstance(ip, str) else str(ip)
        return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class LLMDataDist:
    """One cluster: an engine plus its CacheManager.

    Options of init(): "llm.listenIpInfo" ("ip:port" to be linkable, default
    "127.0.0.1" = client only), "llm.SyncKvCacheWaitTime" (ms, default 1000);
    any other key is passed to AdxlEngine::Initialize.
    """

    def __init__(self, role, cluster_id):
        self.role = _type(role, LLMRole, "role")
        self.cluster_id = _int(cluster_id, "cluster_id")
        self._native = None
        self._cache_manager = None

    def init(self, options):
        _need(options, "options")
        if not isinstance(options, dict):
            raise TypeError("options must be a dict")
        opts = {str(k): str(v) for k, v in options.items()}
        listen = opts.pop("llm.listenIpInfo", "127.0.0.1")
        timeout = int(opts.pop("llm.SyncKvCacheWaitTime", "1000"))
        m = _native.CacheManager()
        _check(m.initialize(self.cluster_id, listen, opts), "init")
        _check(m.set_sync_timeout(timeout), "init")
        self._native = m
        self._cache_manager = CacheManager(m)

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
        self._native = None
        self._cache_manager = None


# ---- BEGIN layer-wise push (issue 14, item 2) -------------------------------------------------------------------
# LayerSynchronizer, TransferConfig, TransferWithCacheKeyConfig, CacheTask and
# CacheManager.transfer_cache_async, as the reference package names them
# (include/llm_datadist/cache_task.h for the rules).  Kept in one block.
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
