"""Test double of the few torch calls the vendor samples make (NOT torch): tensors of float32, float16 and uint8
(`ones`, `full`, `zeros`, `rand`), `.npu()`, `.cpu()`, `.data_ptr()`, `.fill_()`, `.numpy().tobytes()`,
`equal`, `npu.set_device`, `distributed.init_process_group` / `barrier`, and torchair's `create_npu_tensors`.

Where the memory lives is the test's choice (`use_device`): with the ACL host runtime of this build
(`emulation/acl`, loaded by `acl_emulation()` in test_serving_flows.py), an `.npu()` tensor is `aclrtMalloc`
memory of that runtime, written and read back with `aclrtMemcpy`, as torch_npu's would be on an NPU; without it
(the host variant of a test) an `.npu()` tensor is another host buffer. Host tensors are ctypes buffers.
`distributed.barrier()` waits on a multiprocessing barrier the test hands both processes (`set_barrier`)."""
import builtins
import ctypes
import random
import struct

H2D, D2H = 1, 2  # ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST

_acl = None


def use_device(acl):
    """acl: the loaded ACL host runtime (ctypes.CDLL) for `.npu()` tensors in its device memory; None: host."""
    global _acl
    _acl = acl


class _DType:
    def __init__(self, name, size, fmt):
        self.name, self.size, self.fmt = name, size, fmt

    def encode(self, v):
        return struct.pack("<" + self.fmt, int(v) if self.fmt == "B" else builtins.float(v))

    def __repr__(self):
        return f"fake_torch.{self.name}"


float32 = float = _DType("float32", 4, "f")
float16 = _DType("float16", 2, "e")
uint8 = _DType("uint8", 1, "B")


def _shape(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


class Tensor:
    """A contiguous tensor; `device` is "cpu" or "npu".  `_view_of` keeps memory this tensor does not own
    (create_npu_tensors) from being read as owned."""

    def __init__(self, shape, dtype, device="cpu", addr=None):
        self.shape, self.dtype, self.device = tuple(shape), dtype, device
        n = 1
        for d in self.shape:
            n *= d
        self.nbytes = n * dtype.size
        self._buf = None
        if addr is not None:
            self._addr = addr
        elif device == "npu" and _acl is not None:
            p = ctypes.c_void_p()
            assert _acl.aclrtMalloc(ctypes.byref(p), ctypes.c_size_t(self.nbytes), 0) == 0
            self._addr = p.value
        else:
            self._buf = (ctypes.c_char * self.nbytes)()
            self._addr = ctypes.addressof(self._buf)

    def _on_device(self):
        return self.device == "npu" and _acl is not None

    def data_ptr(self):
        return self._addr

    def tobytes(self):
        if self._on_device():
            host = (ctypes.c_char * self.nbytes)()
            assert _acl.aclrtMemcpy(ctypes.c_void_p(ctypes.addressof(host)), ctypes.c_size_t(self.nbytes),
                                    ctypes.c_void_p(self._addr),
                                    ctypes.c_size_t(self.nbytes), D2H) == 0
            return host.raw
        return ctypes.string_at(self._addr, self.nbytes)

    def _write(self, data):
        assert len(data) == self.nbytes
        if self._on_device():
            src = ctypes.create_string_buffer(data, self.nbytes)
            assert _acl.aclrtMemcpy(ctypes.c_void_p(self._addr), ctypes.c_size_t(self.nbytes),
                                    ctypes.c_void_p(ctypes.addressof(src)), ctypes.c_size_t(self.nbytes), H2D) == 0
        else:
            ctypes.memmove(self._addr, data, self.nbytes)

    def fill_(self, v):
        self._write(self.dtype.encode(v) * (self.nbytes // self.dtype.size))
        return self

    def npu(self):
        t = Tensor(self.shape, self.dtype, "npu")
        t._write(self.tobytes())
        return t

    def cpu(self):
        t = Tensor(self.shape, self.dtype, "cpu")
        t._write(self.tobytes())
        return t

    def numpy(self):
        return self.cpu()  # only .tobytes() of it is used

    def __repr__(self):
        return f"fake_torch.Tensor(shape={self.shape}, dtype={self.dtype}, device={self.device})"


def _make(shape, dtype, device, value):
    t = Tensor(shape, dtype, "npu" if device == "npu" else "cpu")
    if value is not None:
        t.fill_(value)
    return t


def ones(*size, dtype=float32, device="cpu"):
    return _make(_shape(size), dtype, device, 1)


def zeros(*size, dtype=float32, device="cpu"):
    return _make(_shape(size), dtype, device, 0)


def full(size, fill_value, dtype=float32, device="cpu"):
    return _make(_shape((size,)), dtype, device, fill_value)


def rand(size=None, dtype=float32, device="cpu"):
    t = _make(_shape((size,)), dtype, device, None)
    rng = random.Random(0x5eed)
    t._write(b"".join(dtype.encode(rng.random()) for _ in range(t.nbytes // dtype.size)))
    return t


def equal(a, b):
    return a.shape == b.shape and a.tobytes() == b.tobytes()


class npu:  # noqa: N801 - torch.npu
    @staticmethod
    def set_device(device_id):
        if _acl is not None:
            assert _acl.aclrtSetDevice(int(device_id)) == 0


class distributed:  # noqa: N801 - torch.distributed, the gloo process group of the samples
    _barrier = None
    rank = None

    @classmethod
    def set_barrier(cls, barrier):
        cls._barrier = barrier

    @classmethod
    def init_process_group(cls, backend="gloo", rank=0, world_size=2, timeout=None):
        assert cls._barrier is not None and world_size == 2, "the test hands both processes one barrier"
        cls.rank = rank

    @classmethod
    def barrier(cls):
        cls._barrier.wait(timeout=60)


class torchair_llm_datadist:  # noqa: N801 - torchair.llm_datadist
    @staticmethod
    def create_npu_tensors(shape, dtype, addrs):
        """Tensors over memory the cache layer allocated (not owned by them).  allocate_cache's memory is host
        memory here (no device pool), so they are host tensors."""
        return [Tensor(shape, dtype, "cpu", addr=a) for a in addrs]
