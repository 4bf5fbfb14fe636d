"""Argument checks shared by the package's calls: a wrong type raises
TypeError, a wrong value _ParamInvalid (a ValueError and an LLMException),
None where an object is required AttributeError (docs/contract.md §10)."""
from .errors import _ParamInvalid


_NUM_TENSORS_PER_LAYER = 2
_U64 = 2 ** 64
_INT32_MAX = 2 ** 31 - 1


def _need(value, name):
    if value is None:
        raise AttributeError(f"{name} must not be None")
    return value


def _int(value, name, lo=0, hi=_U64 - 1):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not lo <= value <= hi:
        raise _ParamInvalid(f"{name}={value} is out of range [{lo}, {hi}]")
    return value


def _int_seq(values, name, lo=0, hi=_U64 - 1):
    _need(values, name)
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list or tuple of int, not {type(values).__name__}")
    return [_int(v, f"{name}[{i}]", lo, hi) for i, v in enumerate(values)]


def _type(value, cls, name):
    _need(value, name)
    if not isinstance(value, cls):
        names = cls.__name__ if isinstance(cls, type) else " or ".join(c.__name__ for c in cls)
        raise TypeError(f"{name} must be {names}, not {type(value).__name__}")
    return value


def _opt_bool(value, name):
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool or None, not {type(value).__name__}")
    return value


def _layer_range(r, name):
    if r is None:
        return None
    if not isinstance(r, range):
        raise TypeError(f"{name} must be a range, not {type(r).__name__}")
    if r.step != 1 or r.start < 0 or r.stop <= r.start:
        raise _ParamInvalid(f"{name}={r!r}: the step must be 1 and the range non-empty and non-negative")
    return (r.start, r.stop)


def _layers(kwargs, what):
    unknown = set(kwargs) - {"src_layer_range", "dst_layer_range", "tensor_num_per_layer"}
    if unknown:
        raise TypeError(f"{what}() got unexpected keyword arguments {sorted(unknown)}")
    tnpl = _int(kwargs.get("tensor_num_per_layer", _NUM_TENSORS_PER_LAYER), "tensor_num_per_layer", 1, 2 ** 32 - 1)
    return (_layer_range(kwargs.get("src_layer_range"), "src_layer_range"),
            _layer_range(kwargs.get("dst_layer_range"), "dst_layer_range"), tnpl)


def _str(value, name):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def _bool(value, name):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def _block_map(value, name, list_values):
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict, not {type(value).__name__}")
    out = []
    for k, v in value.items():
        _int(k, f"{name} key")
        if list_values:
            for d in _int_seq(v, f"{name}[{k}]"):
                out.append((k, d))
        else:
            out.append((k, _int(v, f"{name}[{k}]")))
    return out
