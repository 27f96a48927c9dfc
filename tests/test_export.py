"""Exports without their clients: reversible names, the shape of each format, `convert` and
`render --format` on the command line (the clients read them back in test_export_clients.py)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import REPO
from hypothesis import given
from hypothesis import strategies as st

from flamegraph.export import ExportError, format_of, sampling_interval_ns, threaded
from flamegraph.export.chrome_trace import category, render_chrome_trace
from flamegraph.export.names import export_name, import_name
from flamegraph.export.pprof import pprof_message, render_pprof, sampling_period_ns
from flamegraph.export.pprof_schema import message_classes
from flamegraph.export.speedscope import render_speedscope
from flamegraph.export.timeline import read_offcpu_timeline, read_timeline
from flamegraph.folding.offcpu import fold_offcpu
from flamegraph.folding.perf import FoldOptions
from flamegraph.io.folded import decode
from flamegraph.model import FoldedProfile

SAMPLE = REPO / "sample_data" / "mlp-oncpu.perf.txt.gz"
OFFCPU_SAMPLE = REPO / "sample_data" / "mlp-offcpu.perf.txt.gz"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "flamegraph", *args], capture_output=True, input=stdin, timeout=120)


# -- names -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw, shown",
    [
        (b"caf\xe9", "caf\\xe9"),
        (b"C:\\x41", "C:\\x5cx41"),  # a literal backslash that would read as an escape
        (b"a\\b", "a\\b"),  # one that would not stays
        (b"std::vector<int>&", "std::vector<int>&"),
        ("\u202eevil\u202c".encode(), "\u202eevil\u202c"),  # bidi controls are the recorded truth: kept
        ("caf\u00e9".encode(), "caf\u00e9"),
    ],
)
def test_export_name_escapes_only_what_json_and_protobuf_cannot_hold(raw: bytes, shown: str) -> None:
    assert export_name(decode(raw)) == shown
    assert import_name(shown).encode("utf-8", "surrogateescape") == raw


@given(st.binary(max_size=60))
def test_export_name_is_valid_unicode_and_reversible(raw: bytes) -> None:
    shown = export_name(decode(raw))
    shown.encode("utf-8")  # strict: no surrogate left
    assert import_name(shown).encode("utf-8", "surrogateescape") == raw


# -- formats from names ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, fmt",
    [("a.speedscope.json", "speedscope"), ("a.json", "chrome-trace"), ("A.TRACE.JSON", "chrome-trace"),
     ("a.pb.gz", "pprof"), ("a.pprof", "pprof"), ("a.svg", "svg"), ("a.folded", "folded"), ("a.txt", None)],
)  # fmt: skip
def test_format_of_takes_the_longest_ending(name: str, fmt: str | None) -> None:
    assert format_of(name) == fmt


# -- speedscope --------------------------------------------------------------------------------------------
THREADS = FoldedProfile(
    {"python-42/43;main;gemm": 7, "python-42/43;main;io": 3, "python-42/44;start_thread;wait": 5},
    event="cpu-clock",
    metadata={"command": "python train.py", "frequency": "499 Hz"},
)


def test_speedscope_one_profile_per_thread_heaviest_first_frames_shared() -> None:
    doc = json.loads(render_speedscope(THREADS, "MLP"))
    assert [p["name"] for p in doc["profiles"]] == ["python-42/43", "python-42/44"]
    assert [p["endValue"] for p in doc["profiles"]] == [10, 5]
    names = [f["name"] for f in doc["shared"]["frames"]]
    assert len(names) == len(set(names)) == 7
    first = doc["profiles"][0]
    assert [[names[i] for i in s] for s in first["samples"]] == [
        ["python-42/43", "main", "gemm"], ["python-42/43", "main", "io"]
    ]  # fmt: skip
    assert first["weights"] == [7, 3] and first["unit"] == "none"
    assert doc["name"] == "MLP - cpu-clock, samples - python train.py"
    assert doc["metadata"]["frequency"] == "499 Hz"


def test_speedscope_single_profile_without_thread_roots_and_microseconds_off_cpu() -> None:
    doc = json.loads(render_speedscope(FoldedProfile({"python;a": 1.5, "java;b": 2}, unit="microseconds")))
    assert len(doc["profiles"]) == 1
    assert doc["profiles"][0]["unit"] == "microseconds" and doc["profiles"][0]["endValue"] == 3.5
    assert not threaded(FoldedProfile({"python;a": 1}))


def test_speedscope_is_deterministic() -> None:
    assert render_speedscope(THREADS) == render_speedscope(FoldedProfile(dict(reversed(THREADS.counts.items())),
                                                                        THREADS.unit, THREADS.event,
                                                                        dict(THREADS.metadata)))  # fmt: skip


# -- pprof -------------------------------------------------------------------------------------------------
def _decoded(data: bytes):  # type: ignore[no-untyped-def]
    message = message_classes()["Profile"]()
    message.ParseFromString(gzip.decompress(data))
    return message


def test_pprof_types_period_mapping_labels_comments() -> None:
    profile = FoldedProfile(
        {"python-1/2;main;libmxnet.so+0x62333d0;gemm": 4, "python-1/2;main": 1},
        event="cpu-clock",
        metadata={"frequency": "499 Hz", "date": "2026-11-22T03:16:17+00:00"},
    )
    message = _decoded(render_pprof(profile, "t"))
    strings = list(message.string_table)
    assert [(strings[t.type], strings[t.unit]) for t in message.sample_type] == [
        ("samples", "count"), ("cpu", "nanoseconds")
    ]  # fmt: skip
    assert message.period == 2004008 and strings[message.default_sample_type] == "cpu"
    names = {f.id: strings[f.name] for f in message.function}
    assert sorted(names.values()) == ["gemm", "libmxnet.so+0x62333d0", "main", "python-1/2"]
    mapped = [loc for loc in message.location if loc.mapping_id]
    assert len(mapped) == 1 and mapped[0].address == 0x62333D0
    assert [strings[m.filename] for m in message.mapping] == ["python", "libmxnet.so"]  # the program first
    assert mapped[0].mapping_id == 2
    stacks = {
        tuple(names[message.location[i - 1].line[0].function_id] for i in s.location_id): tuple(s.value)
        for s in message.sample
    }
    assert stacks == {("gemm", "libmxnet.so+0x62333d0", "main", "python-1/2"): (4, 4 * 2004008),
                      ("main", "python-1/2"): (1, 2004008)}  # fmt: skip
    assert all(strings[s.label[0].str] == "python-1/2" for s in message.sample)
    assert "frequency: 499 Hz" in [strings[c] for c in message.comment]
    assert message.time_nanos == int(datetime(2026, 11, 22, 3, 16, 17, tzinfo=UTC).timestamp()) * 10**9


@pytest.mark.parametrize(
    ("counts", "metadata", "first"),
    [
        ({"tmpl;main;libgcc_s.so.1+0x154a0": 1}, {"command": "./tmpl 20"}, "tmpl"),
        ({"python-1/2;f": 1, "python-1/3;g": 1}, {"command": "pid 42: /usr/bin/python3 -m x"}, "python3"),
        ({"python;f": 1}, {"command": "'./a b' 1", "program": "/opt/py/bin/python3.12"}, "python3.12"),
        ({"w-1/2;f;libz.so+0x10": 1, "w-1/3;g": 1}, {}, "w"),  # one comm in every root
        ({"sh;f": 1, "gzip;libz.so+0x10": 1}, {}, ""),  # several programs: none named, not libz.so
    ],
)
def test_pprof_mapping_1_is_the_profiled_program(
    counts: dict[str, float], metadata: dict[str, str], first: str
) -> None:
    """a-F11: `go tool pprof` names the profile after mapping 1 ("File: ..."): the program, never the
    first library an [unknown] frame was grouped into."""
    message = _decoded(render_pprof(FoldedProfile(counts, metadata=metadata)))
    strings = list(message.string_table)
    assert message.mapping[0].id == 1 and strings[message.mapping[0].filename] == first
    assert "libz.so" not in [strings[m.filename] for m in message.mapping[:1]]


def test_pprof_frames_of_the_program_itself_use_mapping_1() -> None:
    profile = FoldedProfile({"prog;prog+0x10e0;libc.so.6+0x2": 1}, metadata={"command": "./prog"})
    message = _decoded(render_pprof(profile))
    strings = list(message.string_table)
    mappings = [(m.id, strings[m.filename], m.memory_limit) for m in message.mapping]
    assert mappings == [(1, "prog", 0x10E1), (2, "libc.so.6", 3)]


def test_pprof_of_nothing_known_and_nothing_mapped_has_no_mapping() -> None:
    assert len(_decoded(render_pprof(FoldedProfile({"a;b": 1, "c;d": 1}))).mapping) == 0


def test_pprof_without_a_known_clock_rate_holds_samples_only() -> None:
    assert sampling_period_ns(FoldedProfile({"a": 1}, event="cycles", metadata={"frequency": "499 Hz"})) is None
    assert sampling_period_ns(FoldedProfile({"a": 1}, event="cpu-clock")) is None
    assert sampling_interval_ns({"frequency": "every event"}) is None
    message = _decoded(render_pprof(FoldedProfile({"a;b": 3})))
    assert len(message.sample_type) == 1 and message.period == 0


def test_pprof_off_cpu_microseconds_and_fractions() -> None:
    message = _decoded(render_pprof(FoldedProfile({"t-1;[S]": 12.5}, unit="microseconds")))
    strings = list(message.string_table)
    assert (strings[message.sample_type[0].type], strings[message.sample_type[0].unit]) == ("off_cpu", "nanoseconds")
    assert message.sample[0].value[0] == 12500
    with pytest.raises(ExportError, match="whole numbers"):
        pprof_message(FoldedProfile({"a": 0.5}))


# -- Chrome trace -----------------------------------------------------------------------------------------
PERF_SCRIPT = b"""\
python 10/11 100.000000: cpu-clock:
\t    1 gemm (/lib/libx.so)
\t    2 main (/usr/bin/python3)

python 10/11 100.002000: cpu-clock:
\t    1 gemm (/lib/libx.so)
\t    2 main (/usr/bin/python3)

python 10/11 100.004000: cpu-clock:
\t    3 io (/lib/libx.so)
\t    2 main (/usr/bin/python3)

python 10/11 100.050000: cpu-clock:
\t    2 main (/usr/bin/python3)

worker 10/12 100.001000: cpu-clock:
\t    4 spin (/lib/libx.so)
"""


def trace_of(text: bytes, interval_ns: int | None = None) -> dict:  # type: ignore[type-arg]
    timeline = read_timeline(text.splitlines(keepends=True), "t", interval_ns=interval_ns)
    return json.loads(render_chrome_trace(timeline, "t"))


def test_chrome_trace_merges_runs_nests_and_leaves_idle_time_empty() -> None:
    doc = trace_of(PERF_SCRIPT, interval_ns=2_000_000)
    slices = [(e["tid"], e["name"], e["ts"], e["dur"]) for e in doc["traceEvents"] if e["ph"] == "X"]
    assert slices == [
        (11, "python-10/11", 100_000_000, 6000),  # three touching samples: one slice per shared frame
        (11, "main", 100_000_000, 6000),
        (11, "gemm", 100_000_000, 4000),
        (11, "io", 100_004_000, 2000),
        (11, "python-10/11", 100_050_000, 2000),  # 44 ms later: off-CPU in between, not drawn
        (11, "main", 100_050_000, 2000),
        (12, "worker-10/12", 100_001_000, 2000),
        (12, "spin", 100_001_000, 2000),
    ]
    names = {(e["name"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"}
    assert names == {("process_name", 0): "python", ("thread_name", 11): "python", ("thread_name", 12): "worker"}
    assert doc["otherData"]["sampling interval"] == "2.000 ms"


def test_chrome_trace_categories_mark_operators_kernel_and_jit_frames() -> None:
    text = PERF_SCRIPT.replace(b"gemm (/lib/libx.so)", b"[op] FullyConnected (/lib/libx.so)").replace(
        b"io (/lib/libx.so)", b"schedule ([kernel.kallsyms])"
    )
    timeline = read_timeline(text.splitlines(keepends=True), "t", FoldOptions.with_all(tid=True), interval_ns=2_000_000)
    doc = json.loads(render_chrome_trace(timeline))
    categories = {e["name"]: e["cat"] for e in doc["traceEvents"] if e["ph"] == "X"}
    assert categories["[op] FullyConnected"] == "operator" and categories["schedule_[k]"] == "kernel"
    assert categories["main"] == "cpu" and category("jit_avx512_gemm_[j]", "samples") == "jit"
    assert category("[S]", "microseconds") == "off-cpu"


def test_chrome_trace_interval_from_the_gaps_when_the_rate_is_unknown() -> None:
    timeline = read_timeline(PERF_SCRIPT.splitlines(keepends=True), "t")
    assert timeline.interval_ns == 2_000_000  # the lower decile of 2, 2 and 46 ms


def check_trace_event_format(doc: dict) -> None:  # type: ignore[type-arg]
    """What a trace viewer requires of complete events: fields, types, strict nesting per thread."""
    assert set(doc) >= {"traceEvents"}
    by_thread: dict[tuple[int, int], list[dict]] = {}  # type: ignore[type-arg]
    for event in doc["traceEvents"]:
        assert event["ph"] in ("X", "M")
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int) and isinstance(event["name"], str)
        if event["ph"] == "X":
            assert isinstance(event["ts"], int) and isinstance(event["dur"], int) and event["dur"] >= 0
            by_thread.setdefault((event["pid"], event["tid"]), []).append(event)
    for events in by_thread.values():
        stack: list[dict] = []  # type: ignore[type-arg]
        for event in events:  # in file order: parents before children
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= event["ts"]:
                stack.pop()
            if stack:
                parent = stack[-1]
                assert parent["ts"] <= event["ts"] and event["ts"] + event["dur"] <= parent["ts"] + parent["dur"]
            stack.append(event)


def test_chrome_trace_of_the_mlp_sample_follows_the_trace_event_format() -> None:
    with gzip.open(SAMPLE) as lines:
        doc = json.loads(render_chrome_trace(read_timeline(lines, str(SAMPLE)), "MLP"))
    check_trace_event_format(doc)
    threads = {e["tid"] for e in doc["traceEvents"] if e["ph"] == "X"}
    with gzip.open(SAMPLE) as lines:  # every sampled thread (how many depends on the recording machine's cores)
        recorded = {line.split()[1] for line in lines if line[:1] not in (b"\t", b"\n", b"#")}
    assert len(threads) == len(recorded) > 1


def test_off_cpu_timeline_holds_the_folded_microseconds() -> None:
    """The trace draws each wait the off-CPU folder counts, where it happened."""
    with gzip.open(OFFCPU_SAMPLE) as lines:
        timeline = read_offcpu_timeline(lines, str(OFFCPU_SAMPLE))
    spans: Counter[str] = Counter()
    for span in timeline.spans:
        spans[";".join(span.stack)] += (span.end - span.start) / 1000
    folded = fold_offcpu([str(OFFCPU_SAMPLE)]).counts
    assert spans.keys() == folded.keys()
    assert all(abs(spans[k] - folded[k]) < 1 for k in folded)


# -- the command line -------------------------------------------------------------------------------------------
def test_convert_infers_formats_from_names(tmp_path: Path) -> None:
    conversions = [(SAMPLE, name) for name in ("m.speedscope.json", "m.json", "m.folded")]
    conversions += [(tmp_path / "m.folded", name) for name in ("m.pb.gz", "m.svg")]  # folded in: no re-fold
    for source, name in conversions:
        done = run("convert", str(source), str(tmp_path / name))
        assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "m.speedscope.json").read_bytes())["$schema"].endswith("file-format-schema.json")
    assert "traceEvents" in json.loads((tmp_path / "m.json").read_bytes())
    assert (tmp_path / "m.svg").read_bytes().startswith(b"<?xml")
    assert gzip.decompress((tmp_path / "m.pb.gz").read_bytes())
    # folded in, speedscope out: the same stacks as `fold --tid --all` gives
    again = run("convert", str(tmp_path / "m.folded"), str(tmp_path / "n.speedscope.json"))
    assert again.returncode == 0, again.stderr
    direct, via_folded = (json.loads((tmp_path / n).read_bytes()) for n in ("m.speedscope.json", "n.speedscope.json"))
    assert (direct["shared"], direct["profiles"]) == (via_folded["shared"], via_folded["profiles"])
    # the event reaches the second conversion through m.folded.json, the capture facts written beside it
    assert direct["metadata"]["event"] == "cpu-clock" and via_folded["metadata"]["event"] == "cpu-clock"


def test_convert_off_cpu_recording_is_paired_in_microseconds(tmp_path: Path) -> None:
    done = run("convert", str(OFFCPU_SAMPLE), str(tmp_path / "w.speedscope.json"))
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "w.speedscope.json").read_bytes())
    assert {p["unit"] for p in doc["profiles"]} == {"microseconds"}
    assert doc["metadata"]["event"] == "sched:sched_switch"
    trace = run("convert", str(OFFCPU_SAMPLE), str(tmp_path / "w.json"))
    assert trace.returncode == 0, trace.stderr
    check_trace_event_format(json.loads((tmp_path / "w.json").read_bytes()))


def test_convert_reads_stdin_and_writes_stdout_with_to() -> None:
    folded = b"a;b 3\na;c 1\n"
    done = run("convert", "-", "-", "--to", "speedscope", stdin=folded)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["profiles"][0]["endValue"] == 4


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["IN", "out.txt"], 2, "cannot tell the format from the name"),
        (["IN", "out.json"], 2, "chrome-trace needs each sample's time"),
        (["IN", "-"], 2, "writing to stdout needs --to FORMAT"),
        (["IN", "x.svg", "--to", "png"], 2, "--to 'png'"),
        (["missing.folded", "x.svg"], 4, "missing.folded: no such file"),
        (["EMPTY", "x.svg"], 3, "no stacks found"),
        (["TRUNCATED", "x.svg"], 4, "truncated or corrupt gzip data"),
    ],
)
def test_convert_mistakes_are_one_line_with_the_documented_code(
    tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    folded = tmp_path / "in.folded"
    folded.write_bytes(b"a;b 3\n")
    (tmp_path / "empty.folded").write_bytes(b"")
    (tmp_path / "cut.folded.gz").write_bytes(gzip.compress(b"a;b 3\n" * 1000)[:40])
    named = {"IN": folded, "EMPTY": tmp_path / "empty.folded", "TRUNCATED": tmp_path / "cut.folded.gz"}
    args = [str(named[a]) if a in named else a for a in args]
    args = [str(tmp_path / a) if a.startswith(("out", "x.", "missing")) else a for a in args]
    done = run("convert", *args)
    assert done.returncode == code, done.stderr
    assert message in done.stderr.decode() and b"Traceback" not in done.stderr
    assert len(done.stderr.decode().strip().splitlines()) == 1
    assert not list(tmp_path.glob("out*")) and not list(tmp_path.glob("x.*"))


def test_render_format_writes_the_export_and_keeps_the_svg_default(tmp_path: Path) -> None:
    folded = tmp_path / "in.folded"
    folded.write_bytes(b"python-1/2;a;b 3\npython-1/3;c 1\n")
    done = run("render", str(folded), "--format", "speedscope", "--unit", "microseconds", "--title", "T",
               "-o", str(tmp_path / "o.speedscope.json"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "o.speedscope.json").read_bytes())
    assert doc["name"].startswith("T - ") and {p["unit"] for p in doc["profiles"]} == {"microseconds"}
    assert run("render", str(folded), "-o", str(tmp_path / "o.svg")).returncode == 0
    assert (tmp_path / "o.svg").read_bytes().startswith(b"<?xml")
    bad = run("render", str(folded), "--format", "chrome-trace", "-o", str(tmp_path / "o.json"))
    assert bad.returncode == 2 and b"needs each sample's time" in bad.stderr
    png = run("render", str(folded), "--format", "pprof", "--png", str(tmp_path / "o.png"))
    assert png.returncode == 2 and b"--png draws the SVG" in png.stderr


# -- a differential folded file: one reader decides, for every command ---------------------------------
DIFFERENTIAL = b"main;a 5 10\nmain;b 3 1\n"


@pytest.mark.parametrize("out", ["o.speedscope.json", "o.pb.gz"])
def test_convert_refuses_a_differential_file_for_one_count_formats(tmp_path: Path, out: str) -> None:
    """`convert d.folded o.speedscope.json` named the frames `a 5` (BEFORE read into the name)."""
    source = tmp_path / "d.folded"
    source.write_bytes(DIFFERENTIAL)
    for args in (["convert", str(source), str(tmp_path / out)], ["render", str(source), "-o", str(tmp_path / out),
                 "--format", format_of(out) or ""]):  # fmt: skip
        result = run(*args)
        assert result.returncode == 3, result.stderr
        assert result.stderr.decode().count("\n") == 1 and "differential" in result.stderr.decode()
        assert not (tmp_path / out).exists()


def test_convert_of_a_differential_file_draws_what_render_draws(tmp_path: Path) -> None:
    """`convert d.folded o.svg` drew a plain graph where `render` drew a differential one."""
    source = tmp_path / "d.folded"
    source.write_bytes(DIFFERENTIAL)
    converted = run("convert", str(source), str(tmp_path / "c.svg"))
    rendered = run("render", str(source), "-o", str(tmp_path / "r.svg"))
    assert converted.returncode == rendered.returncode == 0, converted.stderr + rendered.stderr
    svg = (tmp_path / "c.svg").read_text()
    assert svg == (tmp_path / "r.svg").read_text()
    assert "<title>a (before 5, after 10 samples: +5 / +100.0%; self +5; 90.91% of after)</title>" in svg
    assert "a 5" not in svg


def test_convert_to_folded_keeps_both_counts(tmp_path: Path) -> None:
    source = tmp_path / "d.folded"
    source.write_bytes(b"main;b 3 1\nmain;a 5 10\nmain;c 0 2\n")
    for args in (["convert", str(source), "-", "--to", "folded"], ["render", str(source), "--format", "folded"]):
        result = run(*args)
        assert result.returncode == 0, result.stderr
        assert result.stdout == b"main;a 5 10\nmain;b 3 1\nmain;c 0 2\n"


def test_fleet_diff_refuses_a_differential_file(tmp_path: Path) -> None:
    source = tmp_path / "d.folded"
    source.write_bytes(DIFFERENTIAL)
    result = run("fleet", "diff", str(source), "-o", str(tmp_path / "o.svg"))
    assert result.returncode == 4, result.stderr
    assert "two counts per line" in result.stderr.decode() and not (tmp_path / "o.svg").exists()


# -- one rule for every writer: a total past the largest float is refused (exit 3) -------------------
HUGE = f"a;b {int(1.7e308)}\na;c {int(1.7e308)}\n".encode()  # each count holds; their sum does not


@pytest.mark.parametrize("out", ["o.speedscope.json", "o.pb.gz", "o.svg"])
def test_a_total_past_the_largest_float_is_refused_by_every_writer(tmp_path: Path, out: str) -> None:
    """speedscope wrote endValue 3.4e308 (JavaScript reads Infinity) where `render` refused the input."""
    source = tmp_path / "huge.folded"
    source.write_bytes(HUGE)
    for args in (["convert", str(source), str(tmp_path / out)],
                 ["render", str(source), "--format", format_of(out) or "", "-o", str(tmp_path / out)]):  # fmt: skip
        result = run(*args)
        assert result.returncode == 3, result.stderr
        assert result.stderr == b"flamegraph: the counts add up to more than the largest float (1.8e+308)\n"
        assert not (tmp_path / out).exists()


def test_export_writers_refuse_a_total_past_the_largest_float_in_the_library() -> None:
    from flamegraph.io.diagnostics import BadCounts

    profile = FoldedProfile({"a;b": 1.7e308, "a;c": 1.7e308})
    for writer in (render_speedscope, render_pprof):
        with pytest.raises(BadCounts):
            writer(profile)


def test_folded_text_states_no_total_and_is_copied_as_it_is(tmp_path: Path) -> None:
    source = tmp_path / "huge.folded"
    source.write_bytes(HUGE)
    result = run("convert", str(source), "-", "--to", "folded")
    assert result.returncode == 0 and result.stdout == HUGE, result.stderr


def test_the_python_api_writes_every_profile_format(tmp_path: Path) -> None:
    """`export.write(profile, format, path)`: the formats `convert` writes, from Python, with no CLI
    (the export choice lived only in cli/convert.py)."""
    from flamegraph import Diagnostics, export
    from flamegraph.io.folded import read_folded

    profile = FoldedProfile({"main;a": 3, "main;b": 1}, "samples", "cpu-clock")
    files = {"folded": "p.folded", "speedscope": "p.speedscope.json", "pprof": "p.pb.gz", "svg": "p.svg"}
    for fmt, name in files.items():
        export.write(profile, fmt, tmp_path / name, title="api")
    folded = read_folded((tmp_path / "p.folded").read_bytes().splitlines(), "p.folded", Diagnostics(echo=False))
    assert folded.counts == profile.counts
    assert json.loads((tmp_path / "p.speedscope.json").read_text())["name"].startswith("api")
    assert gzip.decompress((tmp_path / "p.pb.gz").read_bytes())
    assert b"main" in (tmp_path / "p.svg").read_bytes()
    with pytest.raises(ExportError, match="differential"):
        export.write(profile, "pprof", tmp_path / "diff.pb.gz", before=profile)
    assert not (tmp_path / "diff.pb.gz").exists()
