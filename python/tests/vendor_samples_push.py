"""The two roles of the vendor's Python samples that link by cluster info (push_blocks, push_cache, switch_role,
transfer_cache_async, hixl_transfer_backend, pull_blocks_xpyd), call for call: the same calls of the layer in
the same order, with the same arguments, options and expected statuses.  Differences, all outside the layer:
`fake_torch` for torch; 127.0.0.1 and free ports for the samples' hosts and fixed ports (26000/26001); the
multiprocessing barrier for the gloo group's; a barrier where a sample sleeps to wait for its peer; each
transfer's source stamped with a byte pattern and every byte of its destination checked (vendor_replay)."""
import socket
import struct

import fake_torch as torch
from vendor_replay import PLACEMENT, REMOTE, expect_blocks, pattern, stamp

from llm_datadist import (BlocksCacheKey, CacheDesc, CacheKeyByIdAndIndex, DataType, LayerSynchronizer,
                          LLMClusterInfo, LLMConfig, LLMDataDist, LLMRole, LLMStatusCode, TransferWithCacheKeyConfig)

dist = torch.distributed
NUM_TENSORS, BLOCKS_NUM, KV_SHAPE = 2, 3, 10
PROMPT_CLUSTER_ID, DECODER_CLUSTER_ID = 0, 1
HOST = "127.0.0.1"


def _desc(num_tensors=NUM_TENSORS):
    return CacheDesc(num_tensors=num_tensors, shape=[BLOCKS_NUM, KV_SHAPE], data_type=DataType.DT_FLOAT,
                     placement=PLACEMENT[0])


def _two(value):
    return [torch.full((BLOCKS_NUM, KV_SHAPE), value, dtype=torch.float).npu() for _ in range(2)]


def _init(role, cluster_id, listen=None, backend=None, local_comm_res="", extra=None):
    torch.npu.set_device(0)
    dist.init_process_group(backend="gloo", rank=cluster_id, world_size=2)
    dd = LLMDataDist(role, cluster_id)
    cfg = LLMConfig()
    cfg.device_id = 0
    if local_comm_res is not None:
        cfg.local_comm_res = local_comm_res
    if backend:
        cfg.transfer_backend = backend
    if listen:
        cfg.listen_ip_info = listen
    for k, v in (extra or {}).items():
        setattr(cfg, k, v)
    dd.init(cfg.generate_options())
    return dd


def _cluster(remote_id, local_port=None, remote_port=None):
    c = LLMClusterInfo()
    c.remote_cluster_id = remote_id
    if local_port is not None:
        c.append_local_ip_info(HOST, local_port)
    if remote_port is not None:
        c.append_remote_ip_info(HOST, remote_port)
    return c


def _blocks_cache(cm, cluster_id, tensor, tensor2):
    """register_blocks_cache of the two tensors under BlocksCacheKey(cluster_id, 0), as every sample here."""
    return cm.register_blocks_cache(_desc(), [tensor.data_ptr(), tensor2.data_ptr()],
                                    BlocksCacheKey(cluster_id, 0), remote_accessible=REMOTE[0])


def _ok(call_result, what):
    ret, _ = call_result
    assert ret == LLMStatusCode.LLM_SUCCESS, f"{what} failed: {ret}"


def _sender(dd, cluster_id):
    """A sending side's start: its two tensors (filled with 1, then stamp(t, i)) registered as one blocks cache,
    then the register-end barrier: (cm, tensors, cache)."""
    cm = dd.cache_manager
    tensors = _two(1)
    for i, t in enumerate(tensors):
        stamp(t, i)
    cache = _blocks_cache(cm, cluster_id, *tensors)
    dist.barrier()  # register end
    return cm, tensors, cache


def _receiver(dd, cluster_id, value):
    """A receiving side's start: its two tensors (filled with `value`) registered as one blocks cache, their
    bytes before anything arrives, then the register-end barrier: (cm, tensors, cache, before)."""
    cm = dd.cache_manager
    tensors = _two(value)
    cache = _blocks_cache(cm, cluster_id, *tensors)
    before = [t.tobytes() for t in tensors]
    dist.barrier()  # register end
    return cm, tensors, cache, before


def _expect_both(tensors, before, seed, pairs):
    """Tensor i: before[i] with block d replaced by block s of pattern(seed + i) for each (s, d) of pairs."""
    for i, t in enumerate(tensors):
        expect_blocks(t, before[i], pattern(t.nbytes, seed + i), pairs, BLOCKS_NUM)


def _close(dd, cm, cache, peer_cluster_id):
    """A sample's end: unlink the peer by cluster id only (forced), unregister the cache, finalize."""
    _ok(dd.unlink_clusters([_cluster(peer_cluster_id)], 5000, force=True), "unlink")
    cm.unregister_cache(cache.cache_id)
    dd.finalize()


# push_blocks_sample.py: both listen; the decoder links and pushes blocks [0, 1] to the prompt's [0, 2]; both
# unlink by cluster id only, forced (the prompt never linked).
def push_blocks_prompt(pport, dport, backend):
    dd = _init(LLMRole.PROMPT, PROMPT_CLUSTER_ID, f"{HOST}:{pport}", backend)
    cm, tensors, cache, before = _receiver(dd, PROMPT_CLUSTER_ID, 1)
    dist.barrier()  # decoder push blocks end
    _expect_both(tensors, before, 100, [(0, 0), (1, 2)])
    _close(dd, cm, cache, DECODER_CLUSTER_ID)


def push_blocks_decoder(pport, dport, backend):
    _decoder_pushes_blocks(backend, pport, dport, dst_blocks=[0, 2], forced_unlink=True)


# The decoder of push_blocks_sample.py and of hixl_transfer_backend_sample.py: two stamped tensors as blocks,
# link, push_blocks [0, 1] -> dst_blocks, unlink by cluster id (forced, or not and then wait for the peer's).
def _decoder_pushes_blocks(backend, pport, dport, dst_blocks, forced_unlink):
    dd = _init(LLMRole.DECODER, DECODER_CLUSTER_ID, f"{HOST}:{dport}", backend)
    cm = dd.cache_manager
    tensor, tensor2 = _two(0)
    for i, t in enumerate((tensor, tensor2)):
        stamp(t, i + 100)
    cache = _blocks_cache(cm, DECODER_CLUSTER_ID, tensor, tensor2)
    dist.barrier()  # register end
    _ok(dd.link_clusters([_cluster(PROMPT_CLUSTER_ID, dport, pport)], 5000), "link")
    cm.push_blocks(BlocksCacheKey(PROMPT_CLUSTER_ID, 0), cache, src_blocks=[0, 1], dst_blocks=dst_blocks)
    dist.barrier()  # push_blocks end
    # The samples differ in the call itself: one passes force=True, the other no force at all.
    unlink_args = {"force": True} if forced_unlink else {}
    _ok(dd.unlink_clusters([_cluster(PROMPT_CLUSTER_ID)], 5000, **unlink_args), "unlink")
    if not forced_unlink:
        dist.barrier()  # peer unlink end
    cm.unregister_cache(cache.cache_id)
    dd.finalize()


# push_cache_sample.py: the prompt listens (the decoder too with local_comm_res, which selects the hixl
# backend); both register_cache; the decoder links, push_cache to CacheKeyByIdAndIndex(0, cache_id=1, 0), and
# unlinks with the remote ip, not forced.
def push_cache_prompt(pport, dport, local_comm_res):
    backend = "hixl" if local_comm_res else None
    dd = _init(LLMRole.PROMPT, PROMPT_CLUSTER_ID, f"{HOST}:{pport}", backend, local_comm_res)
    cm = dd.cache_manager
    tensor, tensor2 = _two(0)
    cache = cm.register_cache(_desc(), [tensor.data_ptr(), tensor2.data_ptr()], remote_accessible=REMOTE[0])
    assert cache.cache_id == 1  # the id the decoder's push names
    before = [tensor.tobytes(), tensor2.tobytes()]
    dist.barrier()  # register end
    dist.barrier()  # decoder push cache end
    # batch entry 0 (row 0) pushed, the rest untouched
    _expect_both((tensor, tensor2), before, 100, [(0, 0)])
    dist.barrier()  # wait unlink end
    cm.unregister_cache(cache.cache_id)
    dd.finalize()


def push_cache_decoder(pport, dport, local_comm_res):
    backend = "hixl" if local_comm_res else None
    dd = _init(LLMRole.DECODER, DECODER_CLUSTER_ID, f"{HOST}:{dport}" if local_comm_res else None, backend,
               local_comm_res)
    cm = dd.cache_manager
    tensor, tensor2 = _two(1)
    for i, t in enumerate((tensor, tensor2)):
        stamp(t, i + 100)
    cache = cm.register_cache(_desc(), [tensor.data_ptr(), tensor2.data_ptr()], remote_accessible=REMOTE[0])
    dist.barrier()  # register end
    _ok(dd.link_clusters([_cluster(PROMPT_CLUSTER_ID, dport, pport)], 5000), "link")
    cm.push_cache(CacheKeyByIdAndIndex(cluster_id=PROMPT_CLUSTER_ID, cache_id=1, batch_index=0), cache,
                  src_batch_index=0)
    dist.barrier()  # push cache end
    _ok(dd.unlink_clusters([_cluster(PROMPT_CLUSTER_ID, remote_port=pport)], 5000), "unlink")
    dist.barrier()  # unlink end
    cm.unregister_cache(cache.cache_id)
    dd.finalize()


# switch_role_sample.py: the prompt listens; the decoder links, pulls [0, 1] -> [0, 2], unlinks (ip, not
# forced); the prompt switches to DECODER (stops listening), the decoder to PROMPT listening on the same port;
# the old prompt links, the old decoder pushes all three blocks of both layers (1 tensor per layer); both
# unlink forced by id.
def switch_role_prompt(port):
    dd = _init(LLMRole.PROMPT, PROMPT_CLUSTER_ID, f"{HOST}:{port}")
    cm, (tensor, tensor2), cache = _sender(dd, PROMPT_CLUSTER_ID)
    dist.barrier()  # decoder unlink
    dd.switch_role(LLMRole.DECODER)
    dist.barrier()  # prompt switch role end, not listening
    dist.barrier()  # decoder switch role end, listening
    _ok(dd.link_clusters([_cluster(DECODER_CLUSTER_ID, port, port)], 5000), "link")
    dist.barrier()  # prompt link end
    dist.barrier()  # decoder push blocks end: the decoder's blocks (0, 2 from this side's 0, 1; 1 its own)
    for i, t in enumerate((tensor, tensor2)):
        mine = pattern(t.nbytes, i)
        want = pattern(t.nbytes, i + 100)
        want = mine[:40] + want[40:80] + mine[40:80]
        assert t.tobytes() == want, i
    _close(dd, cm, cache, DECODER_CLUSTER_ID)


def switch_role_decoder(port):
    dd = _init(LLMRole.DECODER, DECODER_CLUSTER_ID)
    cm = dd.cache_manager
    tensor, tensor2 = _two(0)
    for i, t in enumerate((tensor, tensor2)):
        stamp(t, i + 100)
    cache = _blocks_cache(cm, DECODER_CLUSTER_ID, tensor, tensor2)
    before = [tensor.tobytes(), tensor2.tobytes()]
    dist.barrier()  # register end
    _ok(dd.link_clusters([_cluster(PROMPT_CLUSTER_ID, port, port)], 5000), "link")
    cm.pull_blocks(BlocksCacheKey(PROMPT_CLUSTER_ID, 0), cache, src_blocks=[0, 1], dst_blocks=[0, 2])
    _expect_both((tensor, tensor2), before, 0, [(0, 0), (1, 2)])
    _ok(dd.unlink_clusters([_cluster(PROMPT_CLUSTER_ID, remote_port=port)], 5000), "unlink")
    dist.barrier()  # decoder unlink
    dist.barrier()  # prompt switch role end
    cfg = LLMConfig()
    cfg.listen_ip_info = f"{HOST}:{port}"
    dd.switch_role(LLMRole.PROMPT, cfg.generate_options())
    dist.barrier()  # decoder switch role end, listening
    dist.barrier()  # prompt link end
    cm.push_blocks(BlocksCacheKey(PROMPT_CLUSTER_ID, 0), cache, src_blocks=[0, 1, 2], dst_blocks=[0, 1, 2],
                   src_layer_range=range(0, 2), dst_layer_range=range(0, 2), tensor_num_per_layer=1)
    dist.barrier()  # decoder push blocks end
    _close(dd, cm, cache, PROMPT_CLUSTER_ID)


# transfer_cache_async_sample.py: the decoder listens; the prompt links and sends layer 0 with
# transfer_cache_async (no block indices: block 0 of each tensor of the layer); both unlink forced by id.
class _Ready(LayerSynchronizer):
    def synchronize_layer(self, layer_index, timeout_in_millis):
        return True


def transfer_async_prompt(port):
    dd = _init(LLMRole.PROMPT, PROMPT_CLUSTER_ID, None, None, None,
               {"enable_cache_manager": True, "enable_remote_cache_accessible": True})
    cm, (tensor, tensor2), cache = _sender(dd, PROMPT_CLUSTER_ID)
    _ok(dd.link_clusters([_cluster(DECODER_CLUSTER_ID, port, port)], 5000), "link")
    config = TransferWithCacheKeyConfig(BlocksCacheKey(DECODER_CLUSTER_ID, 0), range(0, 1), range(0, 1))
    task = cm.transfer_cache_async(cache, _Ready(), [config])
    results = task.get_results()
    assert all(r == LLMStatusCode.LLM_SUCCESS for r in results), results
    dist.barrier()  # transfer cache end
    _close(dd, cm, cache, DECODER_CLUSTER_ID)


def transfer_async_decoder(port):
    dd = _init(LLMRole.DECODER, DECODER_CLUSTER_ID, f"{HOST}:{port}", None, None,
               {"enable_cache_manager": True, "enable_remote_cache_accessible": True})
    cm, tensors, cache, before = _receiver(dd, DECODER_CLUSTER_ID, 0)
    dist.barrier()  # prompt transfer cache end
    # layer 0 is both tensors: block 0 of each
    _expect_both(tensors, before, 0, [(0, 0)])
    _close(dd, cm, cache, PROMPT_CLUSTER_ID)


# hixl_transfer_backend_sample.py: both listen, backend hixl; each links to the other; the prompt pulls block
# 2, the decoder pushes blocks 0 and 1: the prompt's tensors become the decoder's; both unlink by id, not forced.
def hixl_backend_prompt(pport, dport):
    dd = _init(LLMRole.PROMPT, PROMPT_CLUSTER_ID, f"{HOST}:{pport}", "hixl")
    cm = dd.cache_manager
    tensor, tensor2 = _two(1)
    cache = _blocks_cache(cm, PROMPT_CLUSTER_ID, tensor, tensor2)
    dist.barrier()  # register end
    _ok(dd.link_clusters([_cluster(DECODER_CLUSTER_ID, pport, dport)], 5000), "link")
    cm.pull_blocks(BlocksCacheKey(DECODER_CLUSTER_ID, 0), cache, src_blocks=[2], dst_blocks=[2])
    dist.barrier()  # the decoder's push end
    for i, t in enumerate((tensor, tensor2)):
        assert t.tobytes() == pattern(t.nbytes, i + 100), i
    _ok(dd.unlink_clusters([_cluster(DECODER_CLUSTER_ID)], 5000), "unlink")
    dist.barrier()  # peer unlink end
    cm.unregister_cache(cache.cache_id)
    dd.finalize()


def hixl_backend_decoder(pport, dport):
    _decoder_pushes_blocks("hixl", pport, dport, dst_blocks=[0, 1], forced_unlink=False)


# pull_blocks_xpyd_sample.py: cluster id = ip << 16 | port; prompts listen there with one tensor full of their
# id; the decoder links to all of them, pulls [0, 1] -> [0, 2] from each in turn, unlinks them (ip info, not
# forced).  The samples' sleeps (prompts: 30 s; decoder: 5 s) wait for the peers: barriers here.
def ip_port_to_int(ip_port):
    ip, port = ip_port.split(":")
    return (struct.unpack("!I", socket.inet_aton(ip))[0] << 16) | int(port)


def _xpyd_init(role, local_ip_port):
    torch.npu.set_device(0)
    dd = LLMDataDist(role, ip_port_to_int(local_ip_port))
    cfg = LLMConfig()
    cfg.device_id = 0
    cfg.local_comm_res = ""
    if role == LLMRole.PROMPT:
        cfg.listen_ip_info = local_ip_port
    dd.init(cfg.generate_options())
    return dd


def xpyd_prompt(local_ip_port):
    dd = _xpyd_init(LLMRole.PROMPT, local_ip_port)
    cm = dd.cache_manager
    me = ip_port_to_int(local_ip_port)
    tensor = torch.full((BLOCKS_NUM, KV_SHAPE), me, dtype=torch.float).npu()
    stamp(tensor, me % 251)
    cache = cm.register_blocks_cache(_desc(1), [tensor.data_ptr()], BlocksCacheKey(me, 0),
                                     remote_accessible=REMOTE[0])
    dist.barrier()  # registered (the decoder's 5 s)
    dist.barrier()  # the decoder is done (the prompt's 30 s)
    cm.unregister_cache(cache.cache_id)
    dd.finalize()


def xpyd_decoder(local_ip_port, remote_ip_port):
    dd = _xpyd_init(LLMRole.DECODER, local_ip_port)
    cm = dd.cache_manager
    remote_list = remote_ip_port.split(";")
    tensor = torch.full((BLOCKS_NUM, KV_SHAPE), 0, dtype=torch.float).npu()
    before = tensor.tobytes()
    cache = cm.register_blocks_cache(_desc(1), [tensor.data_ptr()], BlocksCacheKey(ip_port_to_int(local_ip_port), 0),
                                     remote_accessible=REMOTE[0])
    dist.barrier()  # register end
    clusters = []
    for remote in remote_list:
        c = LLMClusterInfo()
        c.remote_cluster_id = ip_port_to_int(remote)
        c.append_local_ip_info(local_ip_port.split(":")[0], 0)
        c.append_remote_ip_info(remote.split(":")[0], int(remote.split(":")[1]))
        clusters.append(c)
    _ok(dd.link_clusters(clusters, 5000), "link")
    for remote in remote_list:
        rid = ip_port_to_int(remote)
        cm.pull_blocks(BlocksCacheKey(rid, 0), cache, src_blocks=[0, 1], dst_blocks=[0, 2])
        expect_blocks(tensor, before, pattern(tensor.nbytes, rid % 251), [(0, 0), (1, 2)],
                      BLOCKS_NUM)
    _ok(dd.unlink_clusters(clusters, 5000), "unlink")
    cm.unregister_cache(cache.cache_id)
    dd.finalize()
    dist.barrier()  # done


# push_cache_sample.py's --local_comm_res (a rank table; it selects the hixl backend there).
LOCAL_COMM_RES = ('{"version": "1.0", "server_count": "1", "status": "completed", "server_list": [{"server_id": '
                  '"127.0.0.1", "device": [{"device_id": "0", "device_ip": "127.0.0.1", "rank_id": "0"}]}]}')
