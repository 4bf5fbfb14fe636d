"""Decode side of test_layerwise.py, a process of its own: registers a paged cache (zeros) under
BlocksCacheKey(2), prints its tensor addresses, reports when layer 0 has landed (and whether layer 1 was still
untouched then), and checks what arrived on request.  Protocol: one line per message on stdin / stdout."""
import ctypes
import json
import sys
import time

from conftest import BLOCK_BYTES, BLOCKS, DST_BLOCKS, LAYERS, SRC_BLOCKS, layerwise_pattern as pattern
from llm_datadist import BlocksCacheKey, CacheDesc, DataType, LLMDataDist, LLMRole, Placement

def block(buf, b):
    return bytes(buf)[b * BLOCK_BYTES:(b + 1) * BLOCK_BYTES]


def layer_arrived(kv, layer):
    return all(block(kv[layer * 2 + j], d) == pattern(layer * 2 + j, s)
               for j in range(2) for s, d in zip(SRC_BLOCKS, DST_BLOCKS))


def layer_zero(kv, layer):
    return all(not any(bytes(kv[layer * 2 + j])) for j in range(2))


def main():
    port = int(sys.argv[1])
    dd = LLMDataDist(LLMRole.DECODER, 2)
    dd.init({"llm.listenIpInfo": f"127.0.0.1:{port}"})
    desc = CacheDesc(LAYERS * 2, [BLOCKS, BLOCK_BYTES // 2], DataType.DT_FLOAT16, Placement.HOST)
    kv = [(ctypes.c_uint8 * (BLOCKS * BLOCK_BYTES))() for _ in range(LAYERS * 2)]
    raw = [(ctypes.c_uint8 * (BLOCKS * BLOCK_BYTES))() for _ in range(LAYERS * 2)]
    dd.cache_manager.register_blocks_cache(desc, [ctypes.addressof(b) for b in kv], BlocksCacheKey(2),
                                           remote_accessible=True)
    dd.cache_manager.register_blocks_cache(desc, [ctypes.addressof(b) for b in raw], remote_accessible=True)
    print(json.dumps({"raw": [ctypes.addressof(b) for b in raw]}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "watch":  # wait for layer 0, say whether the later layers were still untouched
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not layer_arrived(kv, 0):
                time.sleep(0.001)
            print(f"layer0 {int(layer_arrived(kv, 0))} {int(layer_zero(kv, 1) and layer_zero(kv, 2))}", flush=True)
        elif cmd[0] == "check":  # per layer: 1 arrived, 0 all zeros, x anything else
            out = []
            for bufs in (kv, raw):
                out.append("".join("1" if layer_arrived(bufs, l) else "0" if layer_zero(bufs, l) else "x"
                                   for l in range(LAYERS)))
            print(" ".join(out), flush=True)
        elif cmd[0] == "clear":
            for b in kv + raw:
                ctypes.memset(b, 0, len(b))
            print("cleared", flush=True)
        elif cmd[0] == "quit":
            break
    dd.finalize()


if __name__ == "__main__":
    main()
