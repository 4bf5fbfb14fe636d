"""Two processes of the Mooncake Transfer Engine's Ascend wheel
(mooncake-transfer-engine-npu, built against the vendor's stack, unchanged)
moving bytes through this project's libraries: P2PHANDSHAKE metadata, protocol
"ascend" (its ADXL transport: adxl::AdxlEngine in libcann_hixl.so, reached
through libllm_datadist.so).  The target registers host memory
(aclrtMallocHost), device memory (aclrtMalloc of the host ACL runtime) and
physical memory mapped into a reserved address range (aclrtMallocPhysical,
aclrtReserveMemAddress, aclrtMapMem: file-backed, so the engine maps it);
the initiator writes each with transfer_sync_write and reads them back with
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


class MemLocation(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32), ("type", ctypes.c_int)]


class PhysicalMemProp(ctypes.Structure):  # aclrtPhysicalMemProp
    _fields_ = [("handleType", ctypes.c_int), ("allocationType", ctypes.c_int), ("memAttr", ctypes.c_int),
                ("location", MemLocation), ("reserve", ctypes.c_uint64)]


KINDS = ("host", "device", "mapped")
SEEDS = (7, 9, 11)


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


def alloc(lib, kind):
    p = ctypes.c_void_p()
    if kind == "host":
        rc = lib.aclrtMallocHost(ctypes.byref(p), SIZE)
    elif kind == "device":
        rc = lib.aclrtMalloc(ctypes.byref(p), SIZE, 0)
    else:
        prop = PhysicalMemProp(0, 0, 4, MemLocation(0, 1), 0)  # ACL_HBM_MEM_HUGE on device 0
        gran = ctypes.c_size_t()
        rc = lib.aclrtMemGetAllocationGranularity(ctypes.byref(prop), 1, ctypes.byref(gran))
        size = max(SIZE, gran.value)
        handle = ctypes.c_void_p()
        rc = rc or lib.aclrtMallocPhysical(ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop),
                                           ctypes.c_uint64(0))
        rc = rc or lib.aclrtReserveMemAddress(ctypes.byref(p), ctypes.c_size_t(size), ctypes.c_size_t(0), None,
                                              ctypes.c_uint64(0))
        rc = rc or lib.aclrtMapMem(p, ctypes.c_size_t(size), ctypes.c_size_t(0), handle, ctypes.c_uint64(0))
    if rc != 0:
        sys.exit(f"FAILED: allocating {kind} memory returned {rc}")
    return p.value


def pattern(seed):
    return bytes(((i * 131 + seed) ^ (i >> 9)) & 0xFF for i in range(SIZE))


def target():
    lib = acl()
    lib.aclrtSetDevice(0)  # as a program on the vendor's stack does before its transfer engine
    te = engine()
    bufs = [alloc(lib, k) for k in KINDS]
    for b in bufs:
        ctypes.memset(b, 0, SIZE)
        if te.register_memory(b, SIZE) != 0:
            sys.exit("FAILED: target register_memory")
    print(f"READY 127.0.0.1:{te.get_rpc_port()} " + " ".join(str(b) for b in bufs), flush=True)
    sys.stdin.readline()  # the initiator's "check"
    for b, seed in zip(bufs, SEEDS):
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
        _, name, *addrs = line.split()
        remote = [int(a) for a in addrs]
        lib = acl()
        lib.aclrtSetDevice(0)
        te = engine()
        local = [alloc(lib, k) for k in KINDS]
        for b in local:
            if te.register_memory(b, SIZE) != 0:
                sys.exit("FAILED: initiator register_memory")
        for b, r, seed in zip(local, remote, SEEDS):
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
        rc = te.batch_transfer_sync_read(name, local, remote, [SIZE] * len(KINDS))
        if rc != 0:
            sys.exit(f"FAILED: batch_transfer_sync_read returned {rc}")
        for b, seed, what in zip(local, SEEDS, KINDS):
            if ctypes.string_at(b, SIZE) != pattern(seed):
                sys.exit(f"FAILED: batch_transfer_sync_read of {what} memory: bytes differ")
        print("mooncake wheel: transfer_sync_write and batch_transfer_sync_read of host, device and mapped "
              f"physical memory: {2 * len(KINDS) * SIZE} bytes checked")
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
