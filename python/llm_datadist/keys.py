"""Cache descriptors, the three kinds of cache key, and Cache (a registered cache)."""
from . import _native
from ._properties import _getter
from .errors import _ParamInvalid
from .validation import _U64, _int, _int_seq, _type


DataType = _native.DataType
Placement = _native.Placement


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

    prompt_cluster_id = _getter("cluster_id")  # the reference's spelling

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

    prompt_cluster_id = _getter("cluster_id")  # the reference's spelling

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


def _tensor_bytes(desc):
    n = _native.data_type_size(desc.data_type)
    for d in desc.shape:
        n *= d
    return n
