"""llm_datadist package: exceptions of docs/contract.md §10, registration rules, pull / push."""
import ctypes

import pytest

from llm_datadist import (BlocksCacheKey, CacheDesc, CacheKey, CacheKeyByIdAndIndex, DataType, LLMClusterInfo,
                          LLMDataDist, LLMException, LLMRole, LLMStatusCode, Placement)


class Tensors:
    def __init__(self, n, size, fill=0):
        self.bufs = [(ctypes.c_uint8 * size)(*([fill] * size)) for _ in range(n)]
        self.addrs = [ctypes.addressof(b) for b in self.bufs]


def host_desc(n, shape):
    return CacheDesc(n, shape, DataType.DT_FLOAT16, Placement.HOST)


@pytest.fixture
def dd():
    d = LLMDataDist(LLMRole.PROMPT, 1)
    d.init({})
    yield d
    d.finalize()


def cluster(cid, port):
    c = LLMClusterInfo()
    c.remote_cluster_id = cid
    c.append_remote_ip_info("127.0.0.1", port)
    return c


def test_types_and_values():
    with pytest.raises(TypeError):
        CacheDesc("2", [4, 8], DataType.DT_FLOAT16)
    with pytest.raises(TypeError):
        CacheDesc(2, [4, 8], "fp16")
    with pytest.raises(ValueError):
        CacheDesc(0, [4, 8], DataType.DT_FLOAT16)
    with pytest.raises(ValueError):
        CacheDesc(2, [4, -8], DataType.DT_FLOAT16)
    with pytest.raises(AttributeError):
        CacheDesc(2, None, DataType.DT_FLOAT16)
    with pytest.raises(ValueError):
        CacheKey(1, -1)
    k = CacheKey(1, 2)
    assert k.prefix_id == 2 ** 64 - 1 and k.model_id == 0 and k.prompt_cluster_id == 1
    assert CacheKeyByIdAndIndex(1, 3).batch_index == 0
    assert BlocksCacheKey(1).model_id == 0
    assert CacheDesc(2, [4], DataType.DT_BF16).placement == Placement.DEVICE


def test_register_cache_rules(dd):
    cm = dd.cache_manager
    t = Tensors(2, 64)
    with pytest.raises(AttributeError):
        cm.register_cache(None, t.addrs)
    with pytest.raises(AttributeError):
        cm.register_cache(host_desc(2, [4, 8]), None)
    with pytest.raises(TypeError):
        cm.register_cache(host_desc(2, [4, 8]), "0x1234")
    with pytest.raises(TypeError):
        cm.register_cache(host_desc(2, [4, 8]), t.addrs, remote_accessible="yes")
    with pytest.raises(TypeError):
        cm.register_cache(host_desc(2, [4, 8]), t.addrs, cache_keys=[BlocksCacheKey(1)])
    with pytest.raises(ValueError):
        cm.register_cache(host_desc(3, [4, 8]), t.addrs)
    with pytest.raises(ValueError):  # key of another cluster
        cm.register_cache(host_desc(2, [4, 8]), t.addrs, [CacheKey(2, 1)])
    cache = cm.register_cache(host_desc(2, [4, 8]), t.addrs, (CacheKey(1, 1),))
    assert cache.cache_id > 0 and not cache.remote_accessible and cache.tensor_addrs == t.addrs
    with pytest.raises(ValueError):  # addresses must be unique
        cm.register_cache(host_desc(1, [4, 8]), t.addrs[:1])
    u = Tensors(1, 64)
    with pytest.raises(LLMException) as e:
        cm.register_cache(host_desc(1, [4, 8]), u.addrs, [CacheKey(1, 1)])
    assert e.value.status_code == LLMStatusCode.LLM_CACHE_KEY_ALREADY_EXIST
    blocks = cm.register_blocks_cache(host_desc(1, [4, 8]), u.addrs, BlocksCacheKey(1), remote_accessible=True)
    assert blocks.remote_accessible
    cm.unregister_cache(blocks.cache_id)
    with pytest.raises(LLMException) as e:
        cm.unregister_cache(blocks.cache_id)
    assert e.value.status_code == LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
    with pytest.raises(ValueError):  # pulling from one's own cluster
        cm.pull_cache(CacheKey(1, 1), cache)
    with pytest.raises(LLMException) as e:
        cm.pull_cache(CacheKey(2, 1), cache)
    assert e.value.status_code == LLMStatusCode.LLM_NOT_YET_LINK
    with pytest.raises(TypeError):
        cm.pull_cache(CacheKey(2, 1), cache, bogus=1)
    with pytest.raises(ValueError):
        cm.pull_blocks(BlocksCacheKey(2), cache, [0], [0], src_layer_range=range(0, 4, 2))
    with pytest.raises(AttributeError):
        cm.pull_blocks(None, cache, [0], [0])


def test_240_addresses(dd):
    cm = dd.cache_manager
    t = Tensors(241, 64)
    cm.register_cache(host_desc(200, [1, 32]), t.addrs[:200])
    with pytest.raises(LLMException) as e:
        cm.register_blocks_cache(host_desc(41, [1, 32]), t.addrs[200:])
    assert e.value.status_code == LLMStatusCode.LLM_OUT_OF_MEMORY
    cm.register_blocks_cache(host_desc(40, [1, 32]), t.addrs[200:240])


def test_device_after_link_is_allowed(free_port):
    holder = LLMDataDist(LLMRole.PROMPT, 10)
    holder.init({"llm.listenIpInfo": f"127.0.0.1:{free_port}"})
    puller = LLMDataDist(LLMRole.DECODER, 20)
    puller.init({})
    ret, rets = puller.link_clusters([cluster(10, free_port)])
    assert ret == LLMStatusCode.LLM_SUCCESS and rets == [LLMStatusCode.LLM_SUCCESS]
    t = Tensors(2, 64)
    dev = CacheDesc(1, [2, 16], DataType.DT_FLOAT16, Placement.DEVICE)
    # As the vendor: no LLM_EXIST_LINK after a link (this host memory is no device memory, so the engine may
    # refuse it as such: LLM_FEATURE_NOT_ENABLED; test_serving_flows.py registers real caches after a link).
    try:
        c = puller.cache_manager.register_cache(dev, t.addrs[:1])
        puller.cache_manager.unregister_cache(c.cache_id)
    except LLMException as e:
        assert e.status_code == LLMStatusCode.LLM_FEATURE_NOT_ENABLED
    # host memory any time
    holder.cache_manager.register_cache(host_desc(1, [2, 16]), t.addrs[1:], remote_accessible=True)
    assert puller.unlink_clusters([cluster(10, free_port)])[0] == LLMStatusCode.LLM_SUCCESS
    puller.finalize()
    holder.finalize()


def test_pull_and_push_blocks_layer_by_layer(free_port):
    layers, blocks, block_bytes = 2, 4, 64
    holder = LLMDataDist(LLMRole.PROMPT, 1)
    holder.init({"llm.listenIpInfo": f"127.0.0.1:{free_port}"})
    src = Tensors(layers * 2, blocks * block_bytes)
    for t, b in enumerate(src.bufs):
        for i in range(len(b)):
            b[i] = (t * 17 + i) % 251
    desc = host_desc(layers * 2, [blocks, block_bytes // 2])
    holder.cache_manager.register_blocks_cache(desc, src.addrs, BlocksCacheKey(1), remote_accessible=True)

    decode = LLMDataDist(LLMRole.DECODER, 2)
    decode.init({})
    assert decode.link_clusters([cluster(1, free_port)])[0] == LLMStatusCode.LLM_SUCCESS
    dst = Tensors(layers * 2, blocks * block_bytes)
    cache = decode.cache_manager.register_blocks_cache(desc, dst.addrs)
    for layer in range(layers):
        decode.cache_manager.pull_blocks(BlocksCacheKey(1), cache, [2, 3], [0, 1],
                                         src_layer_range=range(layer, layer + 1),
                                         dst_layer_range=range(layer, layer + 1))
    for t in range(layers * 2):
        assert bytes(dst.bufs[t])[:2 * block_bytes] == bytes(src.bufs[t])[2 * block_bytes:]
    with pytest.raises(LLMException) as e:
        decode.cache_manager.pull_blocks(BlocksCacheKey(1, model_id=5), cache, [0], [0])
    assert e.value.status_code == LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
    with pytest.raises(ValueError):
        decode.cache_manager.pull_blocks(BlocksCacheKey(1), cache, [4], [0])
    # push local block 0 of layer 1 into remote block 0 of layer 0
    for b in dst.bufs:
        ctypes.memset(ctypes.addressof(b), 0xEE, block_bytes)
    decode.cache_manager.push_blocks(BlocksCacheKey(1), cache, [0], [0], src_layer_range=range(1, 2),
                                     dst_layer_range=range(0, 1))
    assert bytes(src.bufs[0])[:block_bytes] == b"\xee" * block_bytes
    assert bytes(src.bufs[2])[block_bytes:2 * block_bytes] != b"\xee" * block_bytes
    decode.finalize()
    holder.finalize()


def test_pull_and_push_cache_by_key(free_port):
    holder = LLMDataDist(LLMRole.PROMPT, 1)
    holder.init({"llm.listenIpInfo": f"127.0.0.1:{free_port}"})
    src = Tensors(2, 2 * 32, fill=3)
    remote = holder.cache_manager.register_cache(host_desc(2, [2, 16]), src.addrs, [CacheKey(1, 7), CacheKey(1, 8)],
                                                 remote_accessible=True)
    decode = LLMDataDist(LLMRole.DECODER, 2)
    decode.init({"llm.SyncKvCacheWaitTime": "2000"})
    decode.link_clusters([cluster(1, free_port)])
    dst = Tensors(2, 2 * 32)
    cache = decode.cache_manager.register_cache(host_desc(2, [2, 16]), dst.addrs)
    decode.cache_manager.pull_cache(CacheKey(1, 8), cache, batch_index=1)
    assert bytes(dst.bufs[1])[32:] == b"\x03" * 32 and bytes(dst.bufs[1])[:32] == b"\x00" * 32
    ctypes.memset(dst.addrs[0], 9, 32)
    decode.cache_manager.push_cache(CacheKeyByIdAndIndex(1, remote.cache_id, 0), cache, 0, size=16,
                                    src_layer_range=range(0, 1), dst_layer_range=range(0, 1))
    assert bytes(src.bufs[0])[:32] == b"\x09" * 16 + b"\x03" * 16
    with pytest.raises(TypeError):
        decode.cache_manager.push_cache(CacheKey(1, 7), cache)
    decode.finalize()
    holder.finalize()
