"""ADXL transfer engine: Python bindings of include/adxl/adxl_engine.h.

Methods return the C++ status (adxl.SUCCESS, adxl.PARAM_INVALID, ...);
calls with an out-parameter return (status, value).  Memory handles and
transfer requests are opaque integers.  The statuses come from the C++
status table (status_table()); adxl.Status is an IntEnum of them.
"""
import enum

from ._adxl import *  # noqa: F401,F403
from ._adxl import status_table as _status_table
from ._adxl import AdxlEngine, MemDesc, MemType, NotifyDesc, TransferOp, TransferOpDesc, TransferStatus  # noqa: F401

Status = enum.IntEnum("Status", [(name, value) for name, value, _ in _status_table()], module=__name__)
Status.__doc__ = "ADXL statuses (include/adxl/adxl_types.h), built from the C++ status table."
