"""The reference package's surface: LLMConfig and
init's option families, CacheKey spellings, LLMClusterInfo, the host pool's
allocate / copy / remove_cache_key, swap_blocks, and prefill / decode in two
processes linked through a rank table, with fill patterns that differ per
tensor, batch entry / block and byte."""
import ctypes
import json
import logging

import pytest
from conftest import peer_process

import llm_datadist.config
from llm_datadist import (BlocksCacheKey, Cache, CacheDesc, CacheKey, DataType, LLMClusterInfo, LLMConfig,
                          LLMDataDist, LLMException, LlmConfig, LLMRole, LLMStatusCode, Placement,
                          RegisterMemStatus)

POOL = json.dumps({"memory_size": 1 << 22})
LAYERS, BATCH, ENTRY = 2, 3, 256  # 4 tensors, 3 batch entries / blocks of 256 bytes


def desc():
    return CacheDesc(2 * LAYERS, [BATCH, ENTRY // 2], DataType.DT_FLOAT16, Placement.HOST)


def fill(addr, tensor, seed):
    data = bytes((i * 13 + tensor * 29 + seed * 53 + (i // ENTRY) * 7) % 251 for i in range(BATCH * ENTRY))
    ctypes.memmove(addr, data, len(data))
    return data


def entry(data, i):
    return data[i * ENTRY:(i + 1) * ENTRY]


def prefill(port, q, go):
    cfg = LLMConfig()
    cfg.listen_ip_info = f"127.0.0.1:{port}"
    cfg.enable_cache_manager = True
    cfg.host_mem_pool_cfg = POOL
    dd = LLMDataDist(LLMRole.PROMPT, 1)
    dd.init(cfg.generate_options())
    cm = dd.cache_manager
    cache = cm.allocate_cache(desc(), [CacheKey(prompt_cluster_id=1, req_id=10 + b) for b in range(BATCH)])
    blocks = cm.allocate_blocks_cache(desc(), BlocksCacheKey(prompt_cluster_id=1))
    for t, a in enumerate(cache.tensor_addrs):
        fill(a, t, 1)
    for t, a in enumerate(blocks.tensor_addrs):
        fill(a, t, 2)
    q.put("ready")
    go.wait(30)
    go.clear()
    cm.remove_cache_key(CacheKey(1, 11))
    q.put("removed")
    go.wait(30)
    cm.deallocate_cache(cache)
    cm.deallocate_blocks_cache(blocks)
    dd.finalize()


def test_prefill_decode_two_processes(free_port):
    with peer_process(prefill, free_port) as (q, go):
        assert q.get(timeout=30) == "ready"
        cfg = LlmConfig()
        cfg.enable_cache_manager = True
        cfg.host_mem_pool_cfg = POOL
        cfg.sync_kv_timeout = 5000
        dd = LLMDataDist(LLMRole.DECODER, 2)
        dd.init(cfg.generate_options())
        rank_table = json.dumps({"server_count": "2", "status": "completed", "version": "1.0", "server_list": [
            {"server_id": "p", "device": [{"device_id": "0", "device_ip": "127.0.0.1", "device_port": free_port,
                                           "rank_id": "0"}]},
            {"server_id": "d", "device": [{"device_id": "0", "device_ip": "127.0.0.1:1", "rank_id": "1"}]}]})
        comm = dd.link("pd", {1: 0, 2: 1}, rank_table)
        dd.check_link_status(1)
        assert dd.query_register_mem_status(comm) == RegisterMemStatus.OK
        cm = dd.cache_manager
        dst = cm.allocate_cache(desc())
        # Entry 2 of the remote cache (key req 12) into local entry 0, entry 0 (req 10) into local entry 2.
        cm.pull_cache(CacheKey(prompt_cluster_id=1, req_id=12), dst, batch_index=0)
        cm.pull_cache(CacheKey(cluster_id=1, req_id=10), dst, 2)
        src = [bytes((i * 13 + t * 29 + 53 + (i // ENTRY) * 7) % 251 for i in range(BATCH * ENTRY))
               for t in range(2 * LAYERS)]
        for t, a in enumerate(dst.tensor_addrs):
            got = ctypes.string_at(a, BATCH * ENTRY)
            assert entry(got, 0) == entry(src[t], 2) and entry(got, 2) == entry(src[t], 0)
            assert entry(got, 1) == bytes(ENTRY)
        # Blocks: remote [2, 0] -> local [0, 1], layer 1 only.
        bdst = cm.allocate_blocks_cache(desc())
        cm.pull_blocks(BlocksCacheKey(prompt_cluster_id=1), bdst, [2, 0], [0, 1],
                       src_layer_range=range(1, 2), dst_layer_range=range(1, 2))
        bsrc = [bytes((i * 13 + t * 29 + 106 + (i // ENTRY) * 7) % 251 for i in range(BATCH * ENTRY))
                for t in range(2 * LAYERS)]
        for t, a in enumerate(bdst.tensor_addrs):
            got = ctypes.string_at(a, BATCH * ENTRY)
            if t < 2:
                assert got == bytes(BATCH * ENTRY)
            else:
                assert entry(got, 0) == entry(bsrc[t], 2) and entry(got, 1) == entry(bsrc[t], 0)
        # Local copies.
        cm.copy_blocks(bdst, {0: [2]})
        for a in bdst.tensor_addrs[2:]:
            got = ctypes.string_at(a, BATCH * ENTRY)
            assert entry(got, 2) == entry(got, 0)
        cm.copy_cache(dst, dst, dst_batch_index=1, src_batch_index=0, offset=16, size=32)
        for a in dst.tensor_addrs:
            got = ctypes.string_at(a, BATCH * ENTRY)
            assert got[ENTRY + 16:ENTRY + 48] == got[16:48] and got[ENTRY:ENTRY + 16] == bytes(16)
        with pytest.raises(ValueError):
            cm.copy_cache(dst, dst, dst_batch_index=3)
        # remove_cache_key at the prefill: the key is gone for the decode.
        go.set()
        assert q.get(timeout=30) == "removed"
        with pytest.raises(LLMException) as e:
            cm.pull_cache(CacheKey(1, 11), dst)
        assert e.value.status_code == LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
        cm.pull_cache(CacheKey(1, 12), dst, 1)
        dd.unlink(comm)
        with pytest.raises(LLMException) as e:
            dd.check_link_status(1)
        assert e.value.status_code == LLMStatusCode.LLM_NOT_YET_LINK
        with pytest.raises(ValueError):
            dd.query_register_mem_status(comm)
        cm.deallocate_cache(dst)
        cm.deallocate_blocks_cache(bdst)
        assert cm._pool.free_bytes() == cm._pool.size
        dd.finalize()


def test_config_generate_options():
    c = LLMConfig()
    assert LlmConfig is LLMConfig
    assert c.generate_options() == {"llm.MemoryUtilization": "0.95"}
    c.listen_ip_info = "10.0.0.1:26000"
    c.device_id = [0, 1]
    c.sync_kv_timeout = "3000"
    c.enable_cache_manager = True
    c.enable_remote_cache_accessible = False
    c.rdma_traffic_class = 132
    c.rdma_service_level = 4
    c.local_comm_res = ""
    c.link_retry_count = 3
    c.ge_options = {"ge.flowGraphMemMaxSize": "1024"}
    o = c.generate_options()
    assert o["llm.listenIpInfo"] == "10.0.0.1:26000" and o["ge.exec.deviceId"] == "0;1"
    assert o["ge.session_device_id"] == "0" and o["llm.SyncKvCacheWaitTime"] == "3000"
    assert o["llm.EnableCacheManager"] == "1" and o["llm.EnableRemoteCacheAccessible"] == "0"
    assert o["llm.RdmaTrafficClass"] == "132" and o["llm.LocalCommRes"] == ""
    assert o["llm.LinkRetryCount"] == "3" and o["ge.flowGraphMemMaxSize"] == "1024"
    with pytest.raises(TypeError):
        c.listen_ip_info = 1
    with pytest.raises(TypeError):
        c.enable_cache_manager = 1
    with pytest.raises(ValueError):
        c.mem_utilization = 1.5
    with pytest.raises(LLMException):  # the reference's type for a wrong value
        c.link_retry_count = 0
    with pytest.raises(ValueError):
        c.sync_kv_timeout = "abc"


def test_init_option_families(caplog, monkeypatch):
    c = LLMConfig()
    c.enable_cache_manager = True
    c.enable_switch_role = True
    c.rdma_traffic_class = 132
    c.local_comm_res = ""
    c.ge_options = {"ge.exec.deviceId": "0"}
    opts = c.generate_options()
    opts["adxl.HeartbeatMs"] = "1000"
    opts["llm.Role"] = "Prompt"
    # "Logged once per process": forget what earlier tests logged, then each key must be logged exactly once
    # over two init() calls (never: the log line is missing; twice: not once per process).
    monkeypatch.setattr(llm_datadist.config, "_logged_keys", set())
    with caplog.at_level(logging.INFO, logger="llm_datadist"):
        dd = LLMDataDist(LLMRole.PROMPT, 5)
        dd.init(opts)
        dd.finalize()
        dd.init(opts)
        dd.finalize()
    logged = [r.getMessage() for r in caplog.records if "accepted" in r.getMessage()]
    for key in ("llm.EnableCacheManager", "llm.EnableSwitchRole", "llm.MemoryUtilization", "ge.exec.deviceId"):
        assert sum(key + " " in m for m in logged) == 1, (key, logged)
    dd = LLMDataDist(LLMRole.PROMPT, 5)
    with pytest.raises(ValueError) as e:
        dd.init({"hccl.Bogus": "1"})
    assert "hccl.Bogus" in str(e.value)
    with pytest.raises(LLMException):
        dd.init({"adxl.NoSuchOption": "1"})  # the engine refuses unknown adxl. keys


def test_rdma_options_reach_the_engine_as_in_cpp():
    # One table (the C++ cache layer's): llm.RdmaTrafficClass / llm.RdmaServiceLevel go to the engine, as the
    # vendor translates them; the engine refuses a traffic class that is not a multiple of 4 and a service
    # level over 7, the same as LlmDataDist::Initialize (LlmDataDist.InitializeChecksItsOptions).
    assert llm_datadist._native.engine_option_key("llm.RdmaTrafficClass") == ("adxl.RdmaTrafficClass", True)
    assert llm_datadist._native.engine_option_key("llm.EnableCacheManager") is None
    for bad in ({"llm.RdmaTrafficClass": "130"}, {"llm.RdmaServiceLevel": "8"}):
        dd = LLMDataDist(LLMRole.DECODER, 6)
        with pytest.raises(ValueError) as e:
            dd.init(bad)
        assert e.value.status_code == LLMStatusCode.LLM_PARAM_INVALID
    dd = LLMDataDist(LLMRole.DECODER, 6)
    dd.init({"llm.RdmaTrafficClass": "132", "llm.RdmaServiceLevel": "4"})
    dd.finalize()


def test_keys_and_cluster_info():
    k = CacheKey(prompt_cluster_id=3, req_id=4)
    assert (k.cluster_id, k.prompt_cluster_id, k.req_id, k.model_id, k.prefix_id) == (3, 3, 4, 0, 2 ** 64 - 1)
    assert CacheKey(3, 4, 5, 6).prefix_id == 6
    assert BlocksCacheKey(prompt_cluster_id=2, model_id=1).cluster_id == 2
    with pytest.raises(TypeError):
        CacheKey(req_id=1)
    with pytest.raises(TypeError):
        CacheKey(1, 2, bogus=3)
    with pytest.raises(TypeError):
        CacheKey("1", 2)
    with pytest.raises(ValueError):
        CacheKey(1, -2)
    info = LLMClusterInfo()
    assert info.remote_cluster_id is None
    info.remote_cluster_id = 7
    info.append_remote_ip_info("10.1.2.3", 26000)
    info.append_local_ip_info(0x0100007F, 1)
    assert info.remote_ip_info_list == [(int.from_bytes(bytes([10, 1, 2, 3]), "little"), 26000)]
    assert info._engine() == "10.1.2.3:26000"
    with pytest.raises(TypeError):
        info.append_remote_ip_info(1.5, 1)
    with pytest.raises(ValueError):
        info.append_remote_ip_info("10.0.0.1", 70000)
    with pytest.raises(TypeError):
        info.remote_cluster_id = "x"


def test_host_pool_rules_and_swap():
    dd = LLMDataDist(LLMRole.MIX, 9)
    dd.init({"llm.HostMemPoolConfig": json.dumps({"memory_size": 4096})})
    cm = dd.cache_manager
    with pytest.raises(ValueError):  # device placement needs llm.MemPoolConfig
        cm.allocate_cache(CacheDesc(1, [1, 8], DataType.DT_FLOAT16, Placement.DEVICE))
    with pytest.raises(LLMException) as e:
        cm.allocate_cache(CacheDesc(3, [1, 1024], DataType.DT_FLOAT16, Placement.HOST))  # 3 x 2 KiB > 4 KiB
    assert e.value.status_code == LLMStatusCode.LLM_OUT_OF_MEMORY
    assert cm._pool.free_bytes() == 4096
    b = cm.allocate_blocks_cache(CacheDesc(1, [4, 8], DataType.DT_FLOAT16, Placement.HOST))
    with pytest.raises(ValueError):
        cm.deallocate_cache(b)  # a blocks cache
    host = (ctypes.c_uint8 * 64)()
    cpu = Cache.create_cpu_cache(CacheDesc(1, [4, 8], DataType.DT_FLOAT16, Placement.HOST), [ctypes.addressof(host)])
    assert cpu.cache_id == -1 and cpu.is_blocks_cache
    with pytest.raises(ValueError):  # host -> host is not a swap
        cm.swap_blocks(cpu, b, {0: 1})
    dev = Cache.create_cpu_cache(CacheDesc(1, [4, 8], DataType.DT_FLOAT16, Placement.HOST), [ctypes.addressof(host)])
    dev.cache_desc = CacheDesc(1, [4, 8], DataType.DT_FLOAT16, Placement.DEVICE)
    ctypes.memset(host, 0x5a, 64)
    # `dev` is host memory posing as a device cache: no device runtime in this process copies it (none is loaded,
    # or the host ACL emulation is and it is not its memory); refused, never silently skipped.
    with pytest.raises(LLMException) as e:
        cm.swap_blocks(b, dev, {0: 1})
    assert e.value.status_code == LLMStatusCode.LLM_FEATURE_NOT_ENABLED
    assert bytes(host) == b"\x5a" * 64  # nothing moved
    with pytest.raises(ValueError):  # a block out of range
        cm.swap_blocks(b, dev, {4: 0})
    flat = cm.allocate_cache(CacheDesc(1, [4, 8], DataType.DT_FLOAT16, Placement.HOST))
    with pytest.raises(ValueError):  # not a blocks cache
        cm.swap_blocks(flat, dev, {0: 0})
    cm.deallocate_cache(flat)
    with pytest.raises(TypeError):
        cm.swap_blocks(b, dev, [(0, 1)])
    with pytest.raises(ValueError):
        cm.remove_cache_key(CacheKey(9, 2 ** 64 - 1))
    with pytest.raises(LLMException) as e:
        cm.remove_cache_key(CacheKey(9, 1))
    assert e.value.status_code == LLMStatusCode.LLM_KV_CACHE_NOT_EXIST
    cm.deallocate_blocks_cache(b)
    dd.switch_role(LLMRole.PROMPT)
    assert dd.role == LLMRole.PROMPT
    dd.finalize()
