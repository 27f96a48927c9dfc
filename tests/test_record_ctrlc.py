"""Ctrl-C to the whole process group (a terminal's, `timeout -s INT`, `kill -INT -- -PGID`) during a streamed
`record`: the `perf script` folding a finished chunk is a helper in a group of its own, so it folds on; every
recorded sample is folded, the intervals, the whole run and the trend written, exit 0 (Ctrl-C while
recording: docs/exit-codes.md), nothing left running. A `perf script` killed by someone else costs its
chunk's samples: counted, said in one line and in the capture facts."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.children import interruptible, session_members, tracked, watchdog
from helpers.programs import compile_c

from flamegraph.io.diagnostics import EXIT_OK, Diagnostics
from flamegraph.io.folded import read_folded
from flamegraph.model import FoldedProfile

pytestmark = [pytest.mark.perf, pytest.mark.parallel]  # counts, not time: they pass beside two busy loops
FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
SPIN_C = r"""
static volatile double sink;
__attribute__((noinline)) void spin_work(void) { for (int i = 0; i < 100000; i++) sink += i * 0.5; }
int main(void) { for (;;) spin_work(); }
"""


@pytest.fixture(autouse=True)
def _no_child_outlives_the_test() -> Iterator[None]:
    with watchdog(150):
        yield


@pytest.fixture(scope="module")
def spin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_c(tmp_path_factory.mktemp("spin"), "spin", SPIN_C)


def load(path: Path) -> FoldedProfile:
    with open(path, "rb") as f:
        return read_folded(f, str(path), Diagnostics(echo=False))


def start(args: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """flamegraph in a session of its own (its process group: the one Ctrl-C reaches), SIGINT at its default."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return tracked(subprocess.Popen(
        [*FLAMEGRAPH, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(tmp), **(env or {})}, start_new_session=True, preexec_fn=interruptible,
    ))  # fmt: skip


# `perf script` of the first chunk (as perf prints it) cut as a SIGKILL cuts it: after half its samples and
# the next one's header and leaf frame line (perf's stdout is block-buffered). What it printed is told in $CUT_SIDE.
CUTTER = r"""
import os, re, signal, subprocess, sys
out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE).stdout
mark = os.environb[b"CUT_EVENT"]
starts = [m.start() for m in re.finditer(rb"(?m)^[^\t\n][^\n]*" + re.escape(mark), out)]
if len(starts) < 2:  # nothing to cut: the next chunk is
    os.rmdir(os.environ["CUT_MARK"])
    sys.stdout.buffer.write(out)
    sys.exit(0)
whole = len(starts) // 2
header_end = out.index(b"\n", starts[whole]) + 1
with open(os.environ["CUT_SIDE"], "w") as side:
    side.write(f"{whole} {len(starts)}")
sys.stdout.buffer.write(out[: out.index(b"\n", header_end) + 1])
sys.stdout.buffer.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


def cutting_perf(tmp_path: Path, event: str) -> dict[str, str]:
    """The environment of a run whose first chunk's perf script is cut (CUTTER): a perf on PATH before perf."""
    real = shutil.which("perf")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cutter.py").write_text(CUTTER)
    (bin_dir / "perf").write_text(
        f'#!/bin/sh\ncase "$1 $*" in\n"script "*perf.data.[0-9]*) if mkdir "$CUT_MARK" 2>/dev/null; then '
        f'exec {sys.executable} {bin_dir / "cutter.py"} {real} "$@"; fi ;;\nesac\nexec {real} "$@"\n'
    )
    (bin_dir / "perf").chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CUT_EVENT": event,
            "CUT_MARK": str(tmp_path / "cut"), "CUT_SIDE": str(tmp_path / "cut.txt")}  # fmt: skip


def cut(tmp_path: Path) -> tuple[int, int]:
    """(samples printed whole, samples) of the chunk CUTTER cut."""
    whole, samples = map(int, (tmp_path / "cut.txt").read_text().split())
    return whole, samples


def stopped_chunk_script(flamegraph: int, timeout: float = 60) -> int:
    """The pid of a `perf script` of a chunk, stopped (SIGSTOP) so that it is surely running when the test
    signals: caught from the first one that starts (each runs a fraction of a second)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in _descendants(flamegraph):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[1:2] == [b"script"] and any(b"perf.data." in arg for arg in argv):
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    continue  # ended just now: the next one
                if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") == argv:
                    return pid
        time.sleep(0.01)
    raise AssertionError("no chunk's perf script seen")


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            try:
                kids = [int(kid) for kid in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def finish(proc: subprocess.Popen[str]) -> str:
    """stderr once flamegraph has exited; nothing of its session (perf, perf script, the command) left."""
    _, err = proc.communicate(timeout=120)
    deadline = time.monotonic() + 5
    while session_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(proc.pid) == [], err
    return err


def ctrl_c_while_a_chunk_folds(proc: subprocess.Popen[str]) -> None:
    """SIGINT to flamegraph's whole process group while a chunk's perf script runs (as a terminal's Ctrl-C)."""
    script = stopped_chunk_script(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.2)  # (a perf script of our group would now hold the SIGINT, delivered as it continues)
    finally:
        with contextlib.suppress(ProcessLookupError):  # (a perf script of our group may have died of it)
            os.kill(script, signal.SIGCONT)


def recorded(err: str) -> int:
    return int(re.search(r"recorded ([0-9,]+) samples", err).group(1).replace(",", ""))  # type: ignore[union-attr]


def facts(folded: Path) -> dict[str, str]:
    return json.loads(Path(f"{folded}.json").read_text())["metadata"]


def dropped(err: str, whole: dict[str, str]) -> int:
    """Samples of chunks dropped unfolded (the folding behind perf on a loaded machine): said, never silent."""
    count = int(whole.get("samples dropped unfolded", "0 of 0").split(" of ")[0].replace(",", ""))
    assert (count > 0) == ("warning: folding could not keep up" in err), err
    return count


def test_ctrl_c_to_the_group_with_every_folds_every_chunk(spin: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = start(["record", "--every", "1", "--duration", "6", "-F", "499", "-o", str(out / "run.svg"),
                  "--folded", str(out / "run.folded"), "--", str(spin)], tmp_path)  # fmt: skip
    ctrl_c_while_a_chunk_folds(proc)
    err = finish(proc)
    assert proc.returncode == EXIT_OK, err
    assert "stopping the recording (Ctrl-C received)" in err and "perf script" not in err, err
    whole = load(out / "run.folded")
    intervals = sorted(out.glob("run-0*.folded"))
    assert intervals, err
    for path in intervals:  # the folded total is what its subtitle and facts say it holds
        said = facts(path)["interval"]
        samples = int(re.search(r"([0-9,]+) samples$", said).group(1).replace(",", ""))  # type: ignore[union-attr]
        assert load(path).total == samples, (path.name, said, err)
        assert f"{samples:,} samples" in json.loads(Path(f"{path}.json").read_text())["subtitle"]
    assert sum(load(path).total for path in intervals) == whole.total
    assert recorded(err) == whole.total + dropped(err, facts(out / "run.folded")), err
    assert (out / "run.svg").is_file() and (out / "run-trend.svg").is_file()
    assert "samples not folded" not in facts(out / "run.folded")


def test_ctrl_c_to_the_group_without_every_folds_every_chunk(spin: Path, tmp_path: Path) -> None:
    folded = tmp_path / "run.folded"
    proc = start(["record", "--max-spool", "16M", "--duration", "6", "-F", "499", "--no-svg", "--folded",
                  str(folded), "--", str(spin)], tmp_path)  # fmt: skip
    ctrl_c_while_a_chunk_folds(proc)
    err = finish(proc)
    assert proc.returncode == EXIT_OK, err
    assert "stopping the recording (Ctrl-C received)" in err and "perf script" not in err, err
    whole = load(folded)
    assert whole.total > 0 and recorded(err) == whole.total + dropped(err, facts(folded)), err
    assert list((tmp_path / "tmp").iterdir()) == []  # nothing raw outlives the run


def test_a_chunks_perf_script_killed_costs_its_samples_said(spin: Path, tmp_path: Path) -> None:
    """SIGKILL from elsewhere (the OOM killer) mid-record: the run goes on, the record cut short is not folded,
    the loss is one line, in the interval's subtitle and facts and in the whole run's facts; what was folded
    still adds up."""
    out = tmp_path / "out"
    proc = start(["record", "--every", "1", "--duration", "4", "-F", "499", "-o", str(out / "run.svg"),
                  "--folded", str(out / "run.folded"), "--", str(spin)], tmp_path,
                 cutting_perf(tmp_path, " cpu-clock:"))  # fmt: skip
    err = finish(proc)
    assert proc.returncode == EXIT_OK, err
    printed, samples = cut(tmp_path)
    lost = samples - printed
    assert lost > 0 and printed > 0
    assert re.search(rf"warning: chunk \d+: perf script killed by SIGKILL: {lost:,} of its {samples:,} samples not "
                     r"folded\n", err), err  # (the first chunk scripted: earlier ones may be dropped)  # fmt: skip
    whole_facts = facts(out / "run.folded")
    assert whole_facts["samples not folded"].startswith(f"{lost:,} of {recorded(err):,} samples in 1 chunk ")
    assert "(perf script killed by SIGKILL)" in whole_facts["samples not folded"]
    assert f"warning: {whole_facts['samples not folded']} were not folded" in err
    whole = load(out / "run.folded")
    assert recorded(err) == whole.total + lost + dropped(err, whole_facts), err
    [holding] = [p for p in out.glob("run-0*.folded") if "samples not folded" in facts(p)]  # the chunk's interval
    interval = facts(holding)
    assert interval["interval"].endswith(f", {lost:,} not folded (perf script killed by SIGKILL)")
    assert interval["samples not folded"].startswith(f"{lost:,} of ")
    in_it = int(interval["samples not folded"].split(" of ")[1].split(" ")[0].replace(",", ""))
    assert load(holding).total == in_it - lost


SWITCHER_C = "#include <unistd.h>\nint main(void) { for (;;) usleep(100); }\n"  # ~5,000 switches a second


def test_offcpu_ctrl_c_to_the_group_pairs_on(tmp_path: Path) -> None:
    """`offcpu --max-spool` reads its chunks through the same perf script: Ctrl-C to the group stops perf
    alone, the waits are paired and drawn, exit 0, nothing left running."""
    subprocess.run(["cc", "-O1", "-o", str(tmp_path / "switcher"), "-x", "c", "-"], input=SWITCHER_C.encode(),
                   check=True)  # fmt: skip
    folded = tmp_path / "off.folded"
    proc = start(["offcpu", "--max-spool", "16M", "--duration", "6", "--no-svg", "--folded", str(folded), "--",
                  str(tmp_path / "switcher")], tmp_path)  # fmt: skip
    ctrl_c_while_a_chunk_folds(proc)
    err = finish(proc)
    assert proc.returncode == EXIT_OK, err
    assert "stopping the recording (Ctrl-C received)" in err and "perf script" not in err, err
    assert load(folded).total > 0 and "(stopped by Ctrl-C)" in facts(folded)["duration"], err


def test_offcpu_a_chunks_perf_script_killed_costs_its_records_said(tmp_path: Path) -> None:
    """Killed mid-record: the records not paired are the chunk's samples less those printed whole (not less
    perf's side-band records: --show-switch-events prints several a sample)."""
    subprocess.run(["cc", "-O1", "-o", str(tmp_path / "switcher"), "-x", "c", "-"], input=SWITCHER_C.encode(),
                   check=True)  # fmt: skip
    folded = tmp_path / "off.folded"
    proc = start(["offcpu", "--max-spool", "16M", "--duration", "4", "--no-svg", "--folded", str(folded), "--",
                  str(tmp_path / "switcher")], tmp_path, cutting_perf(tmp_path, ": sched:sched_switch:"))  # fmt: skip
    err = finish(proc)
    assert proc.returncode == EXIT_OK, err
    printed, samples = cut(tmp_path)
    assert samples - printed > 0 and printed > 0
    said = f": perf script killed by SIGKILL: {samples - printed:,} of its {samples:,} sched_switch records not paired"
    assert re.search(rf"warning: chunk \d+{said}\n", err), err  # (the first chunk read: earlier ones may be dropped)
    fact = facts(folded)["records not paired"]
    assert fact.startswith(f"{samples - printed:,} of ")
    assert fact.endswith(" in 1 chunk (perf script killed by SIGKILL)")
    assert f"warning: {fact} were not paired" in err and load(folded).total > 0
