"""CacheManager: registration, pulls and pushes by key, the host-pool
allocations, local copies and swaps, and the layer-wise push."""
from . import _native
from .errors import LLMException, LLMStatusCode, _ParamInvalid, _check
from .keys import BlocksCacheKey, Cache, CacheDesc, CacheKey, CacheKeyByIdAndIndex, Placement, _tensor_bytes
from .layerwise import _start_transfer
from .validation import (_NUM_TENSORS_PER_LAYER, _U64, _block_map, _int, _int_seq, _layers, _need, _opt_bool,
                         _type)


def _swap_side(cache):
    # The cache as this package holds it: a create_cpu_cache one has no native cache behind it.
    return _native.Cache(cache.cache_id, cache.cache_desc._native(), cache.tensor_addrs, cache.is_blocks_cache)


class CacheManager:
    """Registers caches and pulls / pushes them by key (the C++ LlmDataDist and include/llm_datadist/llm_datadist_ext.h)."""

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

    def copy_cache(self, dst, src, dst_batch_index=0, src_batch_index=0, offset=0, size=-1, req_id=None):
        """Local copy of batch entry src_batch_index of src into entry dst_batch_index of dst, every tensor:
        `size` bytes (-1: the rest of the source entry) from byte `offset` of the entry.  The C++ CopyKvCache:
        host caches, and device caches of the host ACL emulation; other device caches: LLM_FEATURE_NOT_ENABLED."""
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
        _check(self._m.copy_cache(src.cache_id, dst.cache_id, src_batch_index, dst_batch_index, offset, size),
               "copy_cache")

    def copy_blocks(self, cache, copy_block_info):
        """Local copy inside a paged cache: {src block: [dst blocks]}, every tensor (the C++ CopyKvBlocks)."""
        _type(cache, Cache, "cache")
        pairs = _block_map(copy_block_info, "copy_block_info", True)
        if not cache.is_blocks_cache:
            raise _ParamInvalid("copy_blocks: param check failed, cache should be blocks cache.")
        if not pairs:
            return
        _check(self._m.copy_blocks(cache.cache_id, cache.cache_id, [s for s, _ in pairs], [[d for _, d in pairs]]),
               "copy_blocks")

    def swap_blocks(self, src_cache, dst_cache, src_to_dst):
        """Blocks between a host and a device cache ({src block: dst block}): the C++ ext::SwapKvBlocks (GIL
        released), which checks the caches and copies with the device runtime that owns the device cache's memory
        (CUDA, the host ACL emulation, or a CUDA / ACL runtime already loaded in this process);
        LLMException(LLM_FEATURE_NOT_ENABLED) where there is none.  The caches need not be registered."""
        _type(src_cache, Cache, "src_cache")
        _type(dst_cache, Cache, "dst_cache")
        pairs = _block_map(src_to_dst, "src_to_dst", False)
        _check(self._m.swap_blocks(_swap_side(src_cache), _swap_side(dst_cache), [s for s, _ in pairs],
                                   [[d for _, d in pairs]]), "swap_blocks")

    def transfer_cache_async(self, src_cache, layer_synchronizer, transfer_configs, src_block_indices=None,
                             dst_block_indices=None, dst_block_memory_size=None):
        """Pushes src_cache layer by layer as layer_synchronizer releases each layer; a CacheTask."""
        return _start_transfer(self._m, src_cache, layer_synchronizer, transfer_configs, src_block_indices,
                               dst_block_indices, dst_block_memory_size)
