"""Bad input on the serving frameworks' LLM-DataDist paths (docs/cache_layer.md, "bad input on these paths"):
each refused call gives the vendor's status and exactly one ERROR line naming what was wrong, and the link and
the caches registered before it still work afterwards (a pull with every byte checked).  One process, two
engines: a holder that listens with a remote-accessible blocks cache, a decoder that linked to it."""
import ctypes
import json

import pytest

from llm_datadist import (BlocksCacheKey, CacheDesc, DataType, LayerSynchronizer, LLMClusterInfo, LLMDataDist,
                          LLMException, LLMRole, LLMStatusCode, Placement, TransferWithCacheKeyConfig)

HOLDER, DECODER, BLOCKS, BLOCK_BYTES = 1, 2, 4, 64


class Tensors:
    def __init__(self, n, size):
        self.bufs = [(ctypes.c_uint8 * size)() for _ in range(n)]
        self.addrs = [ctypes.addressof(b) for b in self.bufs]


def cluster(cid, port=None):
    c = LLMClusterInfo()
    c.remote_cluster_id = cid
    if port is not None:
        c.append_remote_ip_info("127.0.0.1", port)
    return c


@pytest.fixture
def linked(free_port):
    holder = LLMDataDist(LLMRole.PROMPT, HOLDER)
    holder.init({"llm.listenIpInfo": f"127.0.0.1:{free_port}"})
    desc = CacheDesc(2, [BLOCKS, BLOCK_BYTES // 2], DataType.DT_FLOAT16, Placement.HOST)
    src = Tensors(2, BLOCKS * BLOCK_BYTES)
    holder.cache_manager.register_blocks_cache(desc, src.addrs, BlocksCacheKey(HOLDER), remote_accessible=True)
    decode = LLMDataDist(LLMRole.DECODER, DECODER)
    decode.init({})
    assert decode.link_clusters([cluster(HOLDER, free_port)])[0] == LLMStatusCode.LLM_SUCCESS
    dst = Tensors(2, BLOCKS * BLOCK_BYTES)
    cache = decode.cache_manager.register_blocks_cache(desc, dst.addrs)
    state = {"round": 0}

    def still_works():
        """Pulls block 1 of the holder into block 2 here, with a new byte pattern each time."""
        state["round"] += 1
        for t, b in enumerate(src.bufs):
            for i in range(len(b)):
                b[i] = (state["round"] * 31 + t * 7 + i) % 251
        decode.cache_manager.pull_blocks(BlocksCacheKey(HOLDER), cache, [1], [2])
        for t in range(2):
            assert bytes(dst.bufs[t])[2 * BLOCK_BYTES:3 * BLOCK_BYTES] == \
                bytes(src.bufs[t])[BLOCK_BYTES:2 * BLOCK_BYTES]

    still_works()
    yield decode, free_port, cache, still_works
    decode.finalize()
    holder.finalize()


def error_lines(capfd):
    return [l for l in capfd.readouterr().err.splitlines() if "ERROR" in l]


def refused(capfd, call, status, names):
    """call() raises LLMException(status) (or returns it); exactly one ERROR line, which contains `names`."""
    capfd.readouterr()
    try:
        got = call()
    except LLMException as e:
        got = e.status_code
    if isinstance(got, tuple):
        got = got[0]
    assert got == status, got
    lines = error_lines(capfd)
    assert len(lines) == 1 and names in lines[0], lines


def test_unlink_clusters_bad_input(linked, capfd):
    decode, port, _, still_works = linked
    capfd.readouterr()
    assert decode.unlink_clusters([], force=True) == (LLMStatusCode.LLM_SUCCESS, [])
    assert error_lines(capfd) == []
    refused(capfd, lambda: decode.unlink_clusters([cluster(HOLDER, port)], timeout=-1), LLMStatusCode.LLM_PARAM_INVALID,
            "timeout")
    still_works()
    refused(capfd, lambda: decode.unlink_clusters([cluster(HOLDER, port)], timeout=0, force=True),
            LLMStatusCode.LLM_PARAM_INVALID, "timeout")
    still_works()
    # a cluster never seen, without force, on the default backend without an address: nothing unlinked
    refused(capfd, lambda: decode.unlink_clusters([cluster(77)]), LLMStatusCode.LLM_PARAM_INVALID, "77")
    still_works()
    # never seen, forced: nothing to do, no error
    capfd.readouterr()
    assert decode.unlink_clusters([cluster(77)], force=True) == (LLMStatusCode.LLM_SUCCESS,
                                                                 [LLMStatusCode.LLM_SUCCESS])
    assert error_lines(capfd) == []
    still_works()


def test_rank_table_bad_input(linked, capfd):
    decode, port, _, still_works = linked
    good = {"server_list": [{"device": [{"rank_id": "0", "device_ip": "127.0.0.1"},
                                        {"rank_id": "1", "device_ip": "127.0.0.1"}]}]}
    ranks = {DECODER: 0, 5: 1}
    refused(capfd, lambda: decode.link("", ranks, json.dumps(good)), LLMStatusCode.LLM_PARAM_INVALID, "comm_name")
    refused(capfd, lambda: decode.link("c", ranks, json.dumps({"version": "1.0"})), LLMStatusCode.LLM_PARAM_INVALID,
            "server_list")
    no_ip = {"server_list": [{"device": [{"rank_id": "0"}, {"rank_id": "1", "device_ip": "127.0.0.1"}]}]}
    refused(capfd, lambda: decode.link("c", ranks, json.dumps(no_ip)), LLMStatusCode.LLM_PARAM_INVALID, "no device_ip")
    no_rank = {"server_list": [{"device": [{"device_ip": "127.0.0.1"}, {"rank_id": "1", "device_ip": "127.0.0.1"}]}]}
    refused(capfd, lambda: decode.link("c", ranks, json.dumps(no_rank)), LLMStatusCode.LLM_PARAM_INVALID, "no rank_id")
    refused(capfd, lambda: decode.link("c", {3: 0, 5: 1}, json.dumps(good)), LLMStatusCode.LLM_PARAM_INVALID,
            str(DECODER))
    refused(capfd, lambda: decode.link("c", ranks, "{not json"), LLMStatusCode.LLM_PARAM_INVALID, "rank_table")
    refused(capfd, lambda: decode.link("c", {DECODER: 0, 5: 7}, json.dumps(good)), LLMStatusCode.LLM_PARAM_INVALID,
            "rank_id 7")
    still_works()
    # this cluster must listen at its rank's device_ip (no port in the table), but a link exists: not moved
    refused(capfd, lambda: decode.link("c", ranks, json.dumps(good)), LLMStatusCode.LLM_EXIST_LINK,
            "link('c'): listening at 127.0.0.1:")
    refused(capfd, lambda: decode.unlink(12345), LLMStatusCode.LLM_PARAM_INVALID, "12345")
    refused(capfd, lambda: decode.query_register_mem_status(12345), LLMStatusCode.LLM_PARAM_INVALID, "12345")
    still_works()


def test_switch_role_bad_input(linked, capfd):
    decode, port, _, still_works = linked
    refused(capfd, lambda: decode.switch_role(LLMRole.PROMPT, {"llm.listenIpInfo": f"127.0.0.1:{port + 1}"}),
            LLMStatusCode.LLM_EXIST_LINK, "link")
    still_works()
    refused(capfd, lambda: decode.switch_role(LLMRole.PROMPT, {"llm.listenIpInfo": "not-an-address"}),
            LLMStatusCode.LLM_PARAM_INVALID, "not-an-address")
    still_works()
    refused(capfd, lambda: decode.switch_role(LLMRole.PROMPT, {"llm.listenIpInfo": "127.0.0.1:http"}),
            LLMStatusCode.LLM_PARAM_INVALID, "127.0.0.1:http")
    still_works()


def test_switch_role_bad_address_without_links_keeps_caches(free_port, capfd):
    """No link: the malformed address is refused before the engine moves; the caches stay registered and the
    cluster keeps listening where it did (a peer links and pulls, every byte checked)."""
    holder = LLMDataDist(LLMRole.PROMPT, HOLDER)
    holder.init({"llm.listenIpInfo": f"127.0.0.1:{free_port}"})
    desc = CacheDesc(2, [BLOCKS, BLOCK_BYTES // 2], DataType.DT_FLOAT16, Placement.HOST)
    src = Tensors(2, BLOCKS * BLOCK_BYTES)
    for t, b in enumerate(src.bufs):
        ctypes.memset(ctypes.addressof(b), 0x40 + t, len(b))
    holder.cache_manager.register_blocks_cache(desc, src.addrs, BlocksCacheKey(HOLDER), remote_accessible=True)
    refused(capfd, lambda: holder.switch_role(LLMRole.DECODER, {"llm.listenIpInfo": "127.0.0.1"}),
            LLMStatusCode.LLM_PARAM_INVALID, '"127.0.0.1"')
    assert holder.role == LLMRole.PROMPT
    decode = LLMDataDist(LLMRole.DECODER, DECODER)
    decode.init({})
    assert decode.link_clusters([cluster(HOLDER, free_port)])[0] == LLMStatusCode.LLM_SUCCESS
    dst = Tensors(2, BLOCKS * BLOCK_BYTES)
    cache = decode.cache_manager.register_blocks_cache(desc, dst.addrs)
    decode.cache_manager.pull_blocks(BlocksCacheKey(HOLDER), cache, [3], [0])
    assert [bytes(b)[:BLOCK_BYTES] for b in dst.bufs] == [bytes([0x40 + t]) * BLOCK_BYTES for t in range(2)]
    decode.finalize()
    holder.finalize()


class _Ready(LayerSynchronizer):
    def synchronize_layer(self, layer_index, timeout_in_millis):
        return True


def test_transfer_cache_async_bad_input(linked, capfd):
    decode, _, cache, still_works = linked
    cm = decode.cache_manager

    def start(cfg, src=None, dst=None, c=cache):
        return cm.transfer_cache_async(c, _Ready(), [cfg], src, dst)

    # a layer range beyond the cache's one layer
    refused(capfd, lambda: start(TransferWithCacheKeyConfig(BlocksCacheKey(HOLDER), range(0, 5), range(0, 5)),
                                 [0], [1]), LLMStatusCode.LLM_PARAM_INVALID, "src_layer_range")
    still_works()
    # a layer range that is no range of layers at all
    refused(capfd, lambda: start(TransferWithCacheKeyConfig(BlocksCacheKey(HOLDER), range(1, 1), range(1, 1))),
            LLMStatusCode.LLM_PARAM_INVALID, "src_layer_range")
    still_works()
    # block indices beyond the blocks of either side
    refused(capfd, lambda: start(TransferWithCacheKeyConfig(BlocksCacheKey(HOLDER), range(0, 1), range(0, 1)),
                                 [BLOCKS], [0]), LLMStatusCode.LLM_PARAM_INVALID, f"block {BLOCKS}")
    still_works()
    # a cache that was unregistered
    t = Tensors(2, BLOCKS * BLOCK_BYTES)
    gone = cm.register_blocks_cache(CacheDesc(2, [BLOCKS, BLOCK_BYTES // 2], DataType.DT_FLOAT16, Placement.HOST),
                                    t.addrs)
    cm.unregister_cache(gone.cache_id)
    refused(capfd, lambda: start(TransferWithCacheKeyConfig(BlocksCacheKey(HOLDER), range(0, 1), range(0, 1)),
                                 [0], [0], c=gone), LLMStatusCode.LLM_KV_CACHE_NOT_EXIST, str(gone.cache_id))
    still_works()
    # a blocks cache key nobody registered
    refused(capfd, lambda: start(TransferWithCacheKeyConfig(BlocksCacheKey(HOLDER, model_id=9), range(0, 1),
                                                            range(0, 1)), [0], [0]).synchronize(),
            LLMStatusCode.LLM_KV_CACHE_NOT_EXIST, "destination cache")
    still_works()


def test_register_after_link_bad_input(linked, capfd):
    """Registering after the link (omni-infer's lazy layer groups) with addresses already registered, or repeated
    in the call: refused, the cache registered before and the link unchanged."""
    decode, _, cache, still_works = linked
    cm = decode.cache_manager
    desc = CacheDesc(2, [BLOCKS, BLOCK_BYTES // 2], DataType.DT_FLOAT16, Placement.HOST)
    taken = cache.tensor_addrs
    refused(capfd, lambda: cm.register_blocks_cache(desc, taken), LLMStatusCode.LLM_PARAM_INVALID,
            "already registered")
    still_works()
    fresh = Tensors(1, BLOCKS * BLOCK_BYTES)
    refused(capfd, lambda: cm.register_blocks_cache(desc, fresh.addrs * 2), LLMStatusCode.LLM_PARAM_INVALID,
            "repeated")
    still_works()
    # the fresh address was not kept by the refused call: it registers now
    cm.unregister_cache(cm.register_cache(CacheDesc(1, [BLOCKS, BLOCK_BYTES // 2], DataType.DT_FLOAT16,
                                                    Placement.HOST), fresh.addrs).cache_id)
    still_works()


def test_copy_bad_input(linked, capfd):
    """copy_cache / copy_blocks are the C++ CopyKvCache / CopyKvBlocks: their refusals are the C++ layer's (one
    line naming that call), and the copies they do make land."""
    decode, _, cache, still_works = linked
    cm = decode.cache_manager
    refused(capfd, lambda: cm.copy_blocks(cache, {0: [BLOCKS]}), LLMStatusCode.LLM_PARAM_INVALID, "CopyKvBlocks")
    still_works()
    cm.copy_blocks(cache, {2: [0, 3]})  # block 2 holds the holder's block 1 (still_works)
    for a in cache.tensor_addrs:
        got = ctypes.string_at(a, BLOCKS * BLOCK_BYTES)
        block2 = got[2 * BLOCK_BYTES:3 * BLOCK_BYTES]
        assert got[:BLOCK_BYTES] == block2 and got[3 * BLOCK_BYTES:] == block2
    entries = Tensors(2, 2 * BLOCK_BYTES)
    for t, b in enumerate(entries.bufs):
        for i in range(len(b)):
            b[i] = (t * 13 + i) % 251
    flat = cm.register_cache(CacheDesc(2, [2, BLOCK_BYTES // 2], DataType.DT_FLOAT16, Placement.HOST), entries.addrs)
    refused(capfd, lambda: cm.copy_cache(flat, flat, dst_batch_index=1, offset=BLOCK_BYTES),
            LLMStatusCode.LLM_PARAM_INVALID, "CopyKvCache")
    refused(capfd, lambda: cm.copy_cache(flat, flat, dst_batch_index=1, offset=8, size=BLOCK_BYTES),
            LLMStatusCode.LLM_PARAM_INVALID, "CopyKvCache")
    refused(capfd, lambda: cm.copy_cache(flat, flat, dst_batch_index=2), LLMStatusCode.LLM_PARAM_INVALID,
            "CopyKvCache")
    cm.copy_cache(flat, flat, dst_batch_index=1, offset=8, size=16)
    for b in entries.bufs:
        got = bytes(b)
        assert got[BLOCK_BYTES + 8:BLOCK_BYTES + 24] == got[8:24]
    still_works()
