"""`record --mxnet` streamed: the samples kept while the chunks are folded and joined after the run give
what the whole recording's join gives (on the recorded fixture exactly; on a real MLP run, the same
coverage and operator table as `--max-spool 0`), the context switches read from the fold's own text."""

from __future__ import annotations

import io
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GOLDEN
from helpers.mlp import THREE_EPOCHS as MLP

from flamegraph.folding.grammar import HEADER_OURS
from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.folding.perf_blocks import fold_blocks, iter_blocks
from flamegraph.frameworks.mxnet.hook import load_process, parse_evidence, read_sidecars
from flamegraph.frameworks.mxnet.join import Joiner
from flamegraph.frameworks.mxnet.sample_log import SampleLog
from flamegraph.frameworks.mxnet.summary import summarize, summary_lines
from flamegraph.frameworks.mxnet.switches import off_cpu_intervals
from flamegraph.frameworks.mxnet.threads import learn_thread_map
from flamegraph.io.diagnostics import Diagnostics

FIXTURE = GOLDEN / "mxnet"
FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]


def root_of(tid: bool = False) -> Callable[[bytes], bytes]:
    """The fold's root frame of a sample header."""
    naming = PerfCollapser(FoldOptions(tid=tid), Diagnostics(echo=False))
    return lambda header: naming.root_name(HEADER_OURS.match(header))  # type: ignore[arg-type]


def sample_log(tid: bool = False) -> SampleLog:
    return SampleLog(root_of(tid))


def joiner(engine_times: dict[int, list[float]], switches: dict[int, list[tuple[float, bool]]], last: float) -> Joiner:
    (facts,) = read_sidecars(FIXTURE)
    inputs = load_process(facts, FIXTURE)
    assert inputs.alignment is not None
    join = Joiner(inputs.trace, inputs.verbose, inputs.alignment, learn_thread_map(inputs.trace.threads, engine_times))
    join.off_cpu = off_cpu_intervals(switches, last)
    join.period_us = 1e6 / 1999
    return join


def alignment():  # type: ignore[no-untyped-def]
    (facts,) = read_sidecars(FIXTURE)
    return load_process(facts, FIXTURE).alignment


@pytest.mark.parametrize("block", [7, 333, 1 << 16])
def test_the_tap_reads_every_switch_line_and_passes_the_text_on(block: int) -> None:
    """Switch lines cut across blocks are read whole; the blocks go on unchanged."""
    text = (FIXTURE / "evidence.txt").read_bytes()
    log = sample_log()
    passed = b"".join(log.tap(iter_blocks(io.BytesIO(text), size=block)))
    assert passed == text
    expected = parse_evidence(io.BytesIO(text), alignment())
    got = log.evidence(alignment())
    assert got.switches == expected.switches
    assert sum(map(len, got.switches.values())) == text.count(b"PERF_RECORD_SWITCH")


def test_joined_after_the_fold_equals_joined_while_folding() -> None:
    """The fixture folded with the log as its hook (in blocks, as a chunk is) and joined afterwards: the same
    stacks and the same report as the whole recording's join, the evidence taken from the kept samples."""
    text = (FIXTURE / "script.txt").read_bytes()
    evidence = parse_evidence(io.BytesIO((FIXTURE / "evidence.txt").read_bytes()), alignment())
    whole = joiner(evidence.engine_times, evidence.switches, evidence.last)
    collapser = PerfCollapser(FoldOptions.with_all(sample_hook=whole), Diagnostics(echo=False))
    fold_blocks(collapser, iter_blocks(io.BytesIO(text), size=4096), "script.txt")
    expected = collapser.profile()

    log = sample_log()
    streamed = PerfCollapser(FoldOptions.with_all(sample_hook=log), Diagnostics(echo=False))
    fold_blocks(streamed, log.tap(iter_blocks(io.BytesIO(text), size=4096)), "script.txt")
    assert streamed.profile().counts == fold_unjoined(text)  # the hook changes nothing while folding
    assert len(log) == sum(expected.counts.values())
    kept = log.evidence(alignment())
    assert kept.engine_times == evidence.engine_times  # ExecuteOprBlock's samples, read from the kept stacks
    later = joiner(kept.engine_times, evidence.switches, evidence.last)
    assert log.joined(later) == expected.counts
    assert any("[op] " in stack for stack in expected.counts)
    assert summary_lines(summarize(later)) == summary_lines(summarize(whole))


def fold_unjoined(text: bytes) -> dict[str, float]:
    collapser = PerfCollapser(FoldOptions.with_all(), Diagnostics(echo=False))
    fold_blocks(collapser, iter_blocks(io.BytesIO(text)), "script.txt")
    return collapser.profile().counts


def test_a_sample_without_a_time_is_kept_unjoined() -> None:
    log = sample_log(tid=True)
    assert log(b"python 4242/4243 123.500000: cpu-clock:", [b"leaf", b"main"]) == [b"leaf", b"main"]
    log(b"python 4242/4243 cpu-clock:", [b"leaf", b"main"])
    evidence = parse_evidence(io.BytesIO(b""), alignment())
    counts = log.joined(joiner(evidence.engine_times, {}, 0.0))
    assert counts == {"python-4242/4243;main;leaf": 2}


# -- real perf, real MXNet ------------------------------------------------------------------------

COVERAGE = re.compile(r"mxnet: ([0-9.]+) % of ([0-9,]+) engine-thread samples under an \[op\] frame")
ROW = re.compile(r"^\s+[0-9,]+\s.*\s([0-9,]+)\s+(\[(?:op|segment)\] .+)$")  # samples ... calls frame


def operator_table(stderr: str) -> dict[str, int]:
    """The operator table's named rows: frame -> calls the profiler timed."""
    table = stderr.split("MXNet operators (", 1)[1].split("oneDNN primitives", 1)[0]
    rows = [m for line in table.splitlines() if (m := ROW.match(line))]
    return {m.group(2): int(m.group(1).replace(",", "")) for m in rows if not m.group(2).partition("] ")[2][:1] == "("}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    tmp = tmp_path_factory.mktemp("mxnet-streamed")
    (tmp / "mlp.py").write_text(MLP.replace("range(3)", "range(16)"))  # (~10 s: joins while it runs)
    found = {}
    joining = {**os.environ, "FLAMEGRAPH_MXNET_JOIN_BYTES": "16384"}  # ~1,000 samples: joined as the run goes
    for name, extra, env in (("streamed", ["--max-spool", "64M", "--every", "2"], None),
                             ("whole", ["--max-spool", "0", "--perf-data", str(tmp / "perf.data")], None),
                             ("joining", ["--max-spool", "64M"], joining)):  # fmt: skip
        argv = [*FLAMEGRAPH, "record", "--mxnet", *extra, "--folded", str(tmp / f"{name}.folded"),
                "-o", str(tmp / f"{name}.svg"), "--", sys.executable, str(tmp / "mlp.py")]  # fmt: skip
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        found[name] = (proc, tmp)
    return found


@pytest.mark.perf
@pytest.mark.mxnet
@pytest.mark.parametrize("name", ["streamed", "joining"])
def test_streamed_mxnet_gives_the_whole_recordings_operators(
    runs: dict[str, tuple[subprocess.CompletedProcess[str], Path]], name: str
) -> None:
    """Folded while recording (raw data bounded, several chunks) and joined at the end, or also as the run goes
    (a 16 kB budget of kept samples): the operator-named share within 2 points of `--max-spool 0`'s and the
    same operator table (operators and their calls)."""
    streamed, tmp = runs[name]
    whole, _ = runs["whole"]
    assert "recorded whole" not in streamed.stderr
    joins = re.search(r"mxnet: join while recording: ([0-9,]+) samples in (\d+) joins", streamed.stderr)
    if name == "joining":
        assert joins is not None and int(joins.group(2)) >= 1, streamed.stderr[-3000:]
    else:  # (--max-spool 64M: 4 MB of kept samples, 250,000; the run has a few thousand)
        assert "mxnet: join while recording: none: the kept samples" in streamed.stderr, streamed.stderr[-3000:]
    chunks = re.search(r"folded as recorded in (\d+) chunks \(raw data on disk at most ([0-9.]+) MB", streamed.stderr)
    assert chunks is not None and int(chunks.group(1)) >= 2, streamed.stderr[-3000:]
    assert "folding could not keep up" not in streamed.stderr  # every sample folded: a fair comparison
    shares = [COVERAGE.search(proc.stderr) for proc in (streamed, whole)]
    assert all(shares), streamed.stderr[-3000:]
    (a, n), (b, m) = ((float(s.group(1)), int(s.group(2).replace(",", ""))) for s in shares if s is not None)
    # Two runs: a couple of points, or three standard errors of the difference when the samples are few.
    p = (a * n + b * m) / (n + m) / 100
    assert abs(a - b) <= max(2.0, 300 * math.sqrt(p * (1 - p) * (1 / n + 1 / m))) and a >= 90.0, (a, n, b, m)
    ops_streamed, ops_whole = operator_table(streamed.stderr), operator_table(whole.stderr)
    assert {"[op] FullyConnected", "[op] _backward_FullyConnected", "[op] multi_sgd_mom_update"} <= set(ops_streamed)
    busy = {op for op, calls in ops_whole.items() if calls >= 100}
    assert busy <= set(ops_streamed)
    for op in busy:  # the calls inside the first and last samples: equal but for the edges
        assert abs(ops_streamed[op] - ops_whole[op]) <= 0.02 * ops_whole[op] + 2, (op, ops_streamed, ops_whole)
    svg = (tmp / f"{name}.svg").read_text()
    assert "MXNet coverage: " in svg and "[op] FullyConnected: " in svg and "raw data on disk" in svg
    assert "[op] FullyConnected" in (tmp / f"{name}.folded").read_text()


@pytest.mark.perf
@pytest.mark.mxnet
def test_streamed_mxnet_writes_intervals_and_says_they_carry_no_operators(
    runs: dict[str, tuple[subprocess.CompletedProcess[str], Path]],
) -> None:
    streamed, tmp = runs["streamed"]
    assert "the interval graphs carry no [op]/[dnnl] frames" in streamed.stderr
    intervals = sorted(tmp.glob("streamed-0*.folded"))
    assert len(intervals) >= 2 and (tmp / "streamed-trend.svg").is_file()
    assert not any("[op] " in path.read_text() for path in intervals)


@pytest.mark.perf
@pytest.mark.mxnet
def test_the_deferred_join_of_the_whole_perf_data_is_the_whole_join(
    runs: dict[str, tuple[subprocess.CompletedProcess[str], Path]],
) -> None:
    """The whole run's perf.data folded as one chunk through the streamed path (its switches tapped from the
    fold's text, the evidence from the kept samples) and joined after: the whole run's stacks, exactly."""
    from flamegraph.frameworks.mxnet.deferred import DeferredJoin
    from flamegraph.frameworks.mxnet.hook import MxnetHook
    from flamegraph.io.folded import read_folded
    from flamegraph.naming.grouping import namer_for_recording
    from flamegraph.naming.observer import FrameObserver
    from flamegraph.record import Recording, RecordSpec, script_args
    from flamegraph.record.chunk_threads import ThreadNames

    _, tmp = runs["whole"]
    data = tmp / "perf.data"
    hook = MxnetHook(tmp / "perf.data.mxnet", note=lambda line: None, hooked=True)
    recording = hook.finish(Recording(data, RecordSpec(command=("python",)), {}, 1.0))
    deferred = DeferredJoin(hook, root_of())
    options = FoldOptions.with_all(frame_hook=FrameObserver(namer_for_recording(str(data))), sample_hook=deferred.log)
    collapser = PerfCollapser(options, Diagnostics(echo=False))
    deferred.fold_chunk(collapser, str(data), script_args(recording), ThreadNames().blocks)
    profile = collapser.profile()
    deferred.join(profile, recording)
    with open(tmp / "whole.folded", "rb") as f:
        expected = read_folded(f, "whole.folded", Diagnostics(echo=False))
    assert profile.counts == expected.counts


def test_samples_after_the_cap_are_not_joined() -> None:
    """The instruments stopped at their files' cap (`until`, perf's clock): a sample after it gets no frame of
    theirs and is counted; one before is joined as ever."""
    evidence = parse_evidence(io.BytesIO((FIXTURE / "evidence.txt").read_bytes()), alignment())
    text = (FIXTURE / "script.txt").read_bytes()
    folded = {}
    for until in (None, 0.0):
        join = joiner(evidence.engine_times, evidence.switches, evidence.last)
        join.until = until
        collapser = PerfCollapser(FoldOptions.with_all(sample_hook=join), Diagnostics(echo=False))
        fold_blocks(collapser, iter_blocks(io.BytesIO(text), size=4096), "script.txt")
        folded[until] = (collapser.profile().counts, join.counts)
    (named, named_counts), (cut, cut_counts) = folded[None], folded[0.0]
    assert any("[op] " in stack for stack in named) and named_counts.after_cap == 0
    assert not any("[op] " in stack or "[dnnl] " in stack for stack in cut)
    assert cut_counts.after_cap == cut_counts.samples - sum(
        n for stack, n in cut.items() if "[instrumentation]" in stack
    ) and cut_counts.engine == 0


@pytest.mark.perf
@pytest.mark.mxnet
def test_the_instruments_stop_at_their_cap_and_the_join_says_so(tmp_path: Path) -> None:
    """The first file to near its cap stops both instruments; the note says when, the operators before it are
    named, the samples after it are counted unjoined. (FLAMEGRAPH_MXNET_CAPS: caps smaller than --max-spool's
    split, 56 + 8 MB here, which the 3-epoch MLP never fills; a smaller --max-spool makes the fold drop chunks
    on a loaded machine.)"""
    (tmp_path / "mlp.py").write_text(MLP)
    argv = [*FLAMEGRAPH, "record", "--mxnet", "--max-spool", "64M", "--folded", str(tmp_path / "a.folded"),
            "-o", str(tmp_path / "a.svg"), "--", sys.executable, str(tmp_path / "mlp.py")]  # fmt: skip
    env = {**os.environ, "FLAMEGRAPH_MXNET_CAPS": "20000000,1000000", "FLAMEGRAPH_MXNET_SEGMENTS": "0"}  # one file
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cap = re.search(r"--mxnet: pid \d+: (MXNet's trace|oneDNN's verbose log) neared its (\d+) MB cap \(([0-9.]+) MB\) "
                    r"at ([0-9.]+) s of ([0-9.]+) s: .* named up to then", proc.stderr)  # fmt: skip
    assert cap is not None, proc.stderr[-3000:]
    assert cap.group(2) == ("20" if cap.group(1) == "MXNet's trace" else "1")
    assert float(cap.group(4)) < float(cap.group(5))
    after = re.search(r"mxnet: ([0-9,]+) of ([0-9,]+) samples came after the instruments were stopped", proc.stderr)
    assert after is not None and int(after.group(1).replace(",", "")) > 0, proc.stderr[-3000:]
    assert "[op] FullyConnected" in (tmp_path / "a.folded").read_text()
    svg = (tmp_path / "a.svg").read_text()
    assert "MXNet instruments: " in svg and "MXNet after the cap: " in svg


@pytest.mark.perf
@pytest.mark.mxnet
def test_segments_read_as_recorded_name_the_whole_run_under_small_caps(tmp_path: Path) -> None:
    """A trace cap below what the 3-epoch MLP writes (8 MB; it writes ~10 MB of trace; the log's 6 MB leaves its
    ~1.5 MB/s the limits' headroom even when our reader lags a second on a loaded machine),
    the files in segments read as the run goes: no stop, every sample joined, the operators named to the end."""
    (tmp_path / "mlp.py").write_text(MLP)
    argv = [*FLAMEGRAPH, "record", "--mxnet", "--max-spool", "64M", "--folded", str(tmp_path / "a.folded"),
            "-o", str(tmp_path / "a.svg"), "--", sys.executable, str(tmp_path / "mlp.py")]  # fmt: skip
    env = {**os.environ, "FLAMEGRAPH_MXNET_CAPS": "8000000,6000000"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stopped = re.search(r"--mxnet: pid \d+: .*neared.*", proc.stderr)
    assert stopped is None and "came after the instruments" not in proc.stderr, (stopped, proc.stderr[-3000:])
    sizes = re.search(r"profiler trace ([0-9.]+) MB \(in segments, ([0-9.]+) MB read while it ran\)",
                      (tmp_path / "a.svg").read_text())  # fmt: skip
    # at least its cap (printed to 0.1 MB: 8.03 MB reads "8.0"; on a fast machine the 3 epochs write about that)
    assert sizes is not None and float(sizes.group(1)) >= 8
    assert float(sizes.group(2)) > 0, sizes.group(0)
    share = COVERAGE.search(proc.stderr)
    assert share is not None and float(share.group(1)) >= 90.0, proc.stderr[-3000:]
    assert "[op] FullyConnected" in (tmp_path / "a.folded").read_text()


@pytest.mark.perf
@pytest.mark.mxnet
def test_readers_over_their_memory_budget_stop_the_instruments_and_name_nothing_after(tmp_path: Path) -> None:
    """The spans and executions read as the run goes pass the readers' budget (FLAMEGRAPH_MXNET_MEMORY, 0.1 MB:
    ~3,300 spans; the run reads ~15,000): the instruments stop as at a cap, one line says so, the samples after
    get no [op] frame."""
    # 8 epochs: 3 of a fast quiet machine (~1 s) ended before the trace neared its cap, so nothing was read while
    # the run went and the budget was never passed
    (tmp_path / "mlp.py").write_text(MLP.replace("range(3)", "range(8)"))
    argv = [*FLAMEGRAPH, "record", "--mxnet", "--max-spool", "64M", "--folded", str(tmp_path / "a.folded"),
            "-o", str(tmp_path / "a.svg"), "--", sys.executable, str(tmp_path / "mlp.py")]  # fmt: skip
    env = {**os.environ, "FLAMEGRAPH_MXNET_CAPS": "8000000,2000000", "FLAMEGRAPH_MXNET_MEMORY": "100000"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = re.search(r"--mxnet: pid \d+: flamegraph's readers held ([0-9.]+) MB of spans and executions, over "
                     r"their 0.1 MB budget \(--max-spool\), at [0-9.]+ s of [0-9.]+ s: MXNet's profiler and oneDNN's "
                     r"verbose log stopped; operators and primitives named up to then", proc.stderr)  # fmt: skip
    assert line is not None, proc.stderr[-3000:]
    after = re.search(r"mxnet: ([0-9,]+) of ([0-9,]+) samples came after the instruments were stopped", proc.stderr)
    assert after is not None and int(after.group(1).replace(",", "")) > 0, proc.stderr[-3000:]
    assert "[op] FullyConnected" in (tmp_path / "a.folded").read_text()
    svg = (tmp_path / "a.svg").read_text()
    assert "MXNet instruments: flamegraph" in svg and "readers held" in svg and "MXNet after the cap: " in svg
