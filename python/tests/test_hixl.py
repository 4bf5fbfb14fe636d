"""hixl package: two engines in two processes move data both ways and check it
(byte pattern differs per byte and per buffer), async requests with
user_data, async connect, notifies, statuses and names."""
import ctypes

from conftest import peer_process, wait_transfer

import hixl

SIZE = 1 << 16


def pattern(seed, n=SIZE):
    return bytes((i * 7 + seed * 31 + (i >> 8)) % 251 for i in range(n))


def server(port, q, done):
    # The target: registers a buffer filled with pattern(1), reports its address,
    # waits for the client's WRITE + notify, then checks and reports.
    e = hixl.Hixl()
    assert e.initialize(f"127.0.0.1:{port}", {hixl.OPTION_BUFFER_POOL: "0:0"}) == hixl.SUCCESS
    buf = ctypes.create_string_buffer(pattern(1), 2 * SIZE)
    s, h = e.register_mem(hixl.MemDesc(ctypes.addressof(buf), 2 * SIZE), hixl.MemType.MEM_HOST)
    assert s == hixl.SUCCESS and h != 0
    q.put(ctypes.addressof(buf))
    notes = []
    for _ in range(500):
        s, got = e.get_notifies()
        notes += [(n.name, n.notify_msg) for n in got]
        if notes:
            break
        done.wait(0.01)
    q.put((notes, bytes(buf.raw[SIZE:2 * SIZE]) == pattern(2)))
    done.wait(30)
    e.finalize()


def test_two_processes(free_port):
    with peer_process(server, free_port) as (q, done):
        remote_addr = q.get(timeout=30)
        name = f"127.0.0.1:{free_port}"
        e = hixl.Hixl()
        assert e.initialize("127.0.0.1") == hixl.SUCCESS
        local = ctypes.create_string_buffer(2 * SIZE)
        la = ctypes.addressof(local)
        ctypes.memmove(la + SIZE, pattern(2), SIZE)
        s, h = e.register_mem(hixl.MemDesc(addr=la, len=2 * SIZE), hixl.MemType.MEM_HOST)
        assert s == hixl.SUCCESS
        assert e.transfer_sync(name, hixl.TransferOp.READ, [hixl.TransferOpDesc(la, remote_addr, SIZE)]) \
            == hixl.NOT_CONNECTED
        assert e.connect_async(name, timeout_in_millis=5000) == hixl.SUCCESS
        for _ in range(500):
            s, st = e.get_async_connect_status(name)
            assert s == hixl.SUCCESS
            if st not in (hixl.AsyncConnectStatus.CONNECT_PENDING, hixl.AsyncConnectStatus.CONNECTING):
                break
            done.wait(0.01)
        assert st == hixl.AsyncConnectStatus.CONNECTED
        s, all_st = e.get_all_async_connect_status()
        assert s == hixl.SUCCESS and all_st == {name: hixl.AsyncConnectStatus.CONNECTED}
        # READ the server's pattern(1) in two halves, the second half async.
        half = SIZE // 2
        assert e.transfer_sync(name, hixl.TransferOp.READ, [hixl.TransferOpDesc(la, remote_addr, half)],
                               timeout_in_millis=5000) == hixl.SUCCESS
        s, req = e.transfer_async(name, hixl.TransferOp.READ,
                                  [hixl.TransferOpDesc(la + half, remote_addr + half, half)],
                                  args=hixl.TransferArgs(user_data=0xABC))
        assert s == hixl.SUCCESS and req != 0
        results = []
        for _ in range(1000):
            s, rs = e.get_all_transfer_status(hixl.GetTransferStatusArgs(skip_waiting=True))
            assert s == hixl.SUCCESS
            results += rs
            if results:
                break
            done.wait(0.005)
        assert [(r.req, r.user_data, r.status) for r in results] == [(req, 0xABC, hixl.TransferStatus.COMPLETED)]
        assert local.raw[:SIZE] == pattern(1)
        # WRITE pattern(2) into the server's second half, async with get_transfer_status.
        s, req = e.transfer_async(name, hixl.TransferOp.WRITE,
                                  [hixl.TransferOpDesc(la + SIZE, remote_addr + SIZE, SIZE)])
        assert s == hixl.SUCCESS
        assert wait_transfer(e, req, hixl.SUCCESS, hixl.TransferStatus.WAITING) == hixl.TransferStatus.COMPLETED
        assert e.send_notify(name, hixl.NotifyDesc(name="kv", notify_msg="written")) == hixl.SUCCESS
        notes, ok = q.get(timeout=30)
        assert notes == [("kv", "written")] and ok
        assert e.disconnect(name) == hixl.SUCCESS
        assert e.deregister_mem(h) == hixl.SUCCESS
        e.finalize()


def test_names_and_defaults():
    assert hixl.get_capability(hixl.FeatureType.AUTO_CONNECT) == (hixl.SUCCESS, hixl.FEATURE_SUPPORTED)
    assert hixl.Hixl.get_capability(hixl.FeatureType.AUTO_CONNECT)[0] == hixl.SUCCESS
    assert hixl.OPTION_BUFFER_POOL == "BufferPool" and hixl.OPTION_AUTO_CONNECT == "AutoConnect"
    assert hixl.OPTION_GLOBAL_RESOURCE_CONFIG == "GlobalResourceConfig"
    assert hixl.OPTION_ENABLE_USE_FABRIC_MEM == "EnableUseFabricMem"
    assert hixl.OPTION_LOCAL_COMM_RES == "LocalCommRes"
    a = hixl.GetTransferStatusArgs()
    assert a.max_query_count == 2 ** 32 - 1 and a.skip_waiting is False
    assert hixl.TransferArgs().user_data == 0
    assert hixl.Status.PARAM_INVALID == hixl.PARAM_INVALID == 103900
    assert hixl.MEM_HOST == hixl.MemType.MEM_HOST and hixl.READ == hixl.TransferOp.READ
    e = hixl.Hixl()
    assert e.connect("127.0.0.1:1") == hixl.FAILED  # not initialized
    assert e.initialize("not-an-address") == hixl.PARAM_INVALID
    assert e.get_all_transfer_status() == (hixl.FAILED, [])


def test_coexists_with_adxl():
    import adxl
    assert adxl.MEM_HOST.value == hixl.MEM_HOST.value
    assert adxl.AdxlEngine.get_capability(adxl.FeatureType.AUTO_CONNECT) == (adxl.SUCCESS, 1)


def _max_stall_during(call):
    """Runs call() on a thread while this thread counts; returns (how long
    call took, the longest this thread could not run meanwhile).  A binding
    that held the GIL across a blocking call would stall this thread for the
    whole call."""
    import threading
    import time
    span = {}

    def worker():
        span["start"] = time.monotonic()
        span["result"] = call()
        span["end"] = time.monotonic()

    t = threading.Thread(target=worker)
    ticks = []
    t.start()
    while t.is_alive():
        ticks.append(time.monotonic())
        time.sleep(0.001)
    t.join()
    start, end = span["start"], span["end"]
    points = [start] + [x for x in ticks if start < x < end] + [end]
    worst = max(b - a for a, b in zip(points, points[1:]))
    return end - start, worst, span["result"]


def test_blocking_calls_release_the_gil():
    # A listener that never accepts: the kernel completes the TCP handshake
    # (backlog), the engine's Hello is never answered, so connect blocks
    # until its timeout.  Meanwhile other Python threads must run.
    import socket
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    import adxl
    try:
        for module, engine in ((hixl, hixl.Hixl()), (adxl, adxl.AdxlEngine())):
            assert engine.initialize("127.0.0.1") == module.SUCCESS
            took, stall, status = _max_stall_during(
                lambda: engine.connect(f"127.0.0.1:{port}", timeout_in_millis=800))
            assert status != module.SUCCESS
            assert took >= 0.5, f"{module.__name__} connect returned after {took:.3f} s: nothing was proven"
            assert stall < 0.2, \
                f"another Python thread could not run for {stall:.3f} s during {module.__name__} connect"
            engine.finalize()
    finally:
        silent.close()
