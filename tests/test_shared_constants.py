"""The constants both languages use have one source, the helper's protocol.py.

scripts/embed-helper.js generates them into the frontend; the two JSON files
that cannot import Python, the message schema (protocol.schema.json) and the
settings schema (schema/plugin.json), are held to them here.
"""

import json
import pathlib
import re
import subprocess

from cuda_memdiff_kernel import holders, protocol

ROOT = pathlib.Path(__file__).resolve().parents[1]
MESSAGES = json.loads((ROOT / "kernel-helpers" / "cuda_memdiff_kernel" / "protocol.schema.json").read_text())
SETTINGS = json.loads((ROOT / "schema" / "plugin.json").read_text())


def camel(key):
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key)


def test_message_schema_enums_are_the_protocol_constants():
    d = MESSAGES["definitions"]
    assert d["status"]["properties"]["status"]["enum"] == list(protocol.STATUSES)
    assert d["cellNote"]["properties"]["note"]["enum"] == list(protocol.CELL_NOTES)
    states = d["snapshot"]["properties"]["blocks"]["properties"]["state"]["items"]["enum"]
    assert states == list(range(len(protocol.BLOCK_STATES)))
    kinds = d["holderBlocks"]["items"]["properties"]["holders"]["items"]["properties"]["kind"]["enum"]
    assert kinds == list(protocol.HOLDER_KINDS)
    assert d["holderReference"]["properties"]["type"]["enum"] == list(protocol.HOLDER_REFERENCES)


def test_message_schema_holds_integers_to_what_the_frontend_reads_exactly():
    d = MESSAGES["definitions"]
    assert protocol.MAX_EXACT_INTEGER == 2**53 - 1
    assert d["count"]["maximum"] == protocol.MAX_EXACT_INTEGER
    assert (d["exactInteger"]["minimum"], d["exactInteger"]["maximum"]) == (
        -protocol.MAX_EXACT_INTEGER,
        protocol.MAX_EXACT_INTEGER,
    )


def test_role_codes_name_each_role_once_and_the_schema_takes_exactly_them():
    assert len(protocol.ROLE_CODES) == len(protocol.ROLES) == len(set(protocol.ROLE_CODES))
    runs = MESSAGES["definitions"]["roles"]["properties"]["blocks"]["properties"]["runs"]["pattern"]
    letters = f"[{protocol.ROLE_CODES[0]}-{protocol.ROLE_CODES[-1]}]"
    assert (
        letters in runs
        and "".join(chr(c) for c in range(ord("a"), ord("a") + len(protocol.ROLES))) == protocol.ROLE_CODES
    )


def test_settings_schema_offers_every_helper_setting_with_its_default_and_choices():
    properties = SETTINGS["properties"]
    for key, default in protocol.DEFAULT_SETTINGS.items():
        prop = properties[camel(key)]
        assert prop["default"] == default, key
        if key in protocol.SETTING_CHOICES:
            assert prop["enum"] == list(protocol.SETTING_CHOICES[key]), key


def test_holder_search_uses_the_protocol_kinds():
    named = {
        holders.VARIABLE,
        holders.GRAPH,
        holders.OUTPUT_CACHE,
        holders.TRACEBACK,
        holders.PARAMETER,
        holders.GRADIENT,
        holders.OPTIMIZER,
        holders.HOOK,
        holders.UNREACHABLE,
        holders.NATIVE,
        holders.HIDDEN,
    }
    assert named == set(protocol.HOLDER_KINDS)
    assert (holders.OUTPUT_CACHE, holders.NATIVE) == ("output-cache", "native")


def test_the_frontend_gets_the_constants_from_python(tmp_path):
    # The generator itself: Python's values, not a copy, reach src/engine/protocol.generated.ts.
    subprocess.run(["node", str(ROOT / "scripts" / "embed-helper.js")], check=True, cwd=ROOT)
    generated = (ROOT / "src" / "engine" / "protocol.generated.ts").read_text()
    for status in protocol.STATUSES:
        assert f"'{status}'" in generated
    for kind in protocol.HOLDER_KINDS + protocol.HOLDER_REFERENCES:
        assert f"'{kind}'" in generated
    assert f"export const ROLE_CODES = '{protocol.ROLE_CODES}';" in generated
    assert f"export const PROTOCOL_VERSION = {protocol.PROTOCOL_VERSION};" in generated
    assert f"'max_entries': {protocol.DEFAULT_SETTINGS['max_entries']}" in generated
