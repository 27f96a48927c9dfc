"""Bad or missing MXNet inputs: one line each, the graph without those frames, never a failure.

Each malformed shape has its own test, asserting the exact problem line."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from conftest import GOLDEN
from hypothesis import given, settings
from hypothesis import strategies as st

from flamegraph.frameworks.mxnet.clock import Alignment, ClockReading, clock_problems
from flamegraph.frameworks.mxnet.dnnl import parse_line, parse_verbose
from flamegraph.frameworks.mxnet.hook import MxnetHook, load_process, read_sidecars
from flamegraph.frameworks.mxnet.profile import parse_profile, read_profile
from flamegraph.record import Recording, RecordSpec

FIXTURE = GOLDEN / "mxnet"


def event(name: str, ph: str, ts: int, tid: int = 7) -> dict[str, object]:
    return {"name": name, "cat": "operator", "ph": ph, "ts": ts, "pid": 0, "tid": tid}


def trace(*events: dict[str, object]) -> bytes:
    return json.dumps({"traceEvents": list(events), "displayTimeUnit": "ms"}).encode()


def test_a_good_trace_has_spans_and_no_problem() -> None:
    metadata = {"ph": "M", "args": {"name": "cpu/0"}, "pid": 0, "name": "process_name"}
    events = (event("FC", "B", 10), event("FC", "E", 20), event("FC", "b", 10), event("Act", "B", 21))
    t = parse_profile(trace(*events, event("Act", "E", 25), metadata))
    assert t.problems == []
    assert [(s.name, s.start, s.end) for s in t.threads[7].spans] == [("FC", 10, 20), ("Act", 21, 25)]
    assert t.threads[7].at(15).name == "FC" and t.threads[7].at(20.5) is None  # type: ignore[union-attr]


def test_empty_trace() -> None:
    assert parse_profile(b"").problems == ["empty file (the process ended before the profiler dumped)"]


def test_truncated_trace_recovers_complete_events() -> None:
    data = trace(event("FC", "B", 10), event("FC", "E", 20), event("Act", "B", 21), event("Act", "E", 25))
    t = parse_profile(data[: data.index(b'"Act", "cat": "operator", "ph": "E"') + 10])
    assert t.problems[0].startswith("truncated or garbled JSON (") and t.problems[0].endswith(
        ": 3 complete events recovered"
    )
    assert t.problems[1] == "1 operator spans never ended (cut short?)"
    assert [s.name for s in t.threads[7].spans] == ["FC"]


def test_garbled_trace() -> None:
    t = parse_profile(b"\x00\xff garbage {not json} \x89PNG")
    assert t.spans == 0
    assert t.problems == ["truncated or garbled JSON (Expecting value at byte 0): 0 complete events recovered"]


def test_not_a_trace() -> None:
    assert parse_profile(b'{"something": 1}').problems == ["no traceEvents list"]


def test_end_without_begin_and_crossing_ends() -> None:
    t = parse_profile(trace(event("A", "E", 5), event("A", "B", 10), event("B", "B", 12), event("A", "E", 14),
                            event("B", "E", 16)))  # fmt: skip
    assert t.problems == [  # A at 5 has no begin; B's end at 16 finds B already closed by A's crossing end
        "2 span ends without a begin",
        "1 span ends that cross another open span on the same thread (impossible overlap)",
    ]
    assert [(s.name, s.start, s.end) for s in t.threads[7].spans] == [("A", 10, 14)]


def test_overlapping_spans_are_reported_with_figures() -> None:
    t = parse_profile(trace({"name": "A", "cat": "operator", "ph": "X", "ts": 10, "dur": 10, "tid": 3},
                            {"name": "B", "cat": "operator", "ph": "X", "ts": 15, "dur": 10, "tid": 3}))  # fmt: skip
    assert t.problems == ["profiler thread 3: 1 spans overlap without nesting (up to 5 µs)"]


def test_events_without_usable_fields() -> None:
    t = parse_profile(trace({"name": "A", "cat": "operator", "ph": "B", "ts": "soon", "tid": 3}))
    assert t.problems == ["1 operator events without a usable name, thread or time"]


V2 = (b"dnnl_verbose,1795404596604.382080,exec,cpu,inner_product,x64:gemm:jit,forward_training,"
      b"src_f32::blocked:ab:f0 wei_f32::blocked:ab:f0,,,mb64ic784oc128,2.71191")  # fmt: skip


def test_verbose_lines() -> None:
    p = parse_line(V2)
    assert p is not None and not isinstance(p, str)
    assert p.frame == "[dnnl] inner_product forward_training mb64ic784oc128 (x64:gemm:jit)"
    # µs of the epoch in a double: 0.25 µs resolution, far below the sample period
    assert p.start == pytest.approx(1795404596604382.08, abs=0.5) and p.end - p.start == pytest.approx(2711.91, abs=0.5)
    assert parse_line(b"dnnl_verbose,info,oneDNN v2.4.4 (commit 5818c40f)") == "oneDNN v2.4.4 (commit 5818c40f)"
    assert parse_line(b"dnnl_verbose,info,cpu,runtime:OpenMP") == ""
    assert (
        parse_line(b"dnnl_verbose,create:cache_miss,cpu,inner_product,x64:gemm:jit,forward_training,,,,mb1,0.1") == ""
    )
    v3 = V2.replace(b"dnnl_verbose,1795404596604.382080,exec", b"onednn_verbose,1795404596604.382080,primitive,exec")
    assert parse_line(v3) == p


def test_verbose_without_timestamps_is_unreadable() -> None:
    assert (
        parse_line(b"dnnl_verbose,exec,cpu,inner_product,x64:gemm:jit,forward_training,src,,,mb64ic784oc128,2.7")
        is None
    )


def test_verbose_log_with_a_cut_line_and_program_output() -> None:
    log = parse_verbose(
        [b"dnnl_verbose,info,oneDNN v2.4.4 (commit x)\n", b"hello from C\n", V2 + b"\n", V2[:60] + b"\n"]
    )
    assert [p.kind for p in log.primitives] == ["inner_product"]
    assert log.version == "oneDNN v2.4.4 (commit x)" and log.other_lines == 1
    assert log.problems == ["1 verbose lines not understood (first: line 4)"]


def copy_fixture(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    directory = tmp_path / "perf.data.mxnet"
    shutil.copytree(FIXTURE, directory)
    (facts,) = read_sidecars(directory)
    return directory, facts


def test_missing_trace_and_log_are_one_line_each(tmp_path: Path) -> None:
    directory, facts = copy_fixture(tmp_path)
    (directory / str(facts["profile"])).unlink()
    (directory / str(facts["verbose"])).unlink()
    inputs = load_process(facts, directory)
    assert [p.split(": ", 1)[1] for p in inputs.problems] == [
        "cannot read the profiler's trace: No such file or directory",
        "cannot read oneDNN's verbose log: No such file or directory",
    ]
    assert not inputs.usable


def test_verbose_log_without_executions(tmp_path: Path) -> None:
    directory, facts = copy_fixture(tmp_path)
    (directory / str(facts["verbose"])).write_text("dnnl_verbose,info,cpu,runtime:OpenMP\n")
    inputs = load_process(facts, directory)
    assert inputs.verbose is None and inputs.usable  # operators still join
    why = "no primitive executions (DNNL_VERBOSE off, or no oneDNN: no [dnnl] frames)"
    assert inputs.problems == [f"{directory / str(facts['verbose'])}: {why}"]


def test_sidecar_without_exit_reading(tmp_path: Path) -> None:
    directory, facts = copy_fixture(tmp_path)
    facts["clock_end"] = None
    inputs = load_process(facts, directory)
    assert inputs.problems == ["the process did not reach its exit handler: clock measured at start only"]
    assert inputs.alignment is not None and inputs.alignment.end is None


def test_sidecar_without_clock(tmp_path: Path) -> None:
    directory, facts = copy_fixture(tmp_path)
    del facts["clock_start"]
    inputs = load_process(facts, directory)
    assert inputs.problems == ["the sidecar holds no clock reading: nothing can be aligned"] and not inputs.usable


def test_hook_with_nothing_to_join_says_so_in_one_line(tmp_path: Path) -> None:
    notes: list[str] = []
    hook = MxnetHook(tmp_path / "empty", note=notes.append)
    hook.hooked = True
    recording = Recording(tmp_path / "perf.data", RecordSpec(command=("python", "x.py")), {}, 1.0)
    assert hook.finish(recording) is recording
    assert hook.joiner(recording, None) is None
    assert notes == [f"flamegraph: --mxnet: the process left no sidecar in {tmp_path / 'empty'}: no [op]/[dnnl] frames"]


def test_attach_is_an_honest_note(tmp_path: Path) -> None:
    notes: list[str] = []
    hook = MxnetHook(tmp_path, note=notes.append)
    spec = RecordSpec(pid=1)
    assert hook.prepare(spec) == spec
    assert len(notes) == 1 and "no outside switch" in notes[0] and "folding without [op]/[dnnl] frames" in notes[0]


def test_clocks_that_disagree_are_reported_with_figures() -> None:
    start = ClockReading(100.0, 1_000_100.0, 1e-7)
    drifted = Alignment(start, ClockReading(200.0, 1_000_200.003, 1e-7))  # 3 ms of drift over the run
    problems = clock_problems(drifted, 2004.0, {})
    assert problems == [
        "clock residual error 3,000 µs exceeds the sample period 2,004 µs: frames of samples near an "
        "operator's edges may name its neighbour"
    ]
    shifted = clock_problems(Alignment(start), 2004.0, {"samples in ExecuteOprBlock": [(0.0, 0.4), (5000.0, 0.97)]})
    assert shifted == [
        "samples in ExecuteOprBlock: 97.0 % fall inside when shifted by +5,000 µs, 40.0 % at the measured offset: "
        "the clocks seem to disagree by more than the sample period"
    ]


def test_hostile_hook_facts_files_are_skipped_not_a_recursion_error(tmp_path: Path) -> None:
    """The hook's mxnet-PID.json travels with a recording: nested 100,000 deep, or past 1 MiB, it is
    not read (json.loads raised RecursionError on the first)."""
    directory, _ = copy_fixture(tmp_path)
    (directory / "mxnet-1.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    (directory / "mxnet-2.json").write_bytes(b'{"pid": 2, "notes": ["' + b"x" * (1 << 20) + b'"]}')
    assert [facts["pid"] for facts in read_sidecars(directory)] == [facts["pid"] for facts in read_sidecars(FIXTURE)]


@pytest.mark.parametrize("block", [7, 100, 1 << 20])
def test_the_trace_is_read_as_a_stream_whatever_the_blocks(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """Events cut by the reader's blocks are read whole: the same spans as the whole document parsed at once."""
    from flamegraph.frameworks.mxnet import events as reader

    monkeypatch.setattr(reader, "BLOCK", block)
    metadata = {"ph": "M", "args": {"name": "cpu/0"}, "pid": 0, "name": "process_name"}
    spans = [e for i in range(50) for e in (event(f"op{i % 3}", "B", 10 * i), event(f"op{i % 3}", "E", 10 * i + 5))]
    data = json.dumps({"traceEvents": [metadata, *spans], "displayTimeUnit": "ms"}, indent=4).encode()
    t = parse_profile(data)
    assert t.problems == [] and t.events == 101
    expected = [(f"op{i % 3}", 10 * i, 10 * i + 5) for i in range(50)]
    assert [(s.name, s.start, s.end) for s in t.threads[7].spans] == expected


def test_garbage_in_the_middle_of_a_trace_is_said_and_the_rest_recovered(monkeypatch: pytest.MonkeyPatch) -> None:
    from flamegraph.frameworks.mxnet import events as reader

    monkeypatch.setattr(reader, "BLOCK", 64)
    head = json.dumps({"traceEvents": [event("A", "B", 1), event("A", "E", 2)]})[:-2]  # open array, no end
    tail = ", ".join(json.dumps(event("C", ph, ts)) for ph, ts in (("B", 5), ("E", 6)))
    t = parse_profile(f"{head}, {{garbled: ]]] }}, {tail}]}}".encode())
    assert t.problems[0].startswith("truncated or garbled JSON (Expecting property name") and t.problems[0].endswith(
        ": 4 complete events recovered"
    )
    assert [s.name for s in t.threads[7].spans] == ["A", "C"]


def test_reading_a_trace_holds_its_spans_not_the_file(tmp_path: Path) -> None:
    """A 20 MB trace read in under half its size (before the stream: the whole bytes and a dict per event,
    ~5 times the file)."""
    import tracemalloc

    path = tmp_path / "profile.json"
    with open(path, "w") as f:
        f.write('{\n    "traceEvents": [\n')
        f.write(",\n".join(json.dumps(event("FullyConnected", ph, 10 * i + (ph == "E")), indent=4)
                           for i in range(10_000) for ph in "BEbe"))  # fmt: skip
        for chunk in range(1, 4):  # MXNet writes each operator twice: B/E, and the async b/e (skipped)
            f.write(",\n" + ",\n".join(json.dumps(event("Act", ph, 10**7 * chunk + 10 * i + (ph == "E")), indent=4)
                                        for i in range(10_000) for ph in "BEbe"))  # fmt: skip
        f.write('\n    ],\n    "displayTimeUnit": "ms"\n}\n')
    size = path.stat().st_size
    tracemalloc.start()
    try:
        t = read_profile(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert t.spans == 10_000 + 3 * 10_000 and t.problems == []
    assert size > 15e6 and peak < size / 2, (size, peak)


JSON_LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=5), inner, max_size=3), max_leaves=8)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    events=st.lists(JSON_VALUES, max_size=12),
    members=st.dictionaries(st.text(max_size=5).filter(lambda key: key != "traceEvents"), JSON_VALUES, max_size=3),
    bare=st.booleans(),
    indent=st.sampled_from([None, 0, 4]),
    block=st.integers(1, 64),
)
def test_the_streamed_reader_gives_the_events_json_loads_gives(
    events: list[object], members: dict[str, object], bare: bool, indent: int | None, block: int
) -> None:
    """Any document, any indentation, any block size: the event objects in order, and no problem said."""
    from flamegraph.frameworks.mxnet import events as reader

    document = events if bare else {**members, "traceEvents": events}
    data = json.dumps(document, indent=indent, ensure_ascii=False).encode()
    problems: list[str] = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(reader, "BLOCK", block)
        got = list(reader.iter_events(io.BytesIO(data), problems))
    assert got == [e for e in events if isinstance(e, dict)] and problems == []


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300) | st.text(alphabet='{}[]":, \nab1', max_size=120).map(str.encode))
def test_the_streamed_reader_never_raises_and_says_any_damage_in_one_line(data: bytes) -> None:
    from flamegraph.frameworks.mxnet import events as reader

    problems: list[str] = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(reader, "BLOCK", 16)
        got = list(reader.iter_events(io.BytesIO(data), problems))
    assert all(isinstance(e, dict) for e in got) and len(problems) <= 1


def test_a_verbose_line_with_a_tab_is_garbled_not_a_crash_of_the_join() -> None:
    """The log also catches the program's own stdout; a tab would split the stored label wrongly."""
    line = b"dnnl_verbose,1000.0,exec,cpu,inner\tproduct,gemm:jit,forward_training,src_f32,,,mb64ic784oc128,0.5\n"
    log = parse_verbose([V2 + b"\n", line])
    assert len(log) == 1 and log.problems == ["1 verbose lines not understood (first: line 2)"]
    assert [p.kind for p in log.at(log.primitives[0].start)] == [log.primitives[0].kind]
    assert log.aggregate()


def test_storage_counters_are_held_compactly_and_counted_in_what_the_readers_hold() -> None:
    """profile_memory=True writes a counter event per allocation: kept as arrays, counted against the budget."""
    from flamegraph.frameworks.mxnet.profile import Pairing

    pairing = Pairing()
    counter = {"ph": "C", "cat": "Device Storage", "name": "Memory: cpu/0", "pid": 0, "tid": 7}
    for ts, value in [(110, 4096), (120, 6144), (140, 2048)]:
        pairing.add({**counter, "ts": ts, "args": {"Memory: cpu/0": value}})
    pairing.add({**counter, "ts": 150, "args": {"Memory: cpu/0": "garbled"}})
    pairing.add({"ph": "B", "cat": "operator", "name": "FullyConnected", "ts": 100, "pid": 0, "tid": 7})
    pairing.add({"ph": "E", "cat": "operator", "name": "FullyConnected", "ts": 130, "pid": 0, "tid": 7})
    assert len(pairing.counters) == 3 and pairing.held() == 4
