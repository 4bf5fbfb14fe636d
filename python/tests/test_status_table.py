"""Statuses: the Python names and values are the C++ status tables'
(include/adxl/adxl_types.h, src/llm_datadist/cache_types.h), as the native
modules report them; the llm_datadist ones are the vendor's names and values."""
import adxl
import llm_datadist
from adxl import _adxl
from llm_datadist import LLMStatusCode, _native


def test_adxl_statuses_are_the_cpp_table():
    table = _adxl.status_table()
    assert len(table) == 9
    assert {m.name for m in adxl.Status} == {name for name, _, _ in table}
    for name, value, description in table:
        assert description
        assert getattr(adxl, name) == value
        assert adxl.Status[name] == value
        assert adxl.status_name(value) == name  # C++ StatusName
        assert adxl.Status(value).name == name
    assert adxl.status_name(1) == "UNKNOWN"


def test_adxl_vendor_values():
    assert dict((n, v) for n, v, _ in _adxl.status_table()) == {
        "SUCCESS": 0, "PARAM_INVALID": 103900, "TIMEOUT": 103901, "NOT_CONNECTED": 103902,
        "ALREADY_CONNECTED": 103903, "NOTIFY_FAILED": 103904, "UNSUPPORTED": 103905, "FAILED": 503900,
        "RESOURCE_EXHAUSTED": 203900}


# The vendor's values (its llm_error_codes.h / llm_datadist.h, and the two ACL
# runtime codes its Python package adds), under the vendor Python package's names.
VENDOR_PYTHON_CODES = {
    "LLM_SUCCESS": 0, "LLM_FAILED": 0xFFFFFFFF, "LLM_PARAM_INVALID": 0x5010B005,
    "LLM_WAIT_PROCESS_TIMEOUT": 0x5010B001, "LLM_KV_CACHE_NOT_EXIST": 0x5010B002,
    "LLM_REPEAT_REQUEST": 0x5010B003, "LLM_REQUEST_ALREADY_COMPLETED": 0x5010B004,
    "LLM_ENGINE_FINALIZED": 0x5010B006, "LLM_NOT_YET_LINK": 0x5010B007, "LLM_ALREADY_LINK": 0x5010B008,
    "LLM_LINK_FAILED": 0x5010B009, "LLM_UNLINK_FAILED": 0x5010B00A, "LLM_NOTIFY_PROMPT_UNLINK_FAILED": 0x5010B00B,
    "LLM_CLUSTER_NUM_EXCEED_LIMIT": 0x5010B00C, "LLM_PROCESSING_LINK": 0x5010B00D,
    "LLM_DEVICE_OUT_OF_MEMORY": 0x5010B00E, "LLM_PREFIX_ALREADY_EXIST": 0x5010B00F,
    "LLM_PREFIX_NOT_EXIST": 0x5010B010, "LLM_SEQ_LENOVERLIMIT": 0x5010B011, "LLM_NO_FREE_BLOCK": 0x5010B012,
    "LLM_BLOCKS_OUT_OF_MEMORY": 0x5010B013, "LLM_EXIST_LINK": 0x5010B018, "LLM_FEATURE_NOT_ENABLED": 0x5010B019,
    "LLM_TIMEOUT": 0x5010B01A, "LLM_LINK_BUSY": 0x5010B01B, "LLM_OUT_OF_MEMORY": 0x5010B01C,
    "LLM_DEVICE_MEM_ERROR": 507053, "LLM_SUSPECT_REMOTE_ERROR": 507057, "LLM_UNKNOWN_ERROR": -1,
}


def test_llm_vendor_python_names_and_values():
    for name, value in VENDOR_PYTHON_CODES.items():
        assert LLMStatusCode[name] == value, name
        # The vendor package's spelling is the canonical name of its value.
        assert LLMStatusCode(value).name == name


def test_llm_statuses_are_the_cpp_table():
    table = _native.status_table()
    for name, value, description in table:
        assert description
        assert LLMStatusCode[name] == value
        if name not in ("LLM_WAIT_PROC_TIMEOUT", "LLM_SEQ_LEN_OVER_LIMIT"):
            assert LLMStatusCode(value).name == _native.status_name(value)
    # The C++ names beside the Python spellings.
    assert LLMStatusCode.LLM_WAIT_PROC_TIMEOUT is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT
    assert LLMStatusCode.LLM_SEQ_LEN_OVER_LIMIT is LLMStatusCode.LLM_SEQ_LENOVERLIMIT
    assert set(LLMStatusCode.__members__) == (
        {name for name, _, _ in table} | set(VENDOR_PYTHON_CODES) | {"LLM_UNKNOWN"})
    assert _native.status_name(0x5010B0FF) == "LLM_UNKNOWN_ERROR"


def test_llm_earlier_names_are_aliases():
    assert LLMStatusCode.LLM_OUT_OF_MEMORY is LLMStatusCode.LLM_RESOURCE_EXHAUSTED
    assert LLMStatusCode.LLM_FEATURE_NOT_ENABLED is LLMStatusCode.LLM_UNSUPPORTED
    assert LLMStatusCode.LLM_UNKNOWN is LLMStatusCode.LLM_UNKNOWN_ERROR
    # Engine statuses are other numbers than the LLM ones.
    assert LLMStatusCode.LLM_PARAM_INVALID != adxl.PARAM_INVALID
    assert "LLMStatusCode" in llm_datadist.__all__
