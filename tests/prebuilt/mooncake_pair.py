"""Two processes of the Mooncake Transfer Engine's Ascend wheel
(mooncake-transfer-engine-npu, built against the vendor's stack, unchanged)
moving bytes through this project's libraries: P2PHANDSHAKE metadata, protocol
"ascend" (its ADXL transport: adxl::AdxlEngine in libcann_hixl.so, reached
through libllm_datadist.so).  The target registers host memory
(aclrtMallocHost) and device memory (aclrtMalloc of the host ACL runtime);
the initiator writes both with transfer_sync_write and reads them back with
batch_transfer_sync_read, every byte checked.

Run by run_mooncake_wheel.sh (which sets LD_LIBRARY_PATH and nothing else).
Usage: python mooncake_pair.py            (the initiator; starts the target)
"""
import ctypes
import os
import subprocess
import sys
import time

SIZE = 1 << 20


def acl():
    # The ACL runtime the wheel itself loads (its NEEDED libascendcl.so):
    # already in the process once mooncake.engine is imported.
    lib = ctypes.CDLL("libascendcl.so")
    lib.aclrtSetDevice.argtypes = [ctypes.c_int32]
    lib.aclrtMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_int]
    lib.aclrtMallocHost.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    return lib


def engine():
    from mooncake.engine import TransferEngine  # noqa: the import under test
    te = TransferEngine()
    rc = te.initialize("127.0.0.1", "P2PHANDSHAKE", "ascend", "")
    if rc != 0:
        sys.exit(f"FAILED: TransferEngine.initialize returned {rc}")
    return te


def alloc(lib, device):
    p = ctypes.c_void_p()
    rc = lib.aclrtMalloc(ctypes.byref(p), SIZE, 0) if device else lib.aclrtMallocHost(ctypes.byref(p), SIZE)
    if rc != 0:
        sys.exit(f"FAILED: {'aclrtMalloc' if device else 'aclrtMallocHost'} returned {rc}")
    return p.value


def pattern(seed):
    return bytes(((i * 131 + seed) ^ (i >> 9)) & 0xFF for i in range(SIZE))


def target():
    lib = acl()
    lib.aclrtSetDevice(0)  # as a program on the vendor's stack does before its transfer engine
    te = engine()
    bufs = [alloc(lib, False), alloc(lib, True)]
    for b in bufs:
        ctypes.memset(b, 0, SIZE)
        if te.register_memory(b, SIZE) != 0:
            sys.exit("FAILED: target register_memory")
    print(f"READY 127.0.0.1:{te.get_rpc_port()} {bufs[0]} {bufs[1]}", flush=True)
    sys.stdin.readline()  # the initiator's "check"
    for b, seed in zip(bufs, (7, 9)):
        if ctypes.string_at(b, SIZE) != pattern(seed):
            print("BAD", flush=True)
            return 1
    print("GOOD", flush=True)
    sys.stdin.readline()  # "exit"
    return 0


def initiator():
    peer = subprocess.Popen([sys.executable, __file__, "target"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        line = ""
        while not line.startswith("READY"):
            line = peer.stdout.readline()
            if not line:
                sys.exit("FAILED: the target process ended before it was ready")
        _, name, host_addr, dev_addr = line.split()
        remote = [int(host_addr), int(dev_addr)]
        lib = acl()
        lib.aclrtSetDevice(0)
        te = engine()
        local = [alloc(lib, False), alloc(lib, True)]
        for b in local:
            if te.register_memory(b, SIZE) != 0:
                sys.exit("FAILED: initiator register_memory")
        for b, r, seed in zip(local, remote, (7, 9)):
            ctypes.memmove(b, pattern(seed), SIZE)
            rc = te.transfer_sync_write(name, b, r, SIZE)
            if rc != 0:
                sys.exit(f"FAILED: transfer_sync_write to {r:#x} returned {rc}")
        peer.stdin.write("check\n")
        peer.stdin.flush()
        verdict = peer.stdout.readline().strip()
        if verdict != "GOOD":
            sys.exit(f"FAILED: the target's memory after transfer_sync_write: {verdict}")
        for b in local:
            ctypes.memset(b, 0, SIZE)
        rc = te.batch_transfer_sync_read(name, local, remote, [SIZE, SIZE])
        if rc != 0:
            sys.exit(f"FAILED: batch_transfer_sync_read returned {rc}")
        for b, seed, what in zip(local, (7, 9), ("host", "device")):
            if ctypes.string_at(b, SIZE) != pattern(seed):
                sys.exit(f"FAILED: batch_transfer_sync_read of {what} memory: bytes differ")
        print("mooncake wheel: transfer_sync_write and batch_transfer_sync_read of host and device memory: "
              f"{4 * SIZE} bytes checked")
        return 0
    finally:
        try:
            peer.stdin.write("exit\n")
            peer.stdin.flush()
        except OSError:
            pass
        try:
            peer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            peer.kill()


if __name__ == "__main__":
    sys.exit(target() if sys.argv[1:] == ["target"] else initiator())
