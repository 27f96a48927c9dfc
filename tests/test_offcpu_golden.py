"""Golden off-CPU profiles of real `perf script` recordings (-p with a thread created mid-recording; -a)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import GOLDEN, check_golden

from flamegraph.collapse.perf_sched import OffCpuOptions
from flamegraph.diagnostics import Diagnostics
from flamegraph.folded import write_folded
from flamegraph.offcpu import fold_offcpu

INPUTS = sorted((GOLDEN / "offcpu").glob("*.perf.txt"))
VARIANTS = {"default": OffCpuOptions(), "no-kernel": OffCpuOptions(kernel=False)}


def test_inputs_exist() -> None:
    assert len(INPUTS) >= 2


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("source", INPUTS, ids=lambda p: p.name.removesuffix(".perf.txt"))
def test_golden(source: Path, variant: str) -> None:
    profile = fold_offcpu([str(source)], VARIANTS[variant], Diagnostics(echo=False))
    out = io.BytesIO()
    write_folded(profile, out)
    for key, value in profile.metadata.items():
        out.write(f"# {key}: {value}\n".encode())
    stem = source.name.removesuffix(".perf.txt")
    check_golden(out.getvalue(), source.with_name(f"{stem}.{variant}.folded"))
