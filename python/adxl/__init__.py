"""ADXL transfer engine: Python bindings of include/adxl/adxl_engine.h.

Methods return the C++ status (adxl.SUCCESS, adxl.PARAM_INVALID, ...);
calls with an out-parameter return (status, value).  Memory handles and
transfer requests are opaque integers.
"""
from ._adxl import *  # noqa: F401,F403
from ._adxl import AdxlEngine, MemDesc, MemType, NotifyDesc, TransferOp, TransferOpDesc, TransferStatus  # noqa: F401
