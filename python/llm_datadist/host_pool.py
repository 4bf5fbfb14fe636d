"""The host memory pool of allocate_cache / allocate_blocks_cache
(llm.HostMemPoolConfig)."""
import json
import threading

from . import _native
from .errors import LLMException, LLMStatusCode, _ParamInvalid, _check
from .validation import _int


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
