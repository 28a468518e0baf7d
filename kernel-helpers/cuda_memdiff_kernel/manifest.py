"""A session folder's manifest.json, read by the rule in manifest_fields.json.

That table is the one rule for a manifest: the engine (src/engine/manifest.ts)
reads it too, so the replay and the CLI take and refuse the same files with the
same words. This module only says what each kind of value is; the fields, what
null and absence mean and the words of each refusal are the table's. Numbers
are read as JavaScript reads them (a double past 2^53), so both sides judge the
same value.
"""

import json
import math
import os

from .protocol import ROLES

try:  # an injected helper has no folder: the build serves the table's text as a module (scripts/embed-helper.js)
    from ._manifest_fields import TEXT as _TEXT
except ImportError:
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "manifest_fields.json"), encoding="utf-8") as f:
        _TEXT = f.read()

FIELDS = json.loads(_TEXT)
_MAX_SAFE = 2**53 - 1


class ManifestError(ValueError):
    """A manifest the rule refuses; the message is one line that starts with the file's name."""


def inside_folder(name):
    """A file name inside the folder: text, relative (no drive), no '..' part, no NUL (no file system takes one)."""
    return (
        isinstance(name, str)
        and name != ""
        and "\0" not in name
        and not name.startswith(("/", "\\"))
        and not (len(name) > 1 and name[1] == ":" and name[0].isascii() and name[0].isalpha())
        and ".." not in name.replace("\\", "/").split("/")
    )


def read_manifest(data):
    """The manifest in ``data`` (the file's bytes, or text), checked and read by the rule: nbformat's source lines
    joined, defaults filled in, null read as absent where the rule says so. ManifestError says why one is refused."""
    file, refusals = FIELDS["file"], FIELDS["refusals"]
    # TextDecoder's reading, as the engine's: a BOM dropped, a byte that is no UTF-8 replaced.
    text = data.decode("utf-8-sig", errors="replace") if isinstance(data, bytes) else data
    try:
        raw = json.loads(text, parse_constant=_no_constant, parse_int=_number)
    except ValueError as exc:
        raise ManifestError(f"{file} {refusals['notJson']} ({exc})") from None
    except RecursionError:  # json's decoder recurses per nested list: a hostile file nests 200,000 deep
        raise ManifestError(f"{file} {refusals['tooDeep']}") from None
    try:
        return _read(raw, FIELDS["manifest"], file, 0, {})
    except RecursionError:
        raise ManifestError(f"{file} {refusals['tooDeep']}") from None


def _no_constant(name):
    raise ValueError(f"{name} is no JSON value")


def _number(digits):
    # Sixteen digits may pass 2^53, where JavaScript holds a double: so does this (Python's int refuses 4,300 digits).
    return int(digits) if len(digits) < 16 else float(digits)


def _whole(value):
    """A safe integer as an int (2.0 is 2, as JSON.parse reads it), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value) if abs(value) <= _MAX_SAFE else None


def _kind(kind, value):
    """(is it of the kind, the value as read)."""
    if kind in ("integer", "whole"):
        n = _whole(value)
        return n is not None and (kind == "integer" or n >= 0), n
    if kind == "lines" and isinstance(value, list) and all(isinstance(line, str) for line in value):
        return True, "".join(value)  # nbformat's list of lines
    ok = {
        "name": inside_folder,
        "text": lambda v: isinstance(v, str),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
        "flag": lambda v: isinstance(v, bool),
        "lines": lambda v: isinstance(v, str),
        "list": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
        "role": lambda v: isinstance(v, str) and v in ROLES,
    }[kind](value)
    return ok, value


def _read(value, rule, where, position, seen):
    ok, read = _kind(rule["kind"], value)
    if not ok:
        words = rule.get("words", FIELDS["kinds"][rule["kind"]])
        raise ManifestError(f"{where} {words}, not {quoted_value(value)}")
    value = read
    if rule["kind"] == "list":
        value[:] = [_read(item, rule["items"], f"{where}[{k}]", k, seen) for k, item in enumerate(value)]
    elif rule["kind"] == "object" and "shape" in rule:
        _read_fields(value, FIELDS["shapes"][rule["shape"]], where, position, seen)
    elif rule["kind"] == "object":
        _read_entries(value, rule, where, position, seen)
    return value


def _read_entries(obj, rule, where, position, seen):
    """An object of any keys (a cell's bytes per role): each key by ``keys``, each value by ``each``."""
    for key in _js_order(obj):
        if "keys" in rule:
            _read(key, rule["keys"], where, position, seen)
        obj[key] = _read(obj[key], rule["each"], f"{where} {key}", position, seen)


def _js_order(obj):
    """The keys in the order the engine's Object.entries lists them (array indices ascending, then the rest as
    written), so that of two bad keys both readers refuse the same one."""

    def is_index(key):
        return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) < 2**32 - 1

    return sorted((k for k in obj if is_index(k)), key=int) + [k for k in obj if not is_index(k)]


def _read_fields(obj, shape, where, position, seen):
    for field, rule in shape.items():
        value = obj.get(field)
        if _absent(obj, field, rule):
            obj.pop(field, None)
            if rule.get("required"):
                raise ManifestError(f"{where} {FIELDS['refusals']['missing']} {field}")
            if rule.get("defaultIsPosition"):
                obj[field] = position
            elif "default" in rule:
                obj[field] = rule["default"]
            continue
        if value is None:  # null, where it is a value
            continue
        obj[field] = value = _read(value, rule, f"{where} {field}", position, seen)
        if "unique" in rule:
            first = seen.setdefault(field, {}).setdefault(value, position)
            if first != position:
                words = rule["unique"].replace("{first}", str(first))
                raise ManifestError(f"{where} {field} {quoted_value(value)} {words}")


def _absent(obj, field, rule):
    """The field is not given: missing, null where null is no value, or '' where that names nothing."""
    value = obj.get(field)
    return (
        field not in obj
        or (value is None and not rule.get("nullable"))
        or (value == "" and rule.get("emptyIsAbsent", False))
    )


def quoted_value(value):
    """A value from the file as a refusal quotes it, in the same words the engine's ``quotedValue`` gives."""
    values = FIELDS["values"]
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        n = _whole(value)
        if n is not None:
            return str(n)
        if abs(value) > _MAX_SAFE:
            return values["huge"]
        # From 1e-4 to 2^53 Python and JavaScript print a fraction's shortest digits alike, without an exponent.
        return repr(float(value)) if abs(value) >= 1e-4 else values["tiny"]
    if isinstance(value, str):
        # Characters both languages count alike (one UTF-16 unit, printable); others read as '?'.
        length = values["quoteLength"]
        kept = "".join(_quoted(c) for c in value[:length])
        return f'"{kept}"' + ("…" if len(value) > length else "")
    return values["list"] if isinstance(value, list) else values["object"]


def _quoted(c):
    code = ord(c)
    if code < 0x20 or 0x7F <= code < 0xA0 or 0xD800 <= code < 0xE000 or code > 0xFFFF:
        return "?"
    return "\\" + c if c in '"\\' else c
