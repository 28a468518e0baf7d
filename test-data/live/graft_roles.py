"""Give a recorded session the roles of a second recording of the same notebook.

    python3 test-data/live/graft_roles.py FROM_DIR TO_DIR

Roles (what each live block is for: parameter, activation, ...) are read
from the live kernel's objects, so an older recording made before the
recorder wrote them cannot get them offline. A second run of the same
notebook, on a machine with the same allocator behaviour, allocates the same
blocks in the same order; only the base of the device's address space moves.
This script checks exactly that, cell by cell (the same cells, the same
allocator figures, and every block's size, state and requested size the
same at one constant address shift for the whole session), and refuses
otherwise; then it writes TO_DIR's ``cellNN.roles.json`` (FROM_DIR's, its
addresses moved by the shift) and each cell's ``roles`` and ``roles_file`` in
its manifest. Nothing else in TO_DIR changes. Standard library only.
"""

import gzip
import json
import os
import pickle
import sys

# The figures that must agree for two runs to be the same session (device_free and device_total differ by GPU).
SAME_FIGURES = ("allocated", "reserved")


def _blocks(folder, name):
    with gzip.open(os.path.join(folder, name), "rb") as f:
        snapshot = pickle.load(f)
    blocks = []
    for seg in snapshot["segments"]:
        address = int(seg["address"])
        for blk in seg["blocks"]:
            blocks.append((int(seg.get("device", 0)), address, blk["size"], blk["state"], blk.get("requested_size")))
            address += blk["size"]
    return sorted(blocks)


def _figure(stats, key):
    return (stats or {}).get(key)


def _shift(source, target, cell_from, cell_to):
    """The address shift (target - source) under which the two cells' snapshots hold the same blocks, or None."""
    a, b = _blocks(source, cell_from["snapshot_file"]), _blocks(target, cell_to["snapshot_file"])
    if len(a) != len(b) or not a:
        return None
    shift = b[0][1] - a[0][1]
    same = all((d, addr + shift, *rest) == (e, baddr, *brest) for (d, addr, *rest), (e, baddr, *brest) in zip(a, b))
    return shift if same else None


def graft(source, target):
    with open(os.path.join(source, "manifest.json"), encoding="utf-8") as f:
        given = json.load(f)
    with open(os.path.join(target, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    if len(given["cells"]) != len(manifest["cells"]):
        sys.exit(f"graft_roles: {source} has {len(given['cells'])} cells, {target} {len(manifest['cells'])}")
    shifts = set()
    for cell_from, cell_to in zip(given["cells"], manifest["cells"]):
        where = f"cells[{cell_to['index']}]"
        if cell_from["source"] != cell_to["source"]:
            sys.exit(f"graft_roles: {where} runs other code in the two recordings")
        for side in ("before", "after"):
            for key in SAME_FIGURES:
                if _figure(cell_from.get(side), key) != _figure(cell_to.get(side), key):
                    sys.exit(f"graft_roles: {where} {side} {key} differs between the two recordings")
        if "roles_file" not in cell_from:
            sys.exit(f"graft_roles: {where} of {source} has no roles")
        shifts.add(_shift(source, target, cell_from, cell_to))
    if len(shifts) != 1 or None in shifts:
        sys.exit("graft_roles: the two recordings do not hold the same blocks at one address shift")
    shift = shifts.pop()
    for cell_from, cell_to in zip(given["cells"], manifest["cells"]):
        with open(os.path.join(source, cell_from["roles_file"]), encoding="utf-8") as f:
            roles = json.load(f)
        roles["address"] = [address + shift for address in roles["address"]]
        with open(os.path.join(target, cell_from["roles_file"]), "w", encoding="utf-8") as f:
            json.dump(roles, f)
        cell_to["roles"] = cell_from["roles"]
        cell_to["roles_file"] = cell_from["roles_file"]
    with open(os.path.join(target, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    print(f"graft_roles: {len(manifest['cells'])} cells of {target} got the roles of {source} (shift {shift:#x})")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    graft(sys.argv[1], sys.argv[2])
