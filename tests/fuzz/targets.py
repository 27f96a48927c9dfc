"""The fuzz targets: one per parser or writer, each `target(data: bytes) -> None`.

A target derives its options from the head of `data` (see `Source`), runs the code under test on
the rest and checks its properties. It may end in one of our documented errors (`FlamegraphError`,
e.g. `--strict` or "no samples"); any other exception, or a failed property, is a bug. The same
function runs under hypothesis (tests/test_fuzz.py), atheris (tests/fuzz/campaign.py) and the
corpus replay (tests/fuzz/corpus/<target>/*), so a finding is a file that can be replayed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .cli_targets import command_line, window_spec
from .fleet_targets import scheduler_address, scheduler_greeting
from .fold_targets import compat_reference, fold_file, fold_text, offcpu_text, perf_roundtrip
from .input_targets import convert_input, sidecar_file
from .render_targets import folded_text, highlight_spec, palette_file, render_options
from .script_targets import perf_grammar

Target = Callable[[bytes], None]

TARGETS: dict[str, Target] = {
    "fold_text": fold_text,
    "fold_file": fold_file,
    "compat_reference": compat_reference,
    "perf_roundtrip": perf_roundtrip,
    "perf_grammar": perf_grammar,
    "offcpu_text": offcpu_text,
    "folded_text": folded_text,
    "palette_file": palette_file,
    "highlight_spec": highlight_spec,
    "window_spec": window_spec,
    "command_line": command_line,
    "render_options": render_options,
    "scheduler_address": scheduler_address,
    "scheduler_greeting": scheduler_greeting,
    "sidecar_file": sidecar_file,
    "convert_input": convert_input,
}
NEEDS_SHARED = frozenset({"compat_reference"})  # runs stackcollapse-perf.pl from the peer-test corpus
NEEDS_MODULE = {"scheduler_greeting": "msgpack"}  # Dask's wire format: the fleet extra brings it


def corpus_dir(name: str) -> Path:
    """Inputs that once broke target `name` (replayed by tests/test_fuzz.py)."""
    return Path(__file__).resolve().parent / "corpus" / name

