#!/usr/bin/env python3
"""prefill -> decode KV-cache hand-over with the llm_datadist package.

    prefill_decode.py pull [port]   prefill registers a paged KV cache; decode links
                                    and pulls the request's blocks layer by layer.
    prefill_decode.py push [port]   decode registers its paged cache; prefill links
                                    and pushes the request's blocks layer by layer.

Addresses and shapes travel through the engine (the cache layer's metadata);
the pipe between the two processes only says "ready" and "done".
"""
import ctypes
import os
import sys

from llm_datadist import (BlocksCacheKey, CacheDesc, DataType, LLMClusterInfo, LLMDataDist, LLMRole,
                          LLMStatusCode, Placement)

PREFILL, DECODE = 1, 2
LAYERS, BLOCKS, BLOCK_TOKENS, HEAD_DIM = 4, 16, 16, 64
BLOCK_BYTES = BLOCK_TOKENS * HEAD_DIM * 2  # fp16
PREFILL_BLOCKS, DECODE_BLOCKS = [3, 4, 9], [0, 1, 2]
DESC = CacheDesc(LAYERS * 2, [BLOCKS, BLOCK_TOKENS, HEAD_DIM], DataType.DT_FLOAT16, Placement.HOST)


def kv_tensors():
    return [(ctypes.c_uint8 * (BLOCKS * BLOCK_BYTES))() for _ in range(LAYERS * 2)]


def block_value(tensor, block):
    return bytes(((tensor * 13 + block * 7 + i) & 0xFF) for i in range(BLOCK_BYTES))


def fill_request(tensors):
    for t, buf in enumerate(tensors):
        for b in PREFILL_BLOCKS:
            ctypes.memmove(ctypes.addressof(buf) + b * BLOCK_BYTES, block_value(t, b), BLOCK_BYTES)


def check_request(tensors):
    return all(bytes(buf)[d * BLOCK_BYTES:(d + 1) * BLOCK_BYTES] == block_value(t, s)
               for t, buf in enumerate(tensors) for s, d in zip(PREFILL_BLOCKS, DECODE_BLOCKS))


def holder(push, port, up, down):
    """Registers the cache others reach: prefill's (pull) or decode's (push)."""
    cid = DECODE if push else PREFILL
    dd = LLMDataDist(LLMRole.DECODER if push else LLMRole.PROMPT, cid)
    dd.init({"llm.listenIpInfo": f"127.0.0.1:{port}"})
    kv = kv_tensors()
    if not push:
        fill_request(kv)
    dd.cache_manager.register_blocks_cache(DESC, [ctypes.addressof(b) for b in kv], BlocksCacheKey(cid),
                                           remote_accessible=True)
    os.write(up, b"r")
    os.read(down, 1)
    ok = True
    if push:
        ok = check_request(kv)
        print(f"decode: blocks pushed by prefill {'verified' if ok else 'WRONG'}", flush=True)
    dd.finalize()
    return 0 if ok else 1


def mover(push, port):
    """Links to the holder and moves the request's blocks layer by layer."""
    remote = DECODE if push else PREFILL
    dd = LLMDataDist(LLMRole.PROMPT if push else LLMRole.DECODER, PREFILL if push else DECODE)
    dd.init({"llm.SyncKvCacheWaitTime": "5000"})
    kv = kv_tensors()
    if push:
        fill_request(kv)
    cache = dd.cache_manager.register_blocks_cache(DESC, [ctypes.addressof(b) for b in kv])
    info = LLMClusterInfo()
    info.remote_cluster_id = remote
    info.append_remote_ip_info("127.0.0.1", port)
    ret, _ = dd.link_clusters([info], timeout=5000)
    if ret != LLMStatusCode.LLM_SUCCESS:
        print(f"link_clusters failed: {ret}", file=sys.stderr)
        return 1
    for layer in range(LAYERS):
        layers = dict(src_layer_range=range(layer, layer + 1), dst_layer_range=range(layer, layer + 1))
        if push:
            dd.cache_manager.push_blocks(BlocksCacheKey(remote), cache, PREFILL_BLOCKS, DECODE_BLOCKS, **layers)
        else:
            dd.cache_manager.pull_blocks(BlocksCacheKey(remote), cache, PREFILL_BLOCKS, DECODE_BLOCKS, **layers)
    dd.unlink_clusters([info])
    ok = True
    if not push:
        ok = check_request(kv)
        print(f"decode: pulled {len(DECODE_BLOCKS)} blocks x {LAYERS} layers, {'verified' if ok else 'WRONG'}")
    else:
        print(f"prefill: pushed {len(PREFILL_BLOCKS)} blocks x {LAYERS} layers")
    dd.finalize()
    return 0 if ok else 1


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "pull"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 26202
    if mode not in ("pull", "push"):
        print("usage: prefill_decode.py pull|push [port]", file=sys.stderr)
        return 2
    push = mode == "push"
    up_r, up_w = os.pipe()
    down_r, down_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(up_r)
        os.close(down_w)
        rc = 1
        try:
            rc = holder(push, port, up_w, down_r)
        finally:
            os._exit(rc)
    os.close(up_w)
    os.close(down_r)
    rc = 1
    try:
        if os.read(up_r, 1) == b"r":
            rc = mover(push, port)
    finally:
        os.write(down_w, b"d")
        _, status = os.waitpid(child, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        rc = 1
    print(f"prefill_decode.py {mode}: {'OK' if rc == 0 else 'FAILED'}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
