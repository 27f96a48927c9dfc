"""Fuzz targets of files that travel with a folded file or a report: the capture-facts sidecar
(`FILE.folded.json`) and whatever `flamegraph convert` is given to read."""

from __future__ import annotations

import time

from flamegraph.color import MAX_FILE_SUBJECT, Highlighter, resolve_highlights
from flamegraph.io.sidecar import NotASidecar, parse_sidecar
from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_svg

from .common import check_svg, run_cli, scratch_file
from .source import Source

# A name the highlight rules are tried on: long enough that a backtracking pattern would show.
LONG_NAME = "a" * MAX_FILE_SUBJECT
SECONDS = 5.0  # what reading and drawing one sidecar may take, at the most


def sidecar_file(data: bytes) -> None:
    """Any bytes as FILE.folded.json: NotASidecar, or a context whose every field is usable (the bad
    ones named), drawn in bounded time: its highlight patterns cost a bounded number of steps."""
    started = time.monotonic()
    try:
        context, problems = parse_sidecar(data)
    except NotASidecar as err:
        assert str(err), "a refusal says why"
        return
    assert all(problems), problems
    rules = context.highlight_rules()  # every kept spec is one a file may hold
    assert all(rule.from_file for rule in rules)
    profile = FoldedProfile({"p;" + LONG_NAME + "b": 2.0, "p;main": 1.0})
    context.apply(profile)
    highlighter = Highlighter(resolve_highlights(rules, context.preset, "hot"))
    for name in (LONG_NAME, LONG_NAME + "b", "main", "x" * (MAX_FILE_SUBJECT + 1)):
        highlighter.class_of(name)
    options = RenderOptions(
        title=context.title or "Flame Graph", subtitle=context.subtitle, highlights=list(rules), preset=context.preset
    )
    check_svg(render_svg(profile, options), profile.total)
    assert time.monotonic() - started < SECONDS, "a sidecar took too long to read and draw"


FORMATS = ("svg", "speedscope.json", "pb.gz", "folded", "json")


def convert_input(data: bytes) -> None:
    """Any bytes as `flamegraph convert IN OUT`, for each output format: a documented exit code with
    one line, or 0 — never a traceback (run_cli lets one propagate)."""
    source = Source(data)
    ending = source.choice(FORMATS)
    gzipped = source.flags(1)[0]
    body = source.rest()
    if gzipped:
        import gzip

        body = gzip.compress(body, mtime=0)
    path = scratch_file("input.gz" if gzipped else "input.txt", body)
    code, _, err = run_cli(["convert", str(path), str(path.with_name(f"out.{ending}"))])
    assert code in (0, 2, 3, 4, 5), (code, err)  # 5: bytes that start like perf.data, which perf refuses
    assert "Traceback" not in err, err
    if code:
        assert err.strip(), "a failure says why"
