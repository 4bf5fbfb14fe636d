"""Layer-wise push across two processes: this process is prefill, layerwise_peer.py is decode."""
import ctypes
import json
import os
import select
import subprocess
import sys

import pytest
from conftest import BLOCK_BYTES, BLOCKS, DST_BLOCKS, LAYERS, SRC_BLOCKS, layerwise_pattern as pattern

from llm_datadist import (BlocksCacheKey, CacheDesc, CacheTask, DataType, LayerSynchronizer, LLMClusterInfo,
                          LLMDataDist, LLMException, LLMRole, LLMStatusCode, Placement, TransferConfig,
                          TransferWithCacheKeyConfig)

PEER = os.path.join(os.path.dirname(__file__), "layerwise_peer.py")


class Peer:
    def __init__(self, port):
        self.p = subprocess.Popen([sys.executable, PEER, str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=os.environ.copy())
        self.raw = json.loads(self.line(20))["raw"]

    def line(self, timeout=10):
        ready, _, _ = select.select([self.p.stdout], [], [], timeout)
        assert ready, "decode process did not answer"
        return self.p.stdout.readline().strip()

    def send(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()

    def ask(self, cmd):
        self.send(cmd)
        return self.line()

    def close(self):
        self.send("quit")
        assert self.p.wait(20) == 0


@pytest.fixture(scope="module")
def pair():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    peer = Peer(port)
    dd = LLMDataDist(LLMRole.PROMPT, 1)
    dd.init({"llm.listenIpInfo": "127.0.0.1", "llm.SyncKvCacheWaitTime": "2000"})
    desc = CacheDesc(LAYERS * 2, [BLOCKS, BLOCK_BYTES // 2], DataType.DT_FLOAT16, Placement.HOST)
    kv = [(ctypes.c_uint8 * (BLOCKS * BLOCK_BYTES))() for _ in range(LAYERS * 2)]
    for t, buf in enumerate(kv):
        for b in range(BLOCKS):
            ctypes.memmove(ctypes.addressof(buf) + b * BLOCK_BYTES, pattern(t, b), BLOCK_BYTES)
    cache = dd.cache_manager.register_blocks_cache(desc, [ctypes.addressof(b) for b in kv])
    info = LLMClusterInfo()
    info.remote_cluster_id = 2
    info.append_remote_ip_info("127.0.0.1", port)
    ret, _ = dd.link_clusters([info])
    assert ret == LLMStatusCode.LLM_SUCCESS
    yield dd, cache, peer
    dd.finalize()
    peer.close()


class Sync(LayerSynchronizer):
    def __init__(self, fn=None):
        self.fn = fn or (lambda layer: True)
        self.calls = []

    def synchronize_layer(self, layer_index, timeout_in_millis):
        self.calls.append((layer_index, timeout_in_millis))
        return self.fn(layer_index)


def keyed():
    return TransferWithCacheKeyConfig(BlocksCacheKey(2), range(0, LAYERS), range(0, LAYERS))


def test_overlap_keyed_and_raw(pair):
    dd, cache, peer = pair
    assert peer.ask("clear") == "cleared"
    seen = {}

    def fn(layer):
        if layer == 0:
            peer.send("watch")  # decode watches for layer 0 while we hold layer 1
        if layer == 1:
            seen["decode"] = peer.line()
        return True

    sync = Sync(fn)
    task = dd.cache_manager.transfer_cache_async(cache, sync, [keyed(), TransferConfig(2, peer.raw)], SRC_BLOCKS,
                                                 DST_BLOCKS)
    assert isinstance(task, CacheTask)
    assert task.synchronize() == LLMStatusCode.LLM_SUCCESS
    assert task.get_results() == [LLMStatusCode.LLM_SUCCESS, LLMStatusCode.LLM_SUCCESS]
    assert [c[0] for c in sync.calls] == [0, 1, 2]
    assert all(c[1] == 2000 for c in sync.calls)
    # layer 0 was at decode while layer 1 was held, and layers 1, 2 were still untouched then
    assert seen["decode"] == "layer0 1 1"
    assert peer.ask("check") == "111 111"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_layer_not_ready_and_synchronizer_error(pair):
    dd, cache, peer = pair
    assert peer.ask("clear") == "cleared"
    late = TransferConfig(2, peer.raw[4:], range(2, 3))
    task = dd.cache_manager.transfer_cache_async(cache, Sync(lambda layer: layer != 1), [keyed(), late], SRC_BLOCKS,
                                                 DST_BLOCKS)
    assert task.synchronize() == LLMStatusCode.LLM_TIMEOUT
    assert task.get_results() == [LLMStatusCode.LLM_TIMEOUT, None]
    assert peer.ask("check") == "100 000"

    def boom(layer):
        raise RuntimeError("layer failed")

    task = dd.cache_manager.transfer_cache_async(cache, Sync(boom), [keyed()], SRC_BLOCKS, DST_BLOCKS)
    assert task.synchronize() == LLMStatusCode.LLM_FAILED
    assert task.get_results() == [LLMStatusCode.LLM_FAILED]


def test_wait_timeout_cancels(pair):
    import threading
    dd, cache, peer = pair
    assert peer.ask("clear") == "cleared"
    gate = threading.Event()
    task = dd.cache_manager.transfer_cache_async(cache, Sync(lambda layer: layer != 1 or gate.wait(5)), [keyed()],
                                                 SRC_BLOCKS, DST_BLOCKS)
    assert task.synchronize(200) == LLMStatusCode.LLM_TIMEOUT
    gate.set()
    import time
    time.sleep(0.3)
    assert peer.ask("check") == "100 000"  # nothing pushed after the task reported
    assert task.get_results() == [LLMStatusCode.LLM_TIMEOUT]


def test_argument_errors(pair):
    dd, cache, peer = pair
    cm = dd.cache_manager
    with pytest.raises(TypeError):
        cm.transfer_cache_async(cache, object(), [keyed()], SRC_BLOCKS, DST_BLOCKS)
    with pytest.raises(TypeError):
        cm.transfer_cache_async(cache, Sync(), keyed(), SRC_BLOCKS, DST_BLOCKS)
    with pytest.raises(TypeError):
        cm.transfer_cache_async(cache, Sync(), [keyed()], "1", DST_BLOCKS)
    with pytest.raises(AttributeError):
        cm.transfer_cache_async(None, Sync(), [keyed()], SRC_BLOCKS, DST_BLOCKS)
    with pytest.raises(ValueError):
        cm.transfer_cache_async(cache, Sync(), [keyed()], [BLOCKS], [0])  # block out of range
    # A paged source without blocks is the vendor's block-0 copy (test_serving_flows.py checks its bytes).
    with pytest.raises(LLMException) as e:
        cm.transfer_cache_async(cache, Sync(), [TransferConfig(9, peer.raw)], SRC_BLOCKS, DST_BLOCKS)
    assert e.value.status_code == LLMStatusCode.LLM_NOT_YET_LINK
    with pytest.raises(LLMException):
        TransferConfig(2, peer.raw, range(0, 2))  # two addresses per layer
    with pytest.raises(LLMException):
        TransferConfig(2, peer.raw, range(0, 3, 2))
    with pytest.raises(TypeError):
        TransferConfig(2, peer.raw, [0, 1])
    with pytest.raises(ValueError):
        TransferWithCacheKeyConfig(BlocksCacheKey(2), range(0, 3))
    with pytest.raises(ValueError):
        TransferWithCacheKeyConfig(BlocksCacheKey(2), range(0, 3), range(0, 3), 1)
    with pytest.raises(TypeError):
        TransferWithCacheKeyConfig("key", range(0, 3), range(0, 3))
    with pytest.raises(TypeError):
        LayerSynchronizer()
