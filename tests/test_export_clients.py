"""Each export read back by its real client, not by our reading of a spec:

- speedscope: its own JSON schema (npm package 1.25.0), and the app itself on 127.0.0.1 in headless
  Chromium: it loads the file, and what it exports back holds the same stacks and weights;
- pprof: `go tool pprof` (-top: the same flat and cumulative totals per function; -traces: the same
  stacks and counts);
- Chrome trace: Chrome DevTools' own trace engine (the Performance panel's parser, bundled in
  Chromium) builds each thread's call tree; the stack it holds at each sample's time is the sample's.

Round trips run on the MLP sample recordings and on random profiles with hostile names (bytes that
are not UTF-8, quotes, <>&, bidi controls, backslashes, very long names; `;` in perf symbols)."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from helpers import clients
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flamegraph.export.chrome_trace import render_chrome_trace
from flamegraph.export.pprof import render_pprof
from flamegraph.export.speedscope import render_speedscope
from flamegraph.export.timeline import read_offcpu_timeline, read_timeline
from flamegraph.folding.offcpu import fold_offcpu
from flamegraph.folding.perf import FoldOptions
from flamegraph.folding.stage import fold_perf
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import decode
from flamegraph.model import FoldedProfile

pytestmark = [pytest.mark.interop, pytest.mark.parallel]  # proven beside two busy loops

SAMPLE = REPO / "sample_data" / "mlp-oncpu.perf.txt.gz"
OFFCPU_SAMPLE = REPO / "sample_data" / "mlp-offcpu.perf.txt.gz"
ONCPU = FoldOptions.with_all(tid=True)

HOSTILE = [
    "<init>", "std::vector<int, std::allocator<int> >::push_back(int const&)", "a&b", '"quoted"', "'single'",
    "\u202eevil\u202c", "\u2067rtl\u2069", "\u200f", "x\\x41y", "back\\slash", "tab\there", "  spaced  ",
    "operator<<", "名前", "emoji \U0001f525", "nul\x00byte", "a" * 3000, "[unknown]", "libx.so+0x1f00",
]  # fmt: skip
RAW = st.binary(min_size=1, max_size=16).filter(lambda b: not {59, 10, 13} & set(b)).map(decode)  # no ; \n \r
TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters=";\n\r"), min_size=1, max_size=12)
FRAME = st.one_of(st.sampled_from(HOSTILE), RAW, TEXT)
THREAD_ROOTS = ["python-1/1", "python-1/2", "p\udcffy<&>-3/4", "\u202ecomm-5/6"]


@st.composite
def profiles(draw: st.DrawFn) -> FoldedProfile:
    """Random folded profiles: shared prefixes, thread roots or not, hostile frame names."""
    pool = draw(st.lists(FRAME, min_size=1, max_size=8, unique=True))
    roots = THREAD_ROOTS if draw(st.booleans()) else pool
    stacks = draw(st.lists(st.lists(st.sampled_from(pool), min_size=0, max_size=5), min_size=1, max_size=12))
    counts: dict[str, float] = {}
    for i, stack in enumerate(stacks):
        key = ";".join([draw(st.sampled_from(roots)), *stack])
        counts[key] = counts.get(key, 0) + draw(st.integers(1, 10**6)) + i
    return FoldedProfile(counts, event="cpu-clock")


def folded_stacks(profile: FoldedProfile) -> Counter[tuple[str, ...]]:
    return Counter({tuple(stack.split(";")): weight for stack, weight in profile.counts.items()})


@pytest.fixture(scope="module")
def mlp() -> FoldedProfile:
    return fold_perf([str(SAMPLE)], ONCPU).profile


# -- speedscope: schema ----------------------------------------------------------------------------------
def test_speedscope_files_validate_against_speedscopes_own_schema(mlp: FoldedProfile) -> None:
    from jsonschema import Draft7Validator

    validator = Draft7Validator(clients.speedscope_schema())
    offcpu = fold_offcpu([str(OFFCPU_SAMPLE)])
    hostile = FoldedProfile({";".join(["t-1/2", *HOSTILE]): 3, "t-1/3;" + decode(b"\xff\xfe"): 1.5})
    for profile in (mlp, offcpu, hostile, FoldedProfile({"a;b": 1})):
        errors = [e.message for e in validator.iter_errors(json.loads(render_speedscope(profile, "t")))]
        assert not errors, errors[:3]


# -- pprof: go tool pprof --------------------------------------------------------------------------------------
TOP_LINE = re.compile(r"^ *(\d+) +\S+% +\S+% +(\d+) +\S+%  (.*)$")


def our_totals(profile: FoldedProfile) -> tuple[Counter[str], Counter[str]]:
    """(flat, cum) per function: self weight as the leaf, and weight of the stacks holding it (once)."""
    flat: Counter[str] = Counter()
    cum: Counter[str] = Counter()
    for stack, weight in profile.counts.items():
        frames = stack.split(";")
        flat[frames[-1]] += int(weight)
        for frame in set(frames):
            cum[frame] += int(weight)
    return flat, cum


def test_go_tool_pprof_top_has_our_totals_per_function(tmp_path: Path, mlp: FoldedProfile) -> None:
    path = tmp_path / "mlp.pb.gz"
    path.write_bytes(render_pprof(mlp, "MLP"))
    text = clients.pprof("-top", "-sample_index=samples", "-nodefraction=0", "-nodecount=100000", str(path))
    flat: Counter[str] = Counter()
    cum: Counter[str] = Counter()
    for line in text.split("\n"):
        match = TOP_LINE.match(line)
        if match:
            flat[match.group(3)] += int(match.group(1))
            cum[match.group(3)] += int(match.group(2))
    ours = our_totals(mlp)
    assert +flat == +ours[0] and cum == ours[1]
    assert f"Showing nodes accounting for {int(mlp.total)}, 100% of {int(mlp.total)} total" in text
    assert "Type: samples" in text and "exported by flamegraph-perf" in text


def test_go_tool_pprof_reads_cpu_time_mappings_and_off_cpu_microseconds(tmp_path: Path) -> None:
    profile = FoldedProfile({"py-1/2;main;libmxnet.so+0x62333d0": 3}, event="cpu-clock",
                            metadata={"frequency": "500 Hz"})  # fmt: skip
    (tmp_path / "c.pb.gz").write_bytes(render_pprof(profile))
    raw = clients.pprof("-raw", str(tmp_path / "c.pb.gz"))
    assert "PeriodType: cpu nanoseconds" in raw and "Period: 2000000" in raw
    assert re.search(r"0x62333d0 M=2 libmxnet\.so\+0x62333d0 ", raw)
    assert re.search(r"^1: 0x0/0x0/0x0 py ", raw, re.M)  # the program first: pprof names the profile after it
    assert re.search(r"^2: 0x0/0x62333d1/0x0 libmxnet\.so ", raw, re.M)
    assert "File: py\n" in clients.pprof("-top", str(tmp_path / "c.pb.gz"))
    assert "6ms" in clients.pprof("-top", str(tmp_path / "c.pb.gz"))  # 3 samples at 500 Hz
    offcpu = fold_offcpu([str(OFFCPU_SAMPLE)])
    (tmp_path / "w.pb.gz").write_bytes(render_pprof(offcpu))
    top = clients.pprof("-top", "-nodefraction=0", str(tmp_path / "w.pb.gz"))
    assert "Type: off_cpu" in top
    assert f"of {round(offcpu.total)}us total" in top
    assert clients.pprof_traces(tmp_path / "w.pb.gz", "off_cpu") == folded_stacks(offcpu)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profile=profiles())
def test_pprof_round_trip_through_go_tool_pprof(tmp_path_factory: pytest.TempPathFactory,
                                                profile: FoldedProfile) -> None:  # fmt: skip
    path = tmp_path_factory.mktemp("pprof") / "p.pb.gz"
    path.write_bytes(render_pprof(profile))
    assert clients.pprof_traces(path) == folded_stacks(profile)


# -- speedscope: the app -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def speedscope() -> Iterator[clients.Speedscope]:
    with clients.speedscope_app() as app:
        yield app


def by_root(profile: FoldedProfile) -> dict[str, Counter[tuple[str, ...]]]:
    groups: dict[str, Counter[tuple[str, ...]]] = {}
    for stack, weight in folded_stacks(profile).items():
        groups.setdefault(stack[0], Counter())[stack] += weight
    return groups


@pytest.mark.browser
def test_speedscope_app_loads_the_mlp_and_exports_the_same_stacks(
    speedscope: clients.Speedscope, mlp: FoldedProfile
) -> None:
    speedscope.load(render_speedscope(mlp, "MLP"))
    assert speedscope.title() == "MLP - cpu-clock, samples - speedscope"
    heaviest = max(by_root(mlp).items(), key=lambda item: sum(item[1].values()))
    assert f"{heaviest[0]} (1/4)" in speedscope.toolbar()  # one profile per thread, heaviest first
    assert clients.speedscope_stacks(speedscope.exported()) == by_root(mlp)
    menu = [(root, f"{sum(stacks.values()):,}") for root, stacks in by_root(mlp).items()]
    assert speedscope.profile_menu() == sorted(menu, key=lambda item: -int(item[1].replace(",", "")))


@pytest.mark.browser
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profile=profiles())
def test_speedscope_app_round_trip_of_random_hostile_profiles(
    speedscope: clients.Speedscope, profile: FoldedProfile
) -> None:
    speedscope.load(render_speedscope(profile))
    exported = clients.speedscope_stacks(speedscope.exported())
    if len(exported) == 1 and next(iter(exported)) not in THREAD_ROOTS:
        assert next(iter(exported.values())) == folded_stacks(profile)
    else:
        assert exported == by_root(profile)


# -- Chrome trace: DevTools' trace engine ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def devtools(speedscope: clients.Speedscope) -> clients.DevTools:
    return clients.DevTools(speedscope.driver)


def sample_instants(text_lines: list[bytes]) -> dict[tuple[int, int], list[int]]:
    """(pid, tid) -> each sample's time in µs, straight from the perf script headers."""
    header = re.compile(rb"^\S.*?\s+(\d+)/(\d+)\s+(\d+)\.(\d{6}):")
    instants: dict[tuple[int, int], list[int]] = {}
    for line in text_lines:
        match = header.match(line)
        if match:
            pid, tid = int(match.group(1)), int(match.group(2))
            instants.setdefault((pid, tid), []).append(int(match.group(3)) * 10**6 + int(match.group(4)))
    return instants


@pytest.mark.browser
def test_devtools_trace_engine_reads_the_mlp_trace_with_our_stacks(devtools: clients.DevTools) -> None:
    lines = gzip.decompress(SAMPLE.read_bytes()).splitlines(keepends=True)
    document = json.loads(render_chrome_trace(read_timeline(lines, str(SAMPLE), ONCPU), "MLP"))
    parsed = devtools.parse(document)
    slices = [e for e in document["traceEvents"] if e["ph"] == "X"]
    assert sum(t["entries"] for t in parsed["threads"]) == len(slices)
    assert sorted((t["pid"], t["tid"], t["name"]) for t in parsed["threads"]) == sorted(
        (e["pid"], e["tid"], e["args"]["name"]) for e in document["traceEvents"] if e["name"] == "thread_name"
    )
    assert devtools_folded(parsed, sample_instants(lines)) == fold_perf([str(SAMPLE)], ONCPU).profile.counts


def devtools_folded(parsed: dict[str, Any], instants: dict[tuple[int, int], list[int]]) -> dict[str, float]:
    return {";".join(stack): n for stack, n in clients.devtools_stacks(parsed, instants).items()}


@pytest.mark.browser
def test_devtools_trace_engine_reads_off_cpu_waits(devtools: clients.DevTools) -> None:
    with gzip.open(OFFCPU_SAMPLE) as lines:
        timeline = read_offcpu_timeline(lines, str(OFFCPU_SAMPLE))
    timeline.spans = timeline.spans[:400]  # the first 400 waits: DevTools' parse of all 4,172 takes ~20 s
    parsed = devtools.parse(json.loads(render_chrome_trace(timeline)))
    waits: Counter[tuple[int, str]] = Counter()
    for thread in parsed["threads"]:
        for name, _, dur, depth, category in thread["nodes"]:
            assert category == "off-cpu"
            if depth == 0:
                waits[thread["tid"], clients.import_name(name)] += dur
    ours: Counter[tuple[int, str]] = Counter()
    for span in timeline.spans:
        ours[span.tid, span.stack[0]] += span.end // 1000 - span.start // 1000
    assert waits == ours


PERF_FRAME = st.one_of(
    st.sampled_from(["gemm", "<lambda>&", "a;b", '"q"', "\u202ebidi", "x\\x41", "z" * 2000, "f\xe9"]),
    st.binary(min_size=1, max_size=12)
    .filter(lambda b: not {9, 10, 13, 40, 41} & set(b))
    .map(lambda b: b.strip() or b"s"),
)


@st.composite
def perf_scripts(draw: st.DrawFn) -> bytes:
    """`perf script` text of random threads and stacks at random distinct µs, hostile symbols."""
    threads = [(7, 7, b"python"), (7, 8, b"py<&>"), (9, 10, "\u202ecomm".encode()), (9, 11, b"c\xe9")]
    times = sorted(draw(st.sets(st.integers(0, 200_000), min_size=1, max_size=40)))
    out = []
    for t in times:
        pid, tid, comm = draw(st.sampled_from(threads))
        out.append(b"%s %d/%d %d.%06d: cpu-clock:\n" % (comm, pid, tid, 100 + t // 10**6, t % 10**6))
        for frame in draw(st.lists(PERF_FRAME, min_size=0, max_size=6)):
            symbol = frame.encode("utf-8", "surrogateescape") if isinstance(frame, str) else frame
            dso = draw(st.sampled_from([b"/lib/libx.so", b"[kernel.kallsyms]", b"/usr/bin/python3"]))
            out.append(b"\t    %x %s (%s)\n" % (draw(st.integers(1, 2**48)), symbol, dso))
        out.append(b"\n")
    return b"".join(out)


@pytest.mark.browser
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=perf_scripts())
def test_devtools_round_trip_of_random_perf_script(devtools: clients.DevTools, text: bytes,
                                                    tmp_path_factory: pytest.TempPathFactory) -> None:  # fmt: skip
    lines = text.splitlines(keepends=True)
    timeline = read_timeline(lines, "random", ONCPU, Diagnostics(echo=False))
    parsed = devtools.parse(json.loads(render_chrome_trace(timeline)))
    path = tmp_path_factory.mktemp("perf") / "random.perf.txt"
    path.write_bytes(text)
    folded = fold_perf([str(path)], ONCPU, Diagnostics(echo=False)).profile
    assert devtools_folded(parsed, sample_instants(lines)) == folded.counts
