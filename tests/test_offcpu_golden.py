"""Golden off-CPU profiles of real `perf script` recordings (-p with a thread created mid-recording; -a)."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GOLDEN, check_golden

from flamegraph.folding.offcpu import fold_offcpu
from flamegraph.folding.perf_sched import OffCpuOptions
from flamegraph.io.diagnostics import EXIT_BAD_INPUT, Diagnostics
from flamegraph.io.folded import write_folded

INPUTS = sorted((GOLDEN / "offcpu").glob("*.perf.txt"))
VARIANTS = {"default": OffCpuOptions(), "no-kernel": OffCpuOptions(keep_kernel=False)}


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


@pytest.mark.parametrize("how", ["file", "gzip", "stdin"])
def test_fold_offcpu_cli_matches_the_golden(tmp_path: Path, how: str) -> None:
    """`flamegraph fold --offcpu` on saved text (plain, gzip, stdin): the golden stacks, totals on stderr."""
    source = GOLDEN / "offcpu" / "attach-new-thread.perf.txt"
    golden = source.with_name("attach-new-thread.default.folded").read_bytes()
    expected = b"".join(line for line in golden.splitlines(keepends=True) if not line.startswith(b"#"))
    argv = [sys.executable, "-m", "flamegraph", "fold", "--offcpu"]
    if how == "stdin":
        proc = subprocess.run([*argv, "-"], input=source.read_bytes(), capture_output=True, timeout=60)
    else:
        path = source
        if how == "gzip":
            path = tmp_path / "in.perf.txt.gz"
            path.write_bytes(gzip.compress(source.read_bytes()))
        proc = subprocess.run([*argv, str(path)], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected
    assert b"by state: S 421.2 ms, R 186 " in proc.stderr


def test_fold_offcpu_on_text_without_switches_fails_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "oncpu.txt"
    path.write_text("app 10 1.000000: 250000 cpu-clock:\n\tffffffff821f8298 busy ([kernel.kallsyms])\n\n")
    proc = subprocess.run([sys.executable, "-m", "flamegraph", "fold", "--offcpu", str(path)], capture_output=True)
    assert proc.returncode == EXIT_BAD_INPUT
    assert proc.stderr.decode().strip().endswith("record with -e sched:sched_switch --switch-events)")
