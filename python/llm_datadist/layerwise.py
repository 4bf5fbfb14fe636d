"""Layer-wise push: LayerSynchronizer, TransferConfig, TransferWithCacheKeyConfig
and CacheTask, as the reference package names them, and what
CacheManager.transfer_cache_async starts (include/llm_datadist/llm_datadist_ext_layerwise.h for
the rules)."""
import abc
import atexit
import weakref

from . import _native
from .errors import LLMException, LLMStatusCode, _ParamInvalid, _check, _code
from .keys import BlocksCacheKey, Cache, CacheKeyByIdAndIndex
from .validation import _int, _int_seq, _need, _type


class LayerSynchronizer(abc.ABC):
    """Implemented by the caller: synchronize_layer(layer_index, timeout_in_millis) returns True once the layer
    may be sent, False when it is not ready in time (the task then ends with LLM_TIMEOUT).  Called from the task's
    background thread, layer by layer, in order; an exception ends the task with LLM_FAILED."""

    @abc.abstractmethod
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
        raise _ParamInvalid(f"{name}={r!r}: the step must be 1 and the range non-empty and non-negative")
    return (r.start, r.stop)


class TransferConfig:
    """A destination by raw addresses: two (K, V) per layer of src_layer_range (None: every source layer)."""

    def __init__(self, dst_cluster_id, dst_addrs, src_layer_range=None, src_batch_index=0):
        self.dst_cluster_id = _int(dst_cluster_id, "dst_cluster_id")
        self.dst_addrs = _int_seq(dst_addrs, "dst_addrs", 1, 2 ** 64 - 1)
        self._src = _lw_range(src_layer_range, "src_layer_range")
        if self._src is not None and len(self.dst_addrs) != 2 * (self._src[1] - self._src[0]):
            raise _ParamInvalid(f"{len(self.dst_addrs)} dst_addrs for {self._src[1] - self._src[0]} layers "
                               "(two per layer)")
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
            raise _ParamInvalid(f"src_layer_range {src_layer_range!r} and dst_layer_range {dst_layer_range!r} "
                               "differ in length")
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


def _start_transfer(manager, src_cache, layer_synchronizer, transfer_configs, src_block_indices,
                    dst_block_indices, dst_block_memory_size):
    """CacheManager.transfer_cache_async: checks the arguments and starts the task on `manager` (native)."""
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
    s, task = _native.transfer_cache_async(manager, src_cache._cache, layer_synchronizer, configs, sb, db, bs)
    _check(s, "transfer_cache_async")
    return CacheTask(task)


# A task's thread needs the GIL to call the synchronizer, so the manager must be finalized with the GIL released
# (LLMDataDist.finalize does) before the interpreter goes: also when a program forgets to, or drops the object.
_live = weakref.WeakSet()


def _finalize_at_exit(datadist):
    """Finalizes `datadist` at interpreter exit unless it is gone or finalized by then."""
    _live.add(datadist)


def _finalize_all():
    for dd in list(_live):
        try:
            dd.finalize()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


atexit.register(_finalize_all)
