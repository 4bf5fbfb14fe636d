"""The two roles of the vendor's hixl/hixl_d2rd_multiproc_sample.py, call for call: the server fills 8 MiB with
0xAA, registers it, and hands its address to the client over a side socket (engine port + 1000); the client
registers 8 MiB of zeros, connects, READs the server's buffer in 512 descriptors of 16 KiB, checks every byte,
disconnects, closes the socket; both deregister and finalize.  Options: OPTION_AUTO_CONNECT "1" and the
sample's OPTION_GLOBAL_RESOURCE_CONFIG (protocol "roce:device").  The host variant registers MEM_HOST."""
import json
import socket
import struct
import time

import fake_torch as torch
from conftest import free_tcp_port
from vendor_replay import PLACEMENT

import hixl
from llm_datadist import Placement

BUF_SIZE = 8 * 1024 * 1024
BLOCK_SIZE = 16 * 1024
FILL_VALUE = 0xAA
SOCKET_PORT_OFFSET = 1000


def engine_pair():
    """Two engine addresses whose ports and ports + 1000 are free now."""
    def one():
        while True:
            p = free_tcp_port()
            if p + SOCKET_PORT_OFFSET < 65536:
                with socket.socket() as s:
                    try:
                        s.bind(("127.0.0.1", p + SOCKET_PORT_OFFSET))
                        return f"127.0.0.1:{p}"
                    except OSError:
                        continue
    return one(), one()


def _options():
    return {hixl.OPTION_AUTO_CONNECT: "1",
            hixl.OPTION_GLOBAL_RESOURCE_CONFIG: json.dumps({"comm_resource_config.protocol_desc": ["roce:device"]})}


def _mem_type():
    return hixl.MemType.MEM_DEVICE if PLACEMENT[0] == Placement.DEVICE else hixl.MemType.MEM_HOST


def _device():
    return "npu" if PLACEMENT[0] == Placement.DEVICE else "cpu"


def run_server(local_engine, remote_engine):
    torch.npu.set_device(2)
    engine = hixl.Hixl()
    handle = None
    try:
        assert engine.initialize(local_engine, _options()) == hixl.SUCCESS
        buf = torch.full((BUF_SIZE,), FILL_VALUE, dtype=torch.uint8, device=_device())
        ret, handle = engine.register_mem(hixl.MemDesc(buf.data_ptr(), BUF_SIZE), _mem_type())
        assert ret == hixl.SUCCESS, ret
        port = int(local_engine.rsplit(":", 1)[1]) + SOCKET_PORT_OFFSET
        with socket.socket() as srv:
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            srv.bind(("0.0.0.0", port))
            srv.listen(1)
            srv.settimeout(120)
            conn, _ = srv.accept()
            with conn:
                conn.sendall(struct.pack("!Q", buf.data_ptr()))
                conn.settimeout(5)
                while conn.recv(64):  # until the client closes
                    pass
    finally:
        if handle is not None:
            assert engine.deregister_mem(handle) == hixl.SUCCESS
        engine.finalize()


def run_client(local_engine, remote_engine):
    torch.npu.set_device(0)
    engine = hixl.Hixl()
    handle, sock, connected = None, None, False
    try:
        assert engine.initialize(local_engine, _options()) == hixl.SUCCESS
        buf = torch.zeros(BUF_SIZE, dtype=torch.uint8, device=_device())
        ret, handle = engine.register_mem(hixl.MemDesc(buf.data_ptr(), BUF_SIZE), _mem_type())
        assert ret == hixl.SUCCESS, ret
        ip, port = remote_engine.rsplit(":", 1)
        for _ in range(10):  # the sample's retries
            try:
                sock = socket.create_connection((ip, int(port) + SOCKET_PORT_OFFSET), timeout=2)
                data = b""
                while len(data) < 8:
                    chunk = sock.recv(8 - len(data))
                    assert chunk
                    data += chunk
                break
            except OSError:
                if sock:
                    sock.close()
                    sock = None
                time.sleep(0.5)
        remote_addr = struct.unpack("!Q", data)[0]
        assert engine.connect(remote_engine, timeout_in_millis=5000) == hixl.SUCCESS
        connected = True
        descs = [hixl.TransferOpDesc(local_addr=buf.data_ptr() + i * BLOCK_SIZE,
                                     remote_addr=remote_addr + i * BLOCK_SIZE, len=BLOCK_SIZE)
                 for i in range(BUF_SIZE // BLOCK_SIZE)]
        ret = engine.transfer_sync(remote_engine, hixl.TransferOp.READ, descs, timeout_in_millis=30000)
        assert ret == hixl.SUCCESS, ret
        assert buf.cpu().numpy().tobytes() == bytes([FILL_VALUE]) * BUF_SIZE
    finally:
        if connected:
            assert engine.disconnect(remote_engine, timeout_in_millis=5000) == hixl.SUCCESS
        if sock is not None:
            sock.close()
        if handle is not None:
            assert engine.deregister_mem(handle) == hixl.SUCCESS
        engine.finalize()
