"""Statuses: the Python names and values are the C++ status tables'
(include/adxl/adxl_types.h, include/llm_datadist/cache_types.h), as the
native modules report them, with nothing added or missing."""
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


def test_llm_statuses_are_the_cpp_table():
    table = _native.status_table()
    names = {name for name, _, _ in table}
    assert set(LLMStatusCode.__members__) == names | {"LLM_UNKNOWN"}
    for name, value, description in table:
        assert description
        assert LLMStatusCode[name] == value
        # The canonical name of each value is the C++ StatusName's.
        assert LLMStatusCode(value).name == _native.status_name(value)
    assert _native.status_name(LLMStatusCode.LLM_UNKNOWN) == "LLM_UNKNOWN"
    assert LLMStatusCode(0xFFFFFFFF) is LLMStatusCode.LLM_UNKNOWN


def test_llm_vendor_names_and_aliases():
    assert LLMStatusCode.LLM_OUT_OF_MEMORY is LLMStatusCode.LLM_RESOURCE_EXHAUSTED
    assert LLMStatusCode.LLM_FEATURE_NOT_ENABLED is LLMStatusCode.LLM_UNSUPPORTED
    assert LLMStatusCode(adxl.RESOURCE_EXHAUSTED).name == "LLM_OUT_OF_MEMORY"
    assert LLMStatusCode(adxl.UNSUPPORTED).name == "LLM_FEATURE_NOT_ENABLED"
    # Engine statuses pass through the cache layer unchanged.
    assert LLMStatusCode.LLM_PARAM_INVALID == adxl.PARAM_INVALID
    assert LLMStatusCode.LLM_NOT_YET_LINK == adxl.NOT_CONNECTED
    assert "LLMStatusCode" in llm_datadist.__all__
