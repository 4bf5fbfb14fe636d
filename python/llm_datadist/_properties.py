"""Property builders for the package's value classes, so that a field is one
line instead of the same getter (and setter) written again.  No imports from
the package: every module may use them (vendor_types is imported by errors,
itself imported by validation)."""
import operator


def _getter(attr):
    """A read-only property giving self.<attr>."""
    return property(operator.attrgetter(attr))


def _checked(name, check, *args, unset=None):
    """A property over self._<name>: set through check(value, name, *args),
    which raises TypeError / ValueError for a bad value and returns what is
    kept; read back as kept, or as `unset` (when given) while nothing was set
    (None)."""
    attr = "_" + name

    def get(self):
        value = getattr(self, attr)
        return unset if value is None and unset is not None else value

    def set_(self, value):
        setattr(self, attr, check(value, name, *args))

    return property(get, set_)
