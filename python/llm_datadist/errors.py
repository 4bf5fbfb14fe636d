"""Statuses and exceptions of the package, and the check that turns a native
status into one (docs/contract.md §10)."""
import enum

from . import _native
from .status_codes import status_members as _status_members
from .vendor_types import make_status as _make_status


# Built from the C++ status table (ext::StatusTable, include/llm_datadist/llm_datadist_ext.h; the
# vendor's values): _status_members() (llm_datadist/status_codes.py) gives
# the vendor Python package's names first, so they are the canonical names.
LLMStatusCode = enum.IntEnum("LLMStatusCode", _status_members(_native.status_table()), module="llm_datadist")
Status = _make_status(LLMStatusCode)
LLMStatusCode.__doc__ = "LLM-DataDist statuses (the vendor's names), from the C++ status table."


class LLMException(RuntimeError):
    """A failed call; status_code says why."""

    def __init__(self, message, status_code=None):
        super().__init__(message)
        self.status_code = LLMStatusCode.LLM_FAILED if status_code is None else status_code


class _ParamInvalid(LLMException, ValueError):
    """A wrong value: a ValueError, and the reference's LLMException(LLM_PARAM_INVALID)."""

    def __init__(self, message, logged=False):
        # As the vendor's raise_if_false: the refusal is logged as it is raised, one ERROR line naming what was
        # wrong; `logged` when the C++ layer refused the call and wrote that line already.
        super().__init__(message, LLMStatusCode.LLM_PARAM_INVALID)
        if not logged:
            _native.log_refusal(message)


def _code(status):
    # As the vendor's code_2_status: a value outside the table is LLM_FAILED.
    try:
        return LLMStatusCode(status)
    except ValueError:
        return LLMStatusCode.LLM_FAILED


def _check(status, what):
    if status == 0:
        return
    if status == LLMStatusCode.LLM_PARAM_INVALID:
        raise _ParamInvalid(f"{what}: invalid argument (see the llm_datadist ERROR line on stderr)", logged=True)
    raise LLMException(f"{what} failed: {_native.status_name(status)}", _code(status))
