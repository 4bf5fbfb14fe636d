#!/usr/bin/env python3
"""Layer-wise push with the llm_datadist package: prefill sends layer k's KV cache while it computes layer k+1.

    layerwise_push.py [port]

decode (a child process) registers its paged KV cache under BlocksCacheKey(2); prefill links to it, starts
CacheManager.transfer_cache_async with a LayerSynchronizer that returns as soon as "the model" has computed a
layer, then computes the layers one by one (a thread filling each layer's blocks).  Each layer is pushed while the
next is being computed.  decode verifies every block of every layer; the pipe only says "ready" and "done".
"""
import ctypes
import os
import sys
import threading
import time

from llm_datadist import (BlocksCacheKey, CacheDesc, DataType, LayerSynchronizer, LLMClusterInfo, LLMDataDist,
                          LLMRole, LLMStatusCode, Placement, TransferWithCacheKeyConfig)

PREFILL, DECODE = 1, 2
LAYERS, BLOCKS, BLOCK_TOKENS, HEAD_DIM = 4, 16, 16, 64
BLOCK_BYTES = BLOCK_TOKENS * HEAD_DIM * 2  # fp16
PREFILL_BLOCKS, DECODE_BLOCKS = [3, 4, 9], [0, 1, 2]
DESC = CacheDesc(LAYERS * 2, [BLOCKS, BLOCK_TOKENS, HEAD_DIM], DataType.DT_FLOAT16, Placement.HOST)


def kv_tensors():
    return [(ctypes.c_uint8 * (BLOCKS * BLOCK_BYTES))() for _ in range(LAYERS * 2)]


def block_value(tensor, block):  # differs per tensor, block and byte
    return bytes(((tensor * 13 + block * 7 + i * 5 + 1) & 0xFF) for i in range(BLOCK_BYTES))


class Model(LayerSynchronizer):
    """Stands in for the model: compute(layer) writes the layer's K and V blocks, synchronize_layer waits for it."""

    def __init__(self, kv):
        self.kv = kv
        self.done = [threading.Event() for _ in range(LAYERS)]
        self.log = []

    def compute(self):
        for layer in range(LAYERS):
            time.sleep(0.05)  # the layer's compute
            for t in (layer * 2, layer * 2 + 1):
                for b in PREFILL_BLOCKS:
                    ctypes.memmove(ctypes.addressof(self.kv[t]) + b * BLOCK_BYTES, block_value(t, b), BLOCK_BYTES)
            self.log.append(f"computed layer {layer}")
            self.done[layer].set()

    def synchronize_layer(self, layer_index, timeout_in_millis):
        ok = self.done[layer_index].wait(timeout_in_millis / 1000)
        self.log.append(f"pushing layer {layer_index}")
        return ok


def decode(port, up, down):
    dd = LLMDataDist(LLMRole.DECODER, DECODE)
    dd.init({"llm.listenIpInfo": f"127.0.0.1:{port}"})
    kv = kv_tensors()
    dd.cache_manager.register_blocks_cache(DESC, [ctypes.addressof(b) for b in kv], BlocksCacheKey(DECODE),
                                           remote_accessible=True)
    os.write(up, b"r")
    os.read(down, 1)  # prefill's task is done
    ok = all(bytes(kv[t])[d * BLOCK_BYTES:(d + 1) * BLOCK_BYTES] == block_value(t, s)
             for t in range(LAYERS * 2) for s, d in zip(PREFILL_BLOCKS, DECODE_BLOCKS))
    print(f"decode: {LAYERS} layers pushed layer by layer {'verified' if ok else 'WRONG'}", flush=True)
    dd.finalize()
    return 0 if ok else 1


def prefill(port, up, down):
    if os.read(up, 1) != b"r":  # decode failed before its cache was registered
        print("prefill: decode did not start", flush=True)
        return 1
    dd = LLMDataDist(LLMRole.PROMPT, PREFILL)
    dd.init({"llm.listenIpInfo": "127.0.0.1", "llm.SyncKvCacheWaitTime": "5000"})
    kv = kv_tensors()
    cache = dd.cache_manager.register_blocks_cache(DESC, [ctypes.addressof(b) for b in kv])
    info = LLMClusterInfo()
    info.remote_cluster_id = DECODE
    info.append_remote_ip_info("127.0.0.1", port)
    ret, _ = dd.link_clusters([info])
    assert ret == LLMStatusCode.LLM_SUCCESS, ret
    model = Model(kv)
    config = TransferWithCacheKeyConfig(BlocksCacheKey(DECODE), range(0, LAYERS), range(0, LAYERS))
    task = dd.cache_manager.transfer_cache_async(cache, model, [config], PREFILL_BLOCKS, DECODE_BLOCKS)
    model.compute()  # layer k is pushed while layer k+1 is computed
    ret = task.synchronize()
    print("prefill: " + ", ".join(model.log), flush=True)
    print(f"prefill: task {ret.name}, results {[r.name for r in task.get_results()]}", flush=True)
    os.write(down, b"d")
    dd.finalize()
    return 0 if ret == LLMStatusCode.LLM_SUCCESS else 1


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 26204
    up_r, up_w = os.pipe()
    down_r, down_w = os.pipe()
    child = os.fork()  # before any engine exists in this process
    if child == 0:
        # Each process keeps only its own ends: a side that dies closes its
        # pipe and the other's read returns instead of waiting forever.
        os.close(up_r)
        os.close(down_w)
        rc = 1
        try:
            rc = decode(port, up_w, down_r)
        finally:
            os._exit(rc)
    os.close(up_w)
    os.close(down_r)
    rc = 1
    try:
        rc = prefill(port, up_r, down_w)
    finally:
        os.close(down_w)  # a decode still waiting for "d" sees EOF
        _, status = os.waitpid(child, 0)
    return rc or os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
