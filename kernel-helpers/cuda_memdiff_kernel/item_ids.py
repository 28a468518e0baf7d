"""Which objects a list or tuple holds, as one bytes value: compared between cells without keeping them alive.

The role pass reuses what it found in a list of thousands of tensors while
the list holds the same tensor objects. ``list(map(id, items))`` answers
that at about 50 ns an item, the largest fixed cost of a pass over a
notebook's list of 10,000 tensors. In CPython a list or tuple keeps its
items as an array of object pointers and ``id()`` is an object's address,
so the array's bytes are the items' ids: one copy in C, compared in C. The
layout is checked once, on first use, against ``id()``; where it does not
hold (another Python, a free-threaded build) the ids are read one by one.
"""

import array
import functools
import sys


def item_ids(items):
    """A value equal for two lists (or tuples) exactly when they hold the same objects in the same order."""
    readers = _readers()
    reader = readers.get(type(items)) if readers else None
    return reader(items) if reader is not None else list(map(id, items))


@functools.cache
def _readers():
    """{list: reader, tuple: reader} of the pointer arrays, or None where the layout does not hold."""
    if sys.implementation.name != "cpython" or not getattr(sys, "_is_gil_enabled", lambda: True)():
        return None
    import ctypes  # noqa: PLC0415 - first used after a cell, not when the helper is installed

    pointer = ctypes.sizeof(ctypes.c_void_p)
    # A PyVarObject's header: reference count, type, size; a tuple's items follow it, a list points to its own.
    header = ctypes.sizeof(ctypes.c_ssize_t) * 2 + pointer

    def list_bytes(items):
        if not items:
            return b""
        return ctypes.string_at(ctypes.c_void_p.from_address(id(items) + header).value, len(items) * pointer)

    def tuple_bytes(items):
        return ctypes.string_at(id(items) + header, len(items) * pointer)

    try:
        sample = [object() for _ in range(3)]
        held = tuple(sample)
        expected = array.array("Q", map(id, sample)).tobytes()
        if pointer != array.array("Q").itemsize or list_bytes(sample) != expected or tuple_bytes(held) != expected:
            return None
    except Exception:
        return None
    return {list: list_bytes, tuple: tuple_bytes}
