"""The vendor package's small value types that this package's API does not
otherwise need: Status, Memtype, MemInfo and KvCache.

- Status wraps an LLMStatusCode (is_ok(), status_code), as the vendor's
  status module does.
- Memtype / MemInfo describe registered memory (the vendor's
  CacheManager.remap_registered_memory argument, a reserved call there too:
  nothing is remapped here; see docs/cache_layer.md).
- KvCache is the cache value of the vendor's KvCacheManager mode (cache_id,
  cache_desc, per_device_tensor_addrs); KvCache.create_cpu_cache describes
  host tensors at given addresses.  The KvCacheManager mode itself is not
  provided: CacheManager (Cache) is the mode this package implements.
"""
import enum

from ._properties import _getter


class Memtype(enum.Enum):
    """Where registered memory lives (the vendor's LLMMemType values)."""
    MEM_TYPE_DEVICE = 0
    MEM_TYPE_HOST = 1


def _nonneg_int(value, name):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < 2 ** 64:
        raise ValueError(f"{name} {value} is not in [0, 2**64)")
    return value


class MemInfo:
    """MemInfo(mem_type: Memtype, addr: int, size: int)."""

    def __init__(self, mem_type, addr, size):
        if not isinstance(mem_type, Memtype):
            raise TypeError(f"mem_type must be a Memtype, not {type(mem_type).__name__}")
        self._mem_type = mem_type
        self._addr = _nonneg_int(addr, "addr")
        self._size = _nonneg_int(size, "size")

    mem_type = _getter("_mem_type")
    addr = _getter("_addr")
    size = _getter("_size")

    def __repr__(self):
        return f"MemInfo(mem_type={self._mem_type}, addr={self._addr:#x}, size={self._size})"


def make_status(status_code_type):
    """The Status class over this package's LLMStatusCode (passed in to avoid an import cycle)."""

    class Status:
        """Status(status_code): a call's outcome, as the vendor's status module has it."""

        def __init__(self, status):
            if not isinstance(status, status_code_type):
                try:
                    status = status_code_type(status)
                except ValueError:
                    status = status_code_type.LLM_FAILED  # as the vendor's code_2_status
            self._status_code = status

        def is_ok(self):
            return self._status_code == status_code_type.LLM_SUCCESS

        status_code = _getter("_status_code")

        def __repr__(self):
            return f"Status({self._status_code.name})"

    return Status


class KvCache:
    """KvCache(cache_id, cache_desc, per_device_tensor_addrs): a cache of the vendor's
    KvCacheManager mode.  per_device_tensor_addrs: one list of tensor addresses per
    device (one list for host memory)."""

    def __init__(self, cache_id, cache_desc, per_device_tensor_addrs=None):
        if isinstance(cache_id, bool) or not isinstance(cache_id, int):
            raise TypeError(f"cache_id must be an int, not {type(cache_id).__name__}")
        self._cache_id = cache_id
        self._cache_desc = cache_desc
        addrs = [] if per_device_tensor_addrs is None else per_device_tensor_addrs
        if not isinstance(addrs, (list, tuple)) or not all(isinstance(a, (list, tuple)) for a in addrs):
            raise TypeError("per_device_tensor_addrs must be a list of lists of int")
        self._addrs = [[_nonneg_int(a, "per_device_tensor_addrs[][]") for a in dev] for dev in addrs]

    cache_id = _getter("_cache_id")
    cache_desc = _getter("_cache_desc")

    @property
    def per_device_tensor_addrs(self):
        return [list(dev) for dev in self._addrs]

    @staticmethod
    def create_cpu_cache(cache_desc, addrs):
        """A host KvCache over the caller's tensors at `addrs` (one per tensor); not registered."""
        if not isinstance(addrs, (list, tuple)):
            raise TypeError("addrs must be a list of int")
        return KvCache(-1, cache_desc, [list(addrs)])

    def __repr__(self):
        return f"KvCache(cache_id={self._cache_id}, cache_desc={self._cache_desc!r})"
