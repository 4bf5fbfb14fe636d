"""adxl bindings: two engines in one process, WRITE / READ / notify, statuses."""
import ctypes

import adxl
from conftest import wait_transfer


def buf(n, fill=0):
    b = (ctypes.c_uint8 * n)(*([fill] * n))
    return b, ctypes.addressof(b)


def engines(port):
    """(target listening at 127.0.0.1:port, client, the target's name), both initialized."""
    target, client = adxl.AdxlEngine(), adxl.AdxlEngine()
    name = f"127.0.0.1:{port}"
    assert target.initialize(name, {}) == adxl.SUCCESS
    assert client.initialize("127.0.0.1") == adxl.SUCCESS
    return target, client, name


def test_write_read_notify(free_port):
    target, client, name = engines(free_port)
    tb, ta = buf(4096)
    src, sa = buf(4096, 7)
    back, ba = buf(4096)
    assert target.register_mem(adxl.MemDesc(ta, 4096), adxl.MEM_HOST)[0] == adxl.SUCCESS
    s, h = client.register_mem(adxl.MemDesc(sa, 4096), adxl.MEM_HOST)
    assert s == adxl.SUCCESS and h != 0
    assert client.register_mem(adxl.MemDesc(ba, 4096), adxl.MEM_HOST)[0] == adxl.SUCCESS
    assert client.transfer_sync(name, adxl.WRITE, [adxl.TransferOpDesc(sa, ta, 4096)]) == adxl.NOT_CONNECTED
    assert client.connect(name, 5000) == adxl.SUCCESS
    assert client.connect(name, 5000) == adxl.ALREADY_CONNECTED
    assert client.transfer_sync(name, adxl.WRITE, [adxl.TransferOpDesc(sa, ta, 4096)]) == adxl.SUCCESS
    assert bytes(tb) == bytes([7]) * 4096
    s, req = client.transfer_async(name, adxl.READ, [adxl.TransferOpDesc(ba, ta, 4096)])
    assert s == adxl.SUCCESS and req != 0
    assert wait_transfer(client, req, adxl.SUCCESS, adxl.TransferStatus.WAITING) == adxl.TransferStatus.COMPLETED
    assert bytes(back) == bytes(src)
    assert client.send_notify(name, adxl.NotifyDesc("py", "hello")) == adxl.SUCCESS
    s, notes = target.get_notifies()
    assert s == adxl.SUCCESS and [(n.name, n.notify_msg) for n in notes] == [("py", "hello")]
    assert client.transfer_sync(name, adxl.READ, [adxl.TransferOpDesc(ba, ta + 4096, 1)]) == adxl.PARAM_INVALID
    assert client.disconnect(name) == adxl.SUCCESS
    assert client.disconnect(name) == adxl.NOT_CONNECTED
    assert client.deregister_mem(h) == adxl.SUCCESS
    client.finalize()
    target.finalize()
    assert client.connect(name) == adxl.FAILED


def test_static_helpers():
    assert adxl.AdxlEngine.get_capability(adxl.FeatureType.AUTO_CONNECT) == (adxl.SUCCESS, 1)
    s, p = adxl.AdxlEngine.malloc_mem(adxl.MEM_HOST, 1 << 20)
    assert s == adxl.SUCCESS and p != 0
    assert adxl.AdxlEngine.free_mem(p) == adxl.SUCCESS
    assert adxl.AdxlEngine.malloc_mem(adxl.MEM_HOST, 0)[0] == adxl.PARAM_INVALID
    assert adxl.AdxlEngine().initialize("not-an-address") == adxl.PARAM_INVALID


def test_link_stats_and_prometheus(free_port):
    target, client, name = engines(free_port)
    tb, ta = buf(8192)
    src, sa = buf(8192, 3)
    assert target.register_mem(adxl.MemDesc(ta, 8192), adxl.MEM_HOST)[0] == adxl.SUCCESS
    assert client.register_mem(adxl.MemDesc(sa, 8192), adxl.MEM_HOST)[0] == adxl.SUCCESS
    s, st = client.get_link_stats(name)
    assert s == adxl.NOT_CONNECTED and st is None
    assert client.connect(name, 5000) == adxl.SUCCESS
    descs = [adxl.TransferOpDesc(sa, ta, 4096), adxl.TransferOpDesc(sa + 4096, ta + 4096, 4096)]
    for _ in range(2):
        assert client.transfer_sync(name, adxl.WRITE, descs) == adxl.SUCCESS
    assert client.transfer_sync(name, adxl.READ, descs[:1]) == adxl.SUCCESS
    s, st = client.get_link_stats(name)
    assert s == adxl.SUCCESS and st["linked"] and st["connects"] == 1
    assert (st["write"]["transfers"], st["write"]["descriptors"], st["write"]["bytes"]) == (2, 4, 16384)
    assert (st["read"]["transfers"], st["read"]["descriptors"], st["read"]["bytes"]) == (1, 1, 4096)
    lat = st["write"]["latency"]
    assert lat["count"] == 2 and 0 < lat["p50_ns"] <= lat["p99_ns"] <= lat["max_ns"]
    assert sum(lat["buckets"]) == 2
    assert st["wireup"]["count"] == 1 and st["tcp_connect"]["last_ns"] > 0
    assert client.disconnect(name, 1000) == adxl.SUCCESS
    s, peers, totals = client.get_all_link_stats()
    assert s == adxl.SUCCESS and [p["remote"] for p in peers] == [name] and not peers[0]["linked"]
    assert totals["write"]["bytes"] == 16384 and totals["read"]["bytes"] == 4096
    s, text = client.render_prometheus()
    assert s == adxl.SUCCESS
    assert f'adxl_bytes_total{{peer="{name}",op="write"}} 16384' in text.splitlines()
    assert 'adxl_engine_bytes_total{op="read"} 4096' in text.splitlines()
    client.finalize()
    target.finalize()
