"""Calls as serving frameworks' KV connectors make them (vLLM-Ascend's llmdatadist_c_mgr_connector, omni-infer's
LLM-DataDist manager, the vendor's push_blocks / switch_role samples), replayed as two processes on host memory,
every byte checked (docs/cache_layer.md, "Calls as serving frameworks make them"):

- the decoder links to the prefill; the prefill pushes over that link (links are two-way on the default backend,
  one-way with transfer_backend "hixl");
- unlink_clusters with LLMClusterInfo that carry only remote_cluster_id, force=True, on both sides, including the
  side that never linked: per-cluster LLM_SUCCESS;
- switch_role: caches stay registered, the listen option moves the listener, a switch without it stops listening,
  no switch while a link exists;
- an unreachable peer is LLM_LINK_FAILED."""
import ctypes
import json
import os

import pytest

from conftest import free_tcp_port, spawned

from llm_datadist import (BlocksCacheKey, CacheDesc, DataType, LayerSynchronizer, LLMClusterInfo, LLMConfig,
                          LLMDataDist, LLMException, LLMRole, LLMStatusCode, Placement, RegisterMemStatus,
                          TransferWithCacheKeyConfig)

PREFILL, DECODE = 1, 2
LAYERS, BLOCKS, BLOCK = 2, 6, 64  # K and V per layer; BLOCK floats per block
SRC_BLOCKS, DST_BLOCKS = [1, 4, 5], [0, 3, 2]


def value(tensor, block, i):
    return float(tensor * 100000 + block * 1000 + i + 1)


def acl_emulation():
    """The host ACL runtime's library (emulation/acl) of this build, loaded so that the engine finds it, or None."""
    import llm_datadist
    lib = os.path.join(os.path.dirname(llm_datadist.__file__), "..", "..", "lib", "adxl-acl-host", "lib",
                       "libascendcl.so")
    if not os.path.exists(lib):
        return None
    acl = ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    assert acl.aclrtSetDevice(0) == 0
    return acl


class DeviceTensors:
    """Tensors in the ACL host runtime's device memory (aclrtMalloc), read and written with aclrtMemcpy: the
    stand-in for the samples' torch_npu tensors."""
    H2D, D2H = 1, 2

    def __init__(self, acl, host):
        self.acl, self.addrs = acl, []
        for a in host:
            p = ctypes.c_void_p()
            assert acl.aclrtMalloc(ctypes.byref(p), ctypes.c_size_t(ctypes.sizeof(a)), 0) == 0
            assert acl.aclrtMemcpy(p, ctypes.c_size_t(ctypes.sizeof(a)), ctypes.addressof(a),
                                   ctypes.c_size_t(ctypes.sizeof(a)), self.H2D) == 0
            self.addrs.append(p.value)

    def __getitem__(self, t):
        a = (ctypes.c_float * (BLOCKS * BLOCK))()
        assert self.acl.aclrtMemcpy(ctypes.addressof(a), ctypes.c_size_t(ctypes.sizeof(a)),
                                    ctypes.c_void_p(self.addrs[t]), ctypes.c_size_t(ctypes.sizeof(a)),
                                    self.D2H) == 0
        return a

    def __iter__(self):
        return (self[t] for t in range(len(self.addrs)))


def blocks_cache(cm, cluster, fill, device=False):
    kv = [(ctypes.c_float * (BLOCKS * BLOCK))() for _ in range(2 * LAYERS)]
    if fill:
        for t, a in enumerate(kv):
            for b in range(BLOCKS):
                for i in range(BLOCK):
                    a[b * BLOCK + i] = value(t, b, i)
    if device:
        kv = DeviceTensors(acl_emulation(), kv)
        addrs = kv.addrs
    else:
        addrs = [ctypes.addressof(a) for a in kv]
    desc = CacheDesc(2 * LAYERS, [BLOCKS, BLOCK], DataType.DT_FLOAT, Placement.DEVICE if device else Placement.HOST)
    cache = cm.register_blocks_cache(desc, addrs, BlocksCacheKey(cluster, 0), remote_accessible=True)
    return cache, kv


def init(role, cluster, listen=None, backend=None):
    dd = LLMDataDist(role, cluster)
    cfg = LLMConfig()
    cfg.device_id = 0
    cfg.enable_cache_manager = True
    if listen is not None:
        cfg.listen_ip_info = listen
    if backend is not None:
        cfg.transfer_backend = backend
    dd.init(cfg.generate_options())
    return dd


def peer(target, *args):
    """The other side of a flow: target(*args, to_main, to_peer) in a spawned process; yields the two queues
    (to_main: what the peer says, to_peer: what this side says); the peer must exit with 0 within 30 s of the
    block's end."""
    return spawned(target, *args, channels=lambda ctx: (ctx.Queue(), ctx.Queue()))


def assert_blocks_moved(kv):
    """Every tensor's DST_BLOCKS hold what the prefill's SRC_BLOCKS held (value())."""
    for t in range(2 * LAYERS):
        for s, d in zip(SRC_BLOCKS, DST_BLOCKS):
            got = list(kv[t][d * BLOCK:(d + 1) * BLOCK])
            assert got == [value(t, s, i) for i in range(BLOCK)], (t, s, d)


def receive_after_link(dd, port, to_main, to_peer, word):
    """The decoder's side of one push: a blocks cache, a link to the prefill at `port`, which is told "linked"
    and answers `word` once it pushed; the blocks must have moved.  Returns (cache, kv), kept by the caller
    until it finalizes."""
    cache, kv = blocks_cache(dd.cache_manager, DECODE, fill=False)
    assert dd.link_clusters([with_ip(PREFILL, port)], 5000)[0] == LLMStatusCode.LLM_SUCCESS
    to_peer.put("linked")
    assert to_main.get(timeout=30) == word
    assert_blocks_moved(kv)
    return cache, kv


def only_id(cluster_id):
    c = LLMClusterInfo()
    c.remote_cluster_id = cluster_id
    return c


def with_ip(cluster_id, port):
    c = only_id(cluster_id)
    c.append_local_ip_info("127.0.0.1", 0)
    c.append_remote_ip_info("127.0.0.1", port)
    return c


def prefill_pushes(port, backend, device, to_main, to_peer):
    """The prefill: listens, never links; pushes its blocks to the decoder over the decoder's link."""
    dd = init(LLMRole.PROMPT, PREFILL, f"127.0.0.1:{port}", backend)
    cache, kv = blocks_cache(dd.cache_manager, PREFILL, fill=True, device=device)
    to_main.put("ready")
    assert to_peer.get(timeout=30) == "linked"
    try:
        dd.cache_manager.push_blocks(BlocksCacheKey(DECODE, 0), cache, SRC_BLOCKS, DST_BLOCKS)
        to_main.put("pushed")
    except LLMException as e:
        to_main.put(("refused", int(e.status_code)))
    assert to_peer.get(timeout=30) == "unlink"
    # The side that never linked: clusters with only remote_cluster_id, forced.
    ret, rets = dd.unlink_clusters([only_id(DECODE)], 3000, force=True)
    to_main.put((int(ret), [int(r) for r in rets]))
    assert to_peer.get(timeout=30) == "done"
    dd.cache_manager.unregister_cache(cache.cache_id)
    dd.finalize()


def run_push_flow(backend, device=False):
    port, dport = free_tcp_port(), free_tcp_port()
    with peer(prefill_pushes, port, backend, device) as (to_main, to_peer):
        assert to_main.get(timeout=30) == "ready"
        dd = init(LLMRole.DECODER, DECODE, f"127.0.0.1:{dport}")
        cache, kv = blocks_cache(dd.cache_manager, DECODE, fill=False, device=device)
        ret, rets = dd.link_clusters([with_ip(PREFILL, port)], 5000)
        assert ret == LLMStatusCode.LLM_SUCCESS and list(rets) == [LLMStatusCode.LLM_SUCCESS]
        to_peer.put("linked")
        pushed = to_main.get(timeout=30)
        if backend == "hixl":
            # One-way links: only the linking side moves data; nothing landed.
            assert pushed == ("refused", int(LLMStatusCode.LLM_NOT_YET_LINK))
            assert all(v == 0.0 for a in kv for v in a)
            # The linking side still pulls.
            dd.cache_manager.pull_blocks(BlocksCacheKey(PREFILL, 0), cache, SRC_BLOCKS, DST_BLOCKS)
        else:
            assert pushed == "pushed"
        assert_blocks_moved(kv)
        to_peer.put("unlink")
        assert to_main.get(timeout=30) == (int(LLMStatusCode.LLM_SUCCESS), [int(LLMStatusCode.LLM_SUCCESS)])
        ret, rets = dd.unlink_clusters([only_id(PREFILL)], 3000, force=True)
        assert ret == LLMStatusCode.LLM_SUCCESS and list(rets) == [LLMStatusCode.LLM_SUCCESS]
        with pytest.raises(LLMException) as e:  # the link is gone
            dd.cache_manager.pull_blocks(BlocksCacheKey(PREFILL, 0), cache, SRC_BLOCKS, DST_BLOCKS)
        assert e.value.status_code == LLMStatusCode.LLM_NOT_YET_LINK
        # Again, forced: nothing left to unlink is LLM_SUCCESS; without force the peer is asked at the address
        # given and answers (LLM_SUCCESS), and on the default backend (this decoder's) a cluster without its one
        # remote ip info is LLM_PARAM_INVALID (the vendor's).
        assert dd.unlink_clusters([only_id(PREFILL)], 3000, force=True)[1] == [LLMStatusCode.LLM_SUCCESS]
        assert dd.unlink_clusters([with_ip(PREFILL, port)], 3000)[1] == [LLMStatusCode.LLM_SUCCESS]
        assert dd.unlink_clusters([with_ip(PREFILL, free_tcp_port())], 3000)[1] == [
            LLMStatusCode.LLM_UNLINK_FAILED]
        assert dd.unlink_clusters([only_id(PREFILL)], 3000)[1] == [LLMStatusCode.LLM_PARAM_INVALID]
        dd.cache_manager.unregister_cache(cache.cache_id)
        dd.finalize()
        to_peer.put("done")


def test_prefill_pushes_over_the_decoders_link():
    run_push_flow(None)


def test_hixl_backend_links_are_one_way():
    run_push_flow("hixl")


def test_prefill_pushes_over_the_decoders_link_device_memory():
    """The same on the ACL host runtime's device memory (the samples' torch_npu tensors), both sides."""
    if acl_emulation() is None:
        pytest.skip("no host ACL runtime (emulation/acl) in this build")
    run_push_flow(None, device=True)


def test_hixl_backend_links_are_one_way_device_memory():
    if acl_emulation() is None:
        pytest.skip("no host ACL runtime (emulation/acl) in this build")
    run_push_flow("hixl", device=True)


def holder_switches_roles(port1, port2, to_main, to_peer):
    """Registers a cache, then: stop listening, listen on port2, refuse to switch while linked."""
    dd = init(LLMRole.PROMPT, PREFILL, f"127.0.0.1:{port1}")
    cache, kv = blocks_cache(dd.cache_manager, PREFILL, fill=True)
    dd.switch_role(LLMRole.DECODER)  # no listen option: stops listening
    to_main.put("not listening")
    assert to_peer.get(timeout=30) == "next"
    dd.switch_role(LLMRole.PROMPT, {"llm.listenIpInfo": f"127.0.0.1:{port2}"})
    to_main.put("listening")
    assert to_peer.get(timeout=30) == "linked"
    try:
        dd.switch_role(LLMRole.DECODER)
        to_main.put("switched")
    except LLMException as e:
        to_main.put(("refused", int(e.status_code)))
    assert to_peer.get(timeout=30) == "done"
    dd.cache_manager.unregister_cache(cache.cache_id)
    dd.finalize()


def test_switch_role_moves_and_stops_the_listener_and_keeps_caches():
    port1, port2 = free_tcp_port(), free_tcp_port()
    with peer(holder_switches_roles, port1, port2) as (to_main, to_peer):
        assert to_main.get(timeout=30) == "not listening"
        dd = init(LLMRole.DECODER, DECODE)
        cache, kv = blocks_cache(dd.cache_manager, DECODE, fill=False)
        ret, rets = dd.link_clusters([with_ip(PREFILL, port1)], 1000)
        assert ret == LLMStatusCode.LLM_LINK_FAILED and list(rets) == [LLMStatusCode.LLM_LINK_FAILED]
        to_peer.put("next")
        assert to_main.get(timeout=30) == "listening"
        ret, rets = dd.link_clusters([with_ip(PREFILL, port2)], 5000)
        assert ret == LLMStatusCode.LLM_SUCCESS
        to_peer.put("linked")
        assert to_main.get(timeout=30) == ("refused", int(LLMStatusCode.LLM_EXIST_LINK))
        # The cache registered before both switches is still there, under its key.
        dd.cache_manager.pull_blocks(BlocksCacheKey(PREFILL, 0), cache, SRC_BLOCKS, DST_BLOCKS)
        assert_blocks_moved(kv)
        assert dd.unlink_clusters([only_id(PREFILL)], 3000, force=True)[0] == LLMStatusCode.LLM_SUCCESS
        dd.cache_manager.unregister_cache(cache.cache_id)
        dd.finalize()
        to_peer.put("done")


RANK_TABLE = ('{"version": "1.0", "server_count": "1", "status": "completed", "server_list": [{"server_id": '
              '"127.0.0.1", "device": [{"device_id": "0", "device_ip": "127.0.0.1", "rank_id": "0"}]}]}')


def prefill_finalizes_first(port, to_main, to_peer):
    dd = init(LLMRole.PROMPT, PREFILL, f"127.0.0.1:{port}")
    cache, kv = blocks_cache(dd.cache_manager, PREFILL, fill=True)
    to_main.put("ready")
    assert to_peer.get(timeout=30) == "linked"
    dd.cache_manager.push_blocks(BlocksCacheKey(DECODE, 0), cache, SRC_BLOCKS, DST_BLOCKS)
    dd.finalize()  # first, with the decoder's link still up
    to_main.put("finalized")


def test_a_normal_shutdown_logs_no_error(capfd):
    """The prefill finalizes while the decoder's link is up; the decoder then finalizes (telling a finalized peer
    is expected, not an error).  Also: the rank table serving frameworks pass as llm.LocalCommRes gives no
    WARN line per key."""
    port, dport = free_tcp_port(), free_tcp_port()
    with peer(prefill_finalizes_first, port) as (to_main, to_peer):
        assert to_main.get(timeout=30) == "ready"
        dd = LLMDataDist(LLMRole.DECODER, DECODE)
        cfg = LLMConfig()
        cfg.enable_cache_manager = True
        cfg.listen_ip_info = f"127.0.0.1:{dport}"
        cfg.local_comm_res = RANK_TABLE
        dd.init(cfg.generate_options())
        cache, kv = receive_after_link(dd, port, to_main, to_peer, "finalized")
        dd.finalize()
    err = capfd.readouterr().err
    assert "ERROR" not in err, err
    assert "LocalCommRes" not in err or "WARN" not in "".join(l for l in err.splitlines() if "LocalCommRes" in l), err


class _Ready(LayerSynchronizer):
    def synchronize_layer(self, layer_index, timeout_in_millis):
        return True


def decoder_receives(port, to_main, to_peer):
    """The decoder: listens with a zeroed blocks cache; reports what landed (block 0 of each tensor, block 1)."""
    dd = init(LLMRole.DECODER, DECODE, f"127.0.0.1:{port}")
    cache, kv = blocks_cache(dd.cache_manager, DECODE, fill=False)
    to_main.put("ready")
    assert to_peer.get(timeout=30) == "sent"
    to_main.put([[list(a[b * BLOCK:(b + 1) * BLOCK]) for b in (0, 1)] for a in kv])
    assert to_peer.get(timeout=30) == "done"
    dd.finalize()


def test_transfer_cache_async_without_block_indices_copies_block_zero():
    """The vendor's cache-to-cache copy: no block indices on a blocks cache moves block 0 to block 0 of each
    tensor in the layer range."""
    port = free_tcp_port()
    with peer(decoder_receives, port) as (to_main, to_peer):
        assert to_main.get(timeout=30) == "ready"
        dd = init(LLMRole.PROMPT, PREFILL, f"127.0.0.1:{free_tcp_port()}")
        cache, kv = blocks_cache(dd.cache_manager, PREFILL, fill=True)
        assert dd.link_clusters([with_ip(DECODE, port)], 5000)[0] == LLMStatusCode.LLM_SUCCESS
        target = TransferWithCacheKeyConfig(BlocksCacheKey(DECODE, 0), range(0, 1), range(0, 1))
        task = dd.cache_manager.transfer_cache_async(cache, _Ready(), [target])
        assert task.synchronize() == LLMStatusCode.LLM_SUCCESS
        to_peer.put("sent")
        got = to_main.get(timeout=30)
        for t in range(2 * LAYERS):
            layer0 = t < 2
            want0 = [value(t, 0, i) for i in range(BLOCK)] if layer0 else [0.0] * BLOCK
            assert got[t][0] == want0, t
            assert got[t][1] == [0.0] * BLOCK, t
        dd.unlink_clusters([only_id(DECODE)], 3000, force=True)
        dd.finalize()
        to_peer.put("done")


def vllm_rank_table(comm):
    """vLLM-Ascend's rank table: device_ip without a port, one server per cluster."""
    return json.dumps({"server_count": "2", "status": "completed", "version": "1.0", "server_list": [
        {"server_id": "prefill", "device": [{"device_id": "0", "device_ip": "127.0.0.1", "rank_id": "0"}]},
        {"server_id": "decode", "device": [{"device_id": "0", "device_ip": "127.0.0.1", "rank_id": "1"}]}]})


def prefill_rank_link(comm, device, to_main, to_peer):
    """The prefill as vLLM-Ascend's connector: init without llm.listenIpInfo, link(comm_name, ranks, rank_table),
    push to the decoder, unlink(comm_id), finalize; then init and link again."""
    for round_ in range(2):
        dd = init(LLMRole.PROMPT, PREFILL)
        cache, kv = blocks_cache(dd.cache_manager, PREFILL, fill=True, device=device)
        comm_id = dd.link(f"{comm}-{round_}", {PREFILL: 0, DECODE: 1}, vllm_rank_table(comm))
        assert dd.query_register_mem_status(comm_id) == RegisterMemStatus.OK
        assert to_peer.get(timeout=30) == "ready"
        dd.cache_manager.push_blocks(BlocksCacheKey(DECODE, 0), cache, SRC_BLOCKS, DST_BLOCKS)
        to_main.put("pushed")
        assert to_peer.get(timeout=30) == "unlink"
        dd.unlink(comm_id)
        dd.finalize()
        to_main.put("finalized")


@pytest.mark.parametrize("device", [False, True], ids=["host", "device"])
def test_rank_table_link_on_both_sides_without_listen_addresses(device):
    if device and acl_emulation() is None:
        pytest.skip("no host ACL runtime (emulation/acl) in this build")
    comm = f"pd{free_tcp_port()}"
    with peer(prefill_rank_link, comm, device) as (to_main, to_peer):
        for round_ in range(2):  # finalize and init again
            dd = init(LLMRole.DECODER, DECODE)
            cache, kv = blocks_cache(dd.cache_manager, DECODE, fill=False, device=device)
            comm_id = dd.link(f"{comm}-{round_}", {PREFILL: 0, DECODE: 1}, vllm_rank_table(comm))
            to_peer.put("ready")
            assert to_main.get(timeout=30) == "pushed"
            assert_blocks_moved(kv)
            # And the decoder pulls (block 0 of the prefill into its block 1).
            dd.cache_manager.pull_blocks(BlocksCacheKey(PREFILL, 0), cache, [0], [1])
            for t in range(2 * LAYERS):
                assert list(kv[t][BLOCK:2 * BLOCK]) == [value(t, 0, i) for i in range(BLOCK)]
            to_peer.put("unlink")
            dd.unlink(comm_id)
            assert to_main.get(timeout=30) == "finalized"
            dd.finalize()


def prefill_pushes_each_round(port, rounds, to_main, to_peer):
    dd = init(LLMRole.PROMPT, PREFILL, f"127.0.0.1:{port}")
    cache, kv = blocks_cache(dd.cache_manager, PREFILL, fill=True)
    to_main.put("ready")
    for _ in range(rounds):
        assert to_peer.get(timeout=30) == "linked"
        dd.cache_manager.push_blocks(BlocksCacheKey(DECODE, 0), cache, SRC_BLOCKS, DST_BLOCKS)
        to_main.put("pushed")
    assert to_peer.get(timeout=30) == "done"
    dd.finalize()


def test_decoder_finalizes_and_links_again_prefill_pushes_again():
    """Finalize and init again on the decoder (same address, no unlink call: finalize unlinks): the prefill's
    connection back to the old decoder goes, a new one reaches the new decoder."""
    port, dport = free_tcp_port(), free_tcp_port()
    with peer(prefill_pushes_each_round, port, 3) as (to_main, to_peer):
        assert to_main.get(timeout=30) == "ready"
        for _ in range(3):
            dd = init(LLMRole.DECODER, DECODE, f"127.0.0.1:{dport}")
            cache, kv = receive_after_link(dd, port, to_main, to_peer, "pushed")
            dd.finalize()
        to_peer.put("done")


def test_link_results_are_the_last_failure():
    """As the vendor's LLMLinkManager: the call's status is the last failing cluster's; rets has each one's."""
    port = free_tcp_port()
    dd = init(LLMRole.DECODER, DECODE)
    nobody = with_ip(PREFILL, port)  # nothing listens there
    own = with_ip(DECODE, port)  # this cluster itself
    ret, rets = dd.link_clusters([own, nobody], 500)
    assert ret == LLMStatusCode.LLM_LINK_FAILED
    assert list(rets) == [LLMStatusCode.LLM_PARAM_INVALID, LLMStatusCode.LLM_LINK_FAILED]
    ret, rets = dd.link_clusters([nobody, own], 500)
    assert ret == LLMStatusCode.LLM_PARAM_INVALID
    assert list(rets) == [LLMStatusCode.LLM_LINK_FAILED, LLMStatusCode.LLM_PARAM_INVALID]
    dd.finalize()
