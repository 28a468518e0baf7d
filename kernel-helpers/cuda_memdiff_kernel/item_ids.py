"""Which objects a list or tuple holds, as one bytes value: compared between cells without keeping them alive.

The role pass reuses what it found in a list of thousands of tensors while
the list holds the same tensor objects. ``list(map(id, items))`` answers
that at about 50 ns an item, the largest fixed cost of a pass over a
notebook's list of 10,000 tensors. In CPython a list or tuple keeps its
items as an array of object pointers and ``id()`` is an object's address,
so the array's bytes are the items' ids: one copy in C, compared in C. The
layout is checked once against ``id()``; where it does not hold (another
Python, a free-threaded build) the ids are read one by one.
"""

import array
import ctypes
import sys

# A PyVarObject's header: reference count, type, size; a tuple's items follow it, a list points to its own.
_HEADER = ctypes.sizeof(ctypes.c_ssize_t) * 2 + ctypes.sizeof(ctypes.c_void_p)
_POINTER = ctypes.sizeof(ctypes.c_void_p)


def _list_bytes(items):
    address = ctypes.c_void_p.from_address(id(items) + _HEADER).value
    return ctypes.string_at(address, len(items) * _POINTER) if items else b""


def _tuple_bytes(items):
    return ctypes.string_at(id(items) + _HEADER, len(items) * _POINTER)


def _slow(items):
    return list(map(id, items))


def _layout_holds():
    if sys.implementation.name != "cpython" or not getattr(sys, "_is_gil_enabled", lambda: True)():
        return False
    if _POINTER != array.array("Q").itemsize:
        return False
    try:
        sample = [object() for _ in range(3)]
        held = tuple(sample)
        expected = array.array("Q", map(id, sample)).tobytes()
        return _list_bytes(sample) == expected and _tuple_bytes(held) == expected
    except Exception:
        return False


_FAST = _layout_holds()


def item_ids(items):
    """A value equal for two lists (or tuples) exactly when they hold the same objects in the same order."""
    if not _FAST:
        return _slow(items)
    if type(items) is list:
        return _list_bytes(items)
    if type(items) is tuple:
        return _tuple_bytes(items)
    return _slow(items)
