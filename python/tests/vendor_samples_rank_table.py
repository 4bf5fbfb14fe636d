"""The two roles of the vendor's Python samples that link by rank table (pull_blocks_sample, pull_cache_sample,
pull_from_cache_to_blocks with pull_sample_common), call for call, as in vendor_samples_push.py.  The rank table
is the samples' single-host form (one server, devices of rank 0 and 1) with 127.0.0.1 for the addresses
hccn_tool would print; cluster 1 is rank 0, cluster 2 rank 1.  allocate_cache is host placement from
llm.HostMemPoolConfig (this layer has no device pool: docs/cache_layer.md)."""
import json

import fake_torch as torch
from vendor_replay import PLACEMENT, REMOTE, expect_blocks, pattern, stamp

from llm_datadist import (BlocksCacheKey, Cache, CacheDesc, CacheKey, DataType, LLMConfig, LLMDataDist, LLMRole,
                          Placement, RegisterMemStatus)

dist = torch.distributed


def _init(role, cluster_id, host_pool=None):
    torch.npu.set_device(0)
    datadist = LLMDataDist(role, cluster_id)
    cfg = LLMConfig()
    cfg.device_id = 0
    cfg.enable_cache_manager = True
    if host_pool:  # the samples' mem_pool_cfg, for a host pool
        cfg.host_mem_pool_cfg = f'{{"memory_size": {host_pool}}}'
    datadist.init(cfg.generate_options())
    return datadist


def link(datadist):
    rank_table = {"server_count": "1", "status": "completed", "version": "1.2", "server_list": [
        {"device": [{"device_id": "0", "device_ip": "127.0.0.1", "rank_id": "0"},
                    {"device_id": "1", "device_ip": "127.0.0.1", "rank_id": "1"}],
         "host_ip": "127.0.0.1", "server_id": "1"}]}
    comm_id = datadist.link("link", {1: 0, 2: 1}, json.dumps(rank_table))
    while True:
        ret = datadist.query_register_mem_status(comm_id)
        if ret == RegisterMemStatus.OK:
            return comm_id
        assert ret != RegisterMemStatus.FAILED, "link failed"


# pull_blocks_sample.py: both register a blocks cache of 2 x 4 MiB (the prompt's under BlocksCacheKey(1, 0)),
# link by rank table; the decoder pulls blocks [0, 1] and swaps them out to a CPU cache and back in
# (host<->device: [device] only, a host-to-host swap is not one); both unlink(comm_id) and finalize.
SHAPE = [2, 1024 * 1024]


def pull_blocks_prompt():
    dd = _init(LLMRole.PROMPT, 1)
    cm = dd.cache_manager
    desc = CacheDesc(num_tensors=1, shape=SHAPE, data_type=DataType.DT_FLOAT, placement=PLACEMENT[0])
    tensor = torch.ones(*SHAPE, dtype=torch.float).npu()
    stamp(tensor, 1)
    cache = cm.register_blocks_cache(desc, [tensor.data_ptr()], BlocksCacheKey(1, 0), remote_accessible=REMOTE[0])
    comm_id = link(dd)
    dist.barrier()  # the sample's 30 s: the decoder is done
    dd.unlink(comm_id)
    dd.finalize()
    del cache


def pull_blocks_decoder():
    dd = _init(LLMRole.DECODER, 2)
    cm = dd.cache_manager
    desc = CacheDesc(num_tensors=1, shape=SHAPE, data_type=DataType.DT_FLOAT, placement=PLACEMENT[0])
    tensor = torch.ones(*SHAPE, dtype=torch.float).npu()
    cache = cm.register_blocks_cache(desc, [tensor.data_ptr()], remote_accessible=REMOTE[0])
    comm_id = link(dd)
    cm.pull_blocks(BlocksCacheKey(1, 0), cache, src_blocks=[0, 1], dst_blocks=[0, 1])
    want = pattern(tensor.nbytes, 1)
    assert tensor.cpu().tobytes() == want
    if PLACEMENT[0] == Placement.DEVICE:
        cpu_tensors = [torch.rand(size=(2, 1024 * 1024), dtype=torch.float32, device="cpu")]
        cpu_desc = CacheDesc(num_tensors=1, shape=[2, 1024 * 1024], data_type=DataType.DT_FLOAT,
                             placement=Placement.HOST)
        cpu_cache = Cache.create_cpu_cache(cpu_desc, [t.data_ptr() for t in cpu_tensors])
        cm.swap_blocks(cache, cpu_cache, {0: 0, 1: 1})  # swap out
        assert cpu_tensors[0].tobytes() == want
        stamp(tensor, 2)
        cm.swap_blocks(cpu_cache, cache, {0: 0, 1: 1})  # swap in
        assert tensor.tobytes() == want
    dist.barrier()
    dd.unlink(comm_id)
    dd.finalize()


# pull_cache_sample.py: both link first; the prompt allocate_cache's 4 x [2, 1M] fp16 under two keys (req 0 and
# 1, batch entries 0 and 1) and fills tensor 0 with ones; the decoder allocates and pulls both by key into its
# batch entries 0 and 1; the prompt removes both keys, deallocates; both unlink(comm_id), finalize.
CACHE_SHAPE = [2, 1024 * 1024]


def pull_cache_prompt():
    dd = _init(LLMRole.PROMPT, 1, 1073741824)
    comm_id = link(dd)
    cm = dd.cache_manager
    desc = CacheDesc(num_tensors=4, shape=CACHE_SHAPE, data_type=DataType.DT_FLOAT16, placement=Placement.HOST)
    key0 = CacheKey(prompt_cluster_id=1, req_id=0, model_id=0)
    key1 = CacheKey(prompt_cluster_id=1, req_id=1, model_id=0)
    cache = cm.allocate_cache(desc, [key0, key1])
    tensors = torch.torchair_llm_datadist.create_npu_tensors(cache.cache_desc.shape, torch.float16,
                                                             cache.tensor_addrs)
    tensors[0].fill_(1)
    for i, t in enumerate(tensors[1:]):
        stamp(t, i + 1)
    dist.barrier()  # prepared (the decoder's 5 s)
    dist.barrier()  # the decoder pulled (the prompt's 30 s)
    cm.remove_cache_key(key0)
    cm.remove_cache_key(key1)
    cm.deallocate_cache(cache)
    dd.unlink(comm_id)
    dd.finalize()


def pull_cache_decoder():
    dd = _init(LLMRole.DECODER, 2, 1073741824)
    comm_id = link(dd)
    cm = dd.cache_manager
    desc = CacheDesc(num_tensors=4, shape=CACHE_SHAPE, data_type=DataType.DT_FLOAT16, placement=Placement.HOST)
    cache = cm.allocate_cache(desc)
    dist.barrier()  # prepared
    cm.pull_cache(CacheKey(prompt_cluster_id=1, req_id=0, model_id=0), cache, batch_index=0)
    cm.pull_cache(CacheKey(prompt_cluster_id=1, req_id=1, model_id=0), cache, batch_index=1)
    tensors = torch.torchair_llm_datadist.create_npu_tensors(cache.cache_desc.shape, torch.float16,
                                                             cache.tensor_addrs)
    assert tensors[0].cpu().tobytes() == torch.float16.encode(1) * (tensors[0].nbytes // 2)
    for i, t in enumerate(tensors[1:]):
        assert t.tobytes() == pattern(t.nbytes, i + 1), i
    dist.barrier()
    cm.deallocate_cache(cache)
    dd.unlink(comm_id)
    dd.finalize()


# pull_from_cache_to_blocks.py (pull_sample_common: process group, then init with a 64 MiB pool): the decoder
# registers a blocks cache of 4 x [2, 16K] fp16 (ones) and links; the prompt links and allocate_cache's one
# under CacheKey(1, 0); the decoder pulls that key with src_blocks=[] into its block 0; both unlink(comm_id)
# with barriers between, the prompt removes the key and deallocates, both finalize.
COMMON_SHAPE = [2, 16 * 1024]


def from_cache_to_blocks_prompt():
    dist.init_process_group(backend="gloo", rank=0, world_size=2)
    dd = _init(LLMRole.PROMPT, 1, 64 * 1024 * 1024)
    comm_id = link(dd)
    cm = dd.cache_manager
    desc = CacheDesc(num_tensors=4, shape=COMMON_SHAPE, data_type=DataType.DT_FLOAT16, placement=Placement.HOST)
    key = CacheKey(prompt_cluster_id=1, req_id=0, model_id=0)
    cache = cm.allocate_cache(desc, [key])
    for i, t in enumerate(torch.torchair_llm_datadist.create_npu_tensors(COMMON_SHAPE, torch.float16,
                                                                         cache.tensor_addrs)):
        stamp(t, i)
    dist.barrier()  # cache ready
    dist.barrier()  # decoder pull_blocks end
    dd.unlink(comm_id)
    dist.barrier()  # peer unlink end
    cm.remove_cache_key(key)
    cm.deallocate_cache(cache)
    dd.finalize()


def from_cache_to_blocks_decoder():
    dist.init_process_group(backend="gloo", rank=1, world_size=2)
    dd = _init(LLMRole.DECODER, 2, 64 * 1024 * 1024)
    cm = dd.cache_manager
    desc = CacheDesc(num_tensors=4, shape=COMMON_SHAPE, data_type=DataType.DT_FLOAT16, placement=PLACEMENT[0])
    tensors = [torch.ones(*COMMON_SHAPE, dtype=torch.float16).npu() for _ in range(4)]
    before = [t.tobytes() for t in tensors]
    cache = cm.register_blocks_cache(desc, [t.data_ptr() for t in tensors], remote_accessible=REMOTE[0])
    comm_id = link(dd)
    dist.barrier()  # cache ready
    cm.pull_blocks(CacheKey(prompt_cluster_id=1, req_id=0, model_id=0), cache, src_blocks=[], dst_blocks=[0])
    for i, t in enumerate(tensors):  # batch entry 0 of the prompt's tensor i into block 0
        expect_blocks(t, before[i], pattern(t.nbytes, i), [(0, 0)], 2)
    dist.barrier()  # pull_blocks end
    dd.unlink(comm_id)
    dist.barrier()  # peer unlink end
    dd.finalize()
