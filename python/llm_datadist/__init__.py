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
from . import _native
from .cache_manager import CacheManager
from .config import LLMClusterInfo, LLMConfig, LlmConfig, LLMRole, RegisterMemStatus
from .datadist import LLMDataDist
from .errors import LLMException, LLMStatusCode, Status
from .keys import BlocksCacheKey, Cache, CacheDesc, CacheKey, CacheKeyByIdAndIndex, DataType, Placement
from .layerwise import CacheTask, LayerSynchronizer, TransferConfig, TransferWithCacheKeyConfig
from .vendor_types import KvCache, MemInfo, Memtype

__all__ = [
    "BlocksCacheKey", "Cache", "CacheDesc", "CacheKey", "CacheKeyByIdAndIndex", "CacheManager", "DataType",
    "LLMClusterInfo", "LLMDataDist", "LLMException", "LLMRole", "LLMStatusCode", "Placement",
    "LLMConfig", "LlmConfig", "RegisterMemStatus",
    "KvCache", "MemInfo", "Memtype", "Status",
    "CacheTask", "LayerSynchronizer", "TransferConfig", "TransferWithCacheKeyConfig",
]
