"""The names the vendor's `hixl` package exports at module level, with the
vendor's values: statuses, option keys, capability constants, and the enum
values of MemType, TransferOp, AsyncConnectStatus and FeatureType.
TransferStatus's values are not exported (TIMEOUT and FAILED are statuses)."""
import hixl

VENDOR_MODULE_NAMES = {
    "SUCCESS": 0, "PARAM_INVALID": 103900, "TIMEOUT": 103901, "NOT_CONNECTED": 103902,
    "ALREADY_CONNECTED": 103903, "NOTIFY_FAILED": 103904, "UNSUPPORTED": 103905, "FAILED": 503900,
    "RESOURCE_EXHAUSTED": 203900,
    "OPTION_ENABLE_USE_FABRIC_MEM": "EnableUseFabricMem", "OPTION_RDMA_TRAFFIC_CLASS": "RdmaTrafficClass",
    "OPTION_RDMA_SERVICE_LEVEL": "RdmaServiceLevel", "OPTION_BUFFER_POOL": "BufferPool",
    "OPTION_GLOBAL_RESOURCE_CONFIG": "GlobalResourceConfig", "OPTION_AUTO_CONNECT": "AutoConnect",
    "OPTION_LOCAL_COMM_RES": "LocalCommRes",
    "FEATURE_SUPPORTED": 1, "FEATURE_NOT_SUPPORTED": 0,
    "MEM_DEVICE": 0, "MEM_HOST": 1, "READ": 0, "WRITE": 1,
    "NOT_CONNECT": 0, "CONNECT_PENDING": 1, "CONNECTING": 2, "CONNECTED": 3, "CONNECT_FAILED": 4,
    "DISCONNECT_PENDING": 5, "DISCONNECTING": 6,
    "AUTO_CONNECT": 0, "CLIENT_SERVER_COMM": 1,
}


def _value(x):
    return x if isinstance(x, str) else int(x)


def test_every_vendor_module_level_name_has_the_vendors_value():
    missing = [n for n in VENDOR_MODULE_NAMES if not hasattr(hixl, n)]
    assert not missing, missing
    wrong = {n: _value(getattr(hixl, n)) for n, v in VENDOR_MODULE_NAMES.items() if _value(getattr(hixl, n)) != v}
    assert not wrong, wrong


def test_module_level_enum_values_are_the_enum_members():
    assert hixl.CONNECTED == hixl.AsyncConnectStatus.CONNECTED
    assert hixl.DISCONNECTING == hixl.AsyncConnectStatus.DISCONNECTING
    assert hixl.AUTO_CONNECT == hixl.FeatureType.AUTO_CONNECT
    assert hixl.CLIENT_SERVER_COMM == hixl.FeatureType.CLIENT_SERVER_COMM
    assert hixl.MEM_DEVICE == hixl.MemType.MEM_DEVICE and hixl.WRITE == hixl.TransferOp.WRITE
    assert hixl.get_capability(hixl.AUTO_CONNECT) == (hixl.SUCCESS, hixl.FEATURE_SUPPORTED)


def test_transfer_status_values_do_not_shadow_the_statuses():
    assert int(hixl.TIMEOUT) == 103901 and int(hixl.FAILED) == 503900
    assert [int(s) for s in (hixl.TransferStatus.WAITING, hixl.TransferStatus.COMPLETED,
                             hixl.TransferStatus.TIMEOUT, hixl.TransferStatus.FAILED)] == [0, 1, 2, 3]
    assert not hasattr(hixl, "WAITING") and not hasattr(hixl, "COMPLETED")
