"""The vendor package's names this package adds: Status, Memtype,
MemInfo, KvCache, and LLMConfig.transfer_backend / global_resource_config, which
reach the engine (not dropped)."""
import pytest
from conftest import free_tcp_port

import llm_datadist
from llm_datadist import (KvCache, LLMConfig, LLMDataDist, LLMException, LLMRole, LLMStatusCode, MemInfo, Memtype,
                          Status)


def test_names_are_exported():
    for name in ("KvCache", "MemInfo", "Memtype", "Status", "LLMStatusCode", "LLMConfig"):
        assert name in llm_datadist.__all__
        assert hasattr(llm_datadist, name)


def test_status():
    assert Status(LLMStatusCode.LLM_SUCCESS).is_ok()
    s = Status(0x5010B005)
    assert not s.is_ok()
    assert s.status_code is LLMStatusCode.LLM_PARAM_INVALID
    assert Status(12345).status_code is LLMStatusCode.LLM_FAILED  # outside the table, as the vendor maps it


def test_memtype_and_meminfo():
    assert Memtype.MEM_TYPE_DEVICE.value == 0 and Memtype.MEM_TYPE_HOST.value == 1
    m = MemInfo(Memtype.MEM_TYPE_DEVICE, 1234, 10)
    assert (m.mem_type, m.addr, m.size) == (Memtype.MEM_TYPE_DEVICE, 1234, 10)
    with pytest.raises(TypeError):
        MemInfo(0, 1234, 10)
    with pytest.raises(TypeError):
        MemInfo(Memtype.MEM_TYPE_HOST, "1234", 10)
    with pytest.raises(ValueError):
        MemInfo(Memtype.MEM_TYPE_HOST, -1, 10)


def test_kv_cache():
    desc = llm_datadist.CacheDesc(2, [4, 8], llm_datadist.DataType.DT_FLOAT16, llm_datadist.Placement.HOST)
    c = KvCache.create_cpu_cache(desc, [0x1000, 0x2000])
    assert c.cache_id == -1
    assert c.cache_desc is desc
    assert c.per_device_tensor_addrs == [[0x1000, 0x2000]]
    assert KvCache(3, desc, [[1], [2]]).per_device_tensor_addrs == [[1], [2]]
    with pytest.raises(TypeError):
        KvCache("3", desc)


def test_config_emits_the_vendor_keys():
    cfg = LLMConfig()
    assert "llm.TransferBackend" not in cfg.generate_options()
    assert "llm.GlobalResourceConfig" not in cfg.gen_options()
    cfg.transfer_backend = "hixl"
    cfg.global_resource_config = ""
    o = cfg.generate_options()
    assert o["llm.TransferBackend"] == "hixl"
    assert o["llm.GlobalResourceConfig"] == ""
    for bad in (123, {"k": "v"}, [1, 2]):
        with pytest.raises(TypeError):
            cfg.global_resource_config = bad


def _init(cfg):
    cfg.listen_ip_info = f"127.0.0.1:{free_tcp_port()}"
    dd = LLMDataDist(LLMRole.PROMPT, 1)
    try:
        dd.init(cfg.generate_options())
    finally:
        dd.finalize()


def test_global_resource_config_reaches_the_engine():
    cfg = LLMConfig()
    cfg.global_resource_config = '{"connect_pool.thread_num": 2}'
    _init(cfg)  # accepted by the engine
    cfg.global_resource_config = "not json"
    with pytest.raises(LLMException) as e:
        _init(cfg)  # the engine's own check refuses it: it was passed on
    assert e.value.status_code == LLMStatusCode.LLM_PARAM_INVALID


def test_transfer_backend_is_checked():
    cfg = LLMConfig()
    cfg.transfer_backend = "adxl"
    _init(cfg)
    cfg.transfer_backend = "carrier-pigeon"
    with pytest.raises(LLMException) as e:
        _init(cfg)
    assert e.value.status_code == LLMStatusCode.LLM_PARAM_INVALID
