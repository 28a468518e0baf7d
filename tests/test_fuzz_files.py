"""The mutation fuzzer (bench/fuzz_files.py) over the recordings in test-data/, with its fixed seed.

Each mutant of a real recording (cut, flipped, or re-pickled with a value of
the wrong type or shape) must end in a report with sound figures or in one
line that names the file, from the CLI, from the kernel helper replaying it,
and from the engine decoding the helper's messages as the panel does. A
failure prints the command and what the user saw; rerun it with
``python bench/fuzz_files.py --keep DIR`` to keep the mutants.
"""

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import fuzz_files  # noqa: E402


@pytest.mark.skipif(
    not (ROOT / "dist" / "node" / "cli" / "main.js").exists(), reason="needs `npm run build:cli` (npm test runs it)"
)
def test_every_mutant_is_reported_soundly_or_refused_by_name():
    failures, stats = fuzz_files.fuzz(seed=1, rounds=1)
    assert stats["cli_runs"] > 2000 and stats["replays"] > 300 and stats["panel_decodes"] > 100, stats
    assert not failures, "\n".join(f"{where}: {why}" for where, why in failures[:20])
