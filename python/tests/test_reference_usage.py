"""A program written only from the reference llm_datadist package's documented
usage (constructor, LLMConfig + generate_options, register_blocks_cache with a
BlocksCacheKey, link_clusters with LLMClusterInfo, pull_blocks with and
without layer ranges, unlink_clusters, unregister_cache, finalize), on host
memory: the one departure from the device samples is Placement.HOST and
remote_accessible=True, which the reference requires for host memory that
peers read.  Prompt and decoder run in two processes; every tensor, block
and element holds a different value."""
import ctypes

from conftest import peer_process

from llm_datadist import (BlocksCacheKey, CacheDesc, DataType, LLMClusterInfo, LLMConfig, LLMDataDist, LLMRole,
                          LLMStatusCode, Placement)

PROMPT_CLUSTER, DECODER_CLUSTER = 0, 1
NUM_BLOCKS, BLOCK = 8, 1024  # floats per block; 2 tensors (one layer: K and V)


def value(tensor, element):
    return float(tensor * 100000 + element)


def prompt(port, q, go):
    llm_datadist = LLMDataDist(LLMRole.PROMPT, PROMPT_CLUSTER)
    llm_config = LLMConfig()
    llm_config.listen_ip_info = f"127.0.0.1:{port}"
    llm_config.device_id = 0
    llm_config.enable_cache_manager = True
    llm_datadist.init(llm_config.generate_options())
    cache_manager = llm_datadist.cache_manager
    kv = [(ctypes.c_float * (NUM_BLOCKS * BLOCK))(*[value(t, i) for i in range(NUM_BLOCKS * BLOCK)])
          for t in range(2)]
    cache_desc = CacheDesc(2, [NUM_BLOCKS, BLOCK], DataType.DT_FLOAT, Placement.HOST)
    cache_key = BlocksCacheKey(prompt_cluster_id=PROMPT_CLUSTER, model_id=0)
    cache = cache_manager.register_blocks_cache(cache_desc, [ctypes.addressof(t) for t in kv], cache_key,
                                                remote_accessible=True)
    q.put("ready")
    go.wait(60)
    cache_manager.unregister_cache(cache.cache_id)
    llm_datadist.finalize()


def test_documented_pull_blocks_program_runs_unchanged(free_port):
    with peer_process(prompt, free_port) as (q, go):
        assert q.get(timeout=30) == "ready"
        llm_datadist = LLMDataDist(LLMRole.DECODER, DECODER_CLUSTER)
        llm_config = LLMConfig()
        llm_config.device_id = 0
        llm_config.enable_cache_manager = True
        llm_datadist.init(llm_config.generate_options())
        cluster = LLMClusterInfo()
        cluster.remote_cluster_id = PROMPT_CLUSTER
        cluster.append_local_ip_info("127.0.0.1", 0)
        cluster.append_remote_ip_info("127.0.0.1", free_port)
        ret, rets = llm_datadist.link_clusters([cluster], 5000)
        assert ret == LLMStatusCode.LLM_SUCCESS and list(rets) == [LLMStatusCode.LLM_SUCCESS]
        cache_manager = llm_datadist.cache_manager
        kv = [(ctypes.c_float * (NUM_BLOCKS * BLOCK))() for _ in range(2)]
        cache_desc = CacheDesc(2, [NUM_BLOCKS, BLOCK], DataType.DT_FLOAT, Placement.HOST)
        cache = cache_manager.register_blocks_cache(cache_desc, [ctypes.addressof(t) for t in kv])
        blocks_cache_key = BlocksCacheKey(prompt_cluster_id=PROMPT_CLUSTER, model_id=0)
        cache_manager.pull_blocks(blocks_cache_key, cache, [0, 1], [2, 3])
        cache_manager.pull_blocks(blocks_cache_key, cache, [5], [6], src_layer_range=range(0, 1),
                                  dst_layer_range=range(0, 1))
        want = {2: 0, 3: 1, 6: 5}  # local block -> remote block
        for t in range(2):
            got = list(kv[t])
            for b in range(NUM_BLOCKS):
                expect = ([value(t, i) for i in range(want[b] * BLOCK, (want[b] + 1) * BLOCK)] if b in want
                          else [0.0] * BLOCK)
                assert got[b * BLOCK:(b + 1) * BLOCK] == expect, f"tensor {t} block {b}"
        ret, rets = llm_datadist.unlink_clusters([cluster], 5000)
        assert ret == LLMStatusCode.LLM_SUCCESS and list(rets) == [LLMStatusCode.LLM_SUCCESS]
        cache_manager.unregister_cache(cache.cache_id)
        llm_datadist.finalize()
