"""The host memory pool of allocate_cache / allocate_blocks_cache
(llm.HostMemPoolConfig): its configuration and errors here; the pool itself
is the C++ cache layer's (include/llm_datadist/llm_datadist_host_pool.h, _native.HostPool)."""
import json

from . import _native
from .errors import LLMException, LLMStatusCode, _ParamInvalid, _check
from .validation import _int


class _HostPool:
    """llm.HostMemPoolConfig ('{"memory_size": bytes}'): one AdxlEngine::MallocMem(MEM_HOST)
    region, handed out first-fit in _native.HOST_POOL_ALIGN-aligned chunks."""

    def __init__(self, cfg):
        try:
            conf = json.loads(cfg)
            size = conf["memory_size"]
        except (ValueError, KeyError, TypeError):
            raise _ParamInvalid(f"llm.HostMemPoolConfig {cfg!r}: expected a JSON object with memory_size") from None
        if isinstance(size, str) and size.isdigit():
            size = int(size)
        size = _int(size, "llm.HostMemPoolConfig memory_size", 1, 2 ** 63 - 1)
        self._pool = _native.HostPool()
        _check(self._pool.init(size), "init: host memory pool")

    @property
    def base(self):
        return self._pool.base

    @property
    def size(self):
        return self._pool.size

    def alloc(self, nbytes):
        """(address, length) of a free chunk of at least nbytes."""
        s, addr, n = self._pool.alloc(nbytes)
        if s == LLMStatusCode.LLM_OUT_OF_MEMORY:
            raise LLMException(f"host memory pool: no free range for {nbytes} bytes (pool of {self.size}, "
                               f"{self.free_bytes()} free)", LLMStatusCode.LLM_OUT_OF_MEMORY)
        _check(s, "host memory pool")
        return addr, n

    def release(self, chunks):
        self._pool.release(list(chunks))

    def free_bytes(self):
        return self._pool.free_bytes()

    def close(self):
        self._pool.close()
