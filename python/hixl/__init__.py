"""HIXL engine: Python bindings of include/hixl/hixl.h (names of the reference `hixl` package).

    import hixl
    engine = hixl.Hixl()
    engine.initialize("10.0.0.1:16000", {hixl.OPTION_BUFFER_POOL: "0:0"})
    ret, handle = engine.register_mem(hixl.MemDesc(addr, size), hixl.MemType.MEM_HOST)
    ret = engine.connect("10.0.0.2:16000", timeout_in_millis=5000)
    ret, req = engine.transfer_async("10.0.0.2:16000", hixl.TransferOp.WRITE,
                                     [hixl.TransferOpDesc(addr, remote_addr, size)],
                                     args=hixl.TransferArgs(user_data=7))
    ret, results = engine.get_all_transfer_status(hixl.GetTransferStatusArgs(skip_waiting=True))

Methods return the C++ status (hixl.SUCCESS, hixl.PARAM_INVALID, ...); calls
with an out-parameter return (status, value).  Handles, requests and
user_data are integers.  Every call releases the GIL.  The statuses are the
engine's one table (shared with the adxl package); hixl.Status is an IntEnum
of them.
"""
import enum

from ._hixl import *  # noqa: F401,F403
from ._hixl import status_table as _status_table
from ._hixl import (AsyncConnectStatus, FeatureType, GetTransferStatusArgs, Hixl, MemDesc, MemType,  # noqa: F401
                    NotifyDesc, TransferArgs, TransferOp, TransferOpDesc, TransferResult, TransferStatus,
                    get_capability, status_name)

Status = enum.IntEnum("Status", [(name, value) for name, value, _ in _status_table()], module=__name__)
Status.__doc__ = "HIXL statuses (include/hixl/hixl_types.h = include/adxl/adxl_types.h), from the C++ status table."
