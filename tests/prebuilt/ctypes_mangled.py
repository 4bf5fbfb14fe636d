"""A binding that reaches the vendor's C++ API by mangled name with ctypes, as
some Python bindings of HIXL do (no compiled glue): ge::AscendString from
libmetadef.so, hixl::Hixl from libcann_hixl.so, the objects in buffers of the
vendor's sizes.  Checks that the names resolve in the libraries of the
vendor's names and that the calls behave: GetString / GetLength / operator<
of a string made by the (const char *, size_t) constructor; a Hixl
constructed, GetCapability, Connect before Initialize (FAILED), Finalize,
destroyed.

Usage: python ctypes_mangled.py <lib-dir>
"""
import ctypes
import os
import sys

libdir = sys.argv[1]
metadef = ctypes.CDLL(os.path.join(libdir, "libmetadef.so"))
hixl = ctypes.CDLL(os.path.join(libdir, "libcann_hixl.so"))
P = ctypes.c_void_p


def fn(lib, name, restype, *argtypes):
    f = getattr(lib, name)  # AttributeError: the name is not exported
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


str_ctor = fn(metadef, "_ZN2ge12AscendStringC1EPKcm", None, P, ctypes.c_char_p, ctypes.c_size_t)
get_string = fn(metadef, "_ZNK2ge12AscendString9GetStringEv", ctypes.c_char_p, P)
get_length = fn(metadef, "_ZNK2ge12AscendString9GetLengthEv", ctypes.c_size_t, P)
less = fn(metadef, "_ZNK2ge12AscendStringltERKS0_", ctypes.c_bool, P, P)

hixl_ctor = fn(hixl, "_ZN4hixl4HixlC1Ev", None, P)
hixl_dtor = fn(hixl, "_ZN4hixl4HixlD1Ev", None, P)
finalize = fn(hixl, "_ZN4hixl4Hixl8FinalizeEv", None, P)
connect = fn(hixl, "_ZN4hixl4Hixl7ConnectERKN2ge12AscendStringEi", ctypes.c_uint32, P, P, ctypes.c_int32)
capability = fn(hixl, "_ZN4hixl4Hixl13GetCapabilityENS_11FeatureTypeERi", ctypes.c_uint32, ctypes.c_int32,
                ctypes.POINTER(ctypes.c_int32))

# The vendor's sizes: ge::AscendString 16 bytes (a std::shared_ptr<std::string>), hixl::Hixl 8.
a = ctypes.create_string_buffer(16)
b = ctypes.create_string_buffer(16)
str_ctor(a, b"127.0.0.1:26000\0junk", 15)
str_ctor(b, b"127.0.0.2", 9)
failures = []
if get_string(a) != b"127.0.0.1:26000" or get_length(a) != 15:
    failures.append(f"AscendString: {get_string(a)!r} length {get_length(a)}")
if not less(a, b) or less(b, a):
    failures.append("AscendString operator<")

engine = ctypes.create_string_buffer(8)
hixl_ctor(engine)
value = ctypes.c_int32(-1)
if capability(0, ctypes.byref(value)) != 0 or value.value != 1:  # AUTO_CONNECT is supported
    failures.append(f"GetCapability(AUTO_CONNECT): value {value.value}")
if connect(engine, a, 100) != 503900:  # FAILED before Initialize
    failures.append("Connect before Initialize is not FAILED")
finalize(engine)
hixl_dtor(engine)
# (~AscendString is inline in the vendor's header, so not exported: the two
# strings' shared_ptrs are left, as such a binding leaves them.)
if failures:
    print("FAILED: " + "; ".join(failures))
    sys.exit(1)
print("ctypes by mangled name: ge::AscendString (libmetadef.so) and hixl::Hixl (libcann_hixl.so) ok")
