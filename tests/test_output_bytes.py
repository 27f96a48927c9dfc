"""Every writer, given names that hold any bytes at all (frames, comms, the command, the title, capture
facts): its file is what its format allows (JSON and SVG are valid UTF-8 and parse, pprof's strings
are Unicode) and the names read back exact (`\\xNN` for a byte that is not UTF-8, as the SVG shows it).

b-3: a program named with the byte 0xff made `--speedscope` raise (the profile's name, taken from the
command, was written unescaped); the trend page and a folded file's capture facts wrote the raw byte."""

from __future__ import annotations

import gzip
import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flamegraph.export.chrome_trace import render_chrome_trace
from flamegraph.export.names import import_name
from flamegraph.export.pprof import pprof_message, render_pprof
from flamegraph.export.pprof_schema import message_classes
from flamegraph.export.speedscope import render_speedscope
from flamegraph.export.timeline import read_timeline
from flamegraph.folding.perf import FoldOptions
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import decode, iter_folded_lines, read_folded
from flamegraph.io.sidecar import Context, parse_sidecar, render_sidecar
from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_svg
from flamegraph.render.trend import render_trend

pytestmark = pytest.mark.parallel

# Any bytes but the folded text's own separators; `\xff`, `<&>`, quotes and NUL among them.
RAW = st.binary(min_size=1, max_size=12).filter(lambda b: not {59, 10, 13} & set(b) and b.strip() == b).map(decode)
NAME = st.one_of(RAW, st.sampled_from(["a<b>&\"q'\udcff", "\udcff", "x\\x41", "\udce9t\udcc3"]))


@st.composite
def profiles(draw: st.DrawFn) -> FoldedProfile:
    """A profile rooted at comms (thread roots or not) with raw-byte frames, command and facts."""
    comm = draw(NAME)
    threads = draw(st.booleans())
    roots = [f"{comm}-{pid}/{pid + 1}" for pid in (1, 7)] if threads else [comm]
    pool = draw(st.lists(NAME, min_size=1, max_size=6))
    counts: dict[str, float] = {}
    for stack in draw(st.lists(st.lists(st.sampled_from(pool), max_size=4), min_size=1, max_size=8)):
        key = ";".join([draw(st.sampled_from(roots)), *stack])
        counts[key] = counts.get(key, 0) + draw(st.integers(1, 1000))
    metadata = {"command": f"./{comm} {draw(NAME)}", draw(NAME): draw(NAME), "frequency": "499 Hz"}
    return FoldedProfile(counts, event=draw(st.sampled_from(["cpu-clock", None])), metadata=metadata)


def stacks(profile: FoldedProfile) -> Counter[tuple[str, ...]]:
    return Counter({tuple(stack.split(";")): weight for stack, weight in profile.counts.items()})


def strict_json(data: bytes) -> object:
    return json.loads(data.decode("utf-8"))  # strict: a raw 0xff or an encoded surrogate fails here


def strict_xml(data: bytes) -> ET.Element:
    data.decode("utf-8")
    return ET.fromstring(data)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(profile=profiles(), title=st.none() | NAME)
def test_speedscope_is_utf8_json_and_names_read_back(profile: FoldedProfile, title: str | None) -> None:
    document = strict_json(render_speedscope(profile, title))
    assert isinstance(document, dict)
    frames = [import_name(frame["name"]) for frame in document["shared"]["frames"]]
    got: Counter[tuple[str, ...]] = Counter()
    for one in document["profiles"]:
        for sample, weight in zip(one["samples"], one["weights"], strict=True):
            got[tuple(frames[i] for i in sample)] += weight
    assert got == stacks(profile)
    assert import_name(document["metadata"]["command"]) == profile.metadata["command"]


@SETTINGS
@given(profile=profiles(), title=st.none() | NAME)
def test_pprof_strings_are_unicode_and_names_read_back(profile: FoldedProfile, title: str | None) -> None:
    message = message_classes()["Profile"]()
    message.ParseFromString(gzip.decompress(render_pprof(profile, title)))  # strict UTF-8 for strings
    names = {f.id: import_name(message.string_table[f.name]) for f in message.function}
    got: Counter[tuple[str, ...]] = Counter()
    for sample in message.sample:
        got[tuple(names[i] for i in reversed(sample.location_id))] += sample.value[0]
    assert got == stacks(profile)
    assert pprof_message(profile, title).SerializeToString() == message.SerializeToString()


@SETTINGS
@given(profile=profiles())
def test_folded_and_its_facts_keep_the_bytes(profile: FoldedProfile) -> None:
    text = b"".join(iter_folded_lines(profile))
    assert read_folded(text.splitlines(keepends=True), "t", Diagnostics()).counts == profile.counts
    sidecar = render_sidecar(Context.of(profile, title=profile.metadata["command"]))
    strict_json(sidecar)
    context, problems = parse_sidecar(sidecar)
    assert problems == [] and context.metadata == profile.metadata
    assert context.title == profile.metadata["command"]


@SETTINGS
@given(profile=profiles(), title=NAME)
def test_svg_and_trend_page_are_utf8_xml(profile: FoldedProfile, title: str) -> None:
    strict_xml(render_svg(profile, RenderOptions(title=title, subtitle=profile.metadata["command"])))
    page = render_trend([(1, profile), (2, profile)], f"{title}: share per interval", f"flamegraph diff ./{title}")
    assert strict_xml(page).tag.endswith("svg")


def test_trend_page_shows_a_raw_byte_as_the_graph_does() -> None:
    profile = FoldedProfile({"a\udcffb": 2, "a\udcffb;f\udcfe": 3})
    page = render_trend([(1, profile)], "t\udcff", "hint").decode("utf-8")
    assert "a\\xffb" in page and "f\\xfe" in page and "t\\xff" in page


COMM = NAME.map(lambda c: "p" + c).filter(lambda c: c == c.split()[0])  # one word, as perf script prints it


@settings(max_examples=25, deadline=None)
@given(comm=COMM, symbols=st.lists(NAME, min_size=1, max_size=4))
def test_chrome_trace_is_utf8_json(comm: str, symbols: list[str]) -> None:
    frames = b"".join(b"\t%x %s (/bin/x)\n" % (0x1000 + i, s.encode("utf-8", "surrogateescape").replace(b" ", b"_"))
                      for i, s in enumerate(symbols))  # fmt: skip
    head = comm.encode("utf-8", "surrogateescape")
    text = b"".join(head + b" 5/6 [000] %d.%06d: 1000 cpu-clock:\n" % (1, i) + frames + b"\n" for i in range(3))
    timeline = read_timeline(text.splitlines(keepends=True), "t", FoldOptions.with_all(tid=True))
    timeline.metadata["command"] = f"./{comm}"
    document = strict_json(render_chrome_trace(timeline, f"t {comm}"))
    assert isinstance(document, dict)
    names = [import_name(e["args"]["name"]) for e in document["traceEvents"] if e["ph"] == "M"]
    assert comm in names
    assert import_name(document["otherData"]["command"]) == f"./{comm}"


def test_png_of_a_graph_with_raw_bytes() -> None:
    pytest.importorskip("cairosvg")
    from flamegraph.render.png import render_png

    profile = FoldedProfile({"a<b>&\"q'\udcff;main\udcfe": 5}, metadata={"command": "./a\udcff"})
    assert render_png(render_svg(profile, RenderOptions(title="a\udcff"))).startswith(b"\x89PNG")


def test_our_lines_on_the_terminal_show_such_a_byte_as_the_svg_does(tmp_path: Path) -> None:
    """`record -o $'o\\xff.svg'` raised UnicodeEncodeError at its "wrote ..." line; an error line said `\\udcff`."""
    import io
    import subprocess
    import sys

    from flamegraph.record.status import Status

    sink = io.BytesIO()
    Status(sink=sink, out_sink=io.BytesIO()).note("wrote o\udcff.svg")
    assert sink.getvalue() == b"wrote o\\xff.svg\n"
    missing = tmp_path / "nx\udcff.folded"
    done = subprocess.run([sys.executable, "-m", "flamegraph", "render", str(missing), "-o", "/dev/null"],
                          capture_output=True, timeout=60)  # fmt: skip
    assert done.stderr == f"flamegraph: {tmp_path}/nx\\xff.folded: no such file\n".encode(), done.stderr
    bad = tmp_path / "bad\udcff.folded"
    bad.write_bytes(b"a;b x\n")
    done = subprocess.run([sys.executable, "-m", "flamegraph", "render", str(bad), "-o", "/dev/null"],
                          capture_output=True, timeout=60)  # fmt: skip
    assert done.stderr.startswith(f"{tmp_path}/bad\\xff.folded:1: bad-count:".encode()), done.stderr
