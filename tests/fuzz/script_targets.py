"""Fuzz target of the grammar of `perf script` text (flamegraph/folding/grammar.py): each line
class and fact holds on any input, and the folds that use it agree."""

from __future__ import annotations

import re

from flamegraph.folding import grammar as script
from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.io.diagnostics import Diagnostics

from .source import Source

FIELDS = {"comm", "tid", "ip", "sym"}
PERL_BRACKETS = re.compile(rb"\[.*?\]")  # stackcollapse-perf.pl --srcline's s/\[.*?\]//g


def _fold(lines: list[bytes], options: FoldOptions) -> object:
    collapser = PerfCollapser(options, Diagnostics(echo=False))
    collapser.feed_lines(lines, "in")
    collapser.end_input()
    return collapser.by_event


def perf_grammar(data: bytes) -> None:
    """Line classes exclude each other, facts read the same with leading blanks, --srcline's joining
    keeps every line, and detail lines (source lines, instructions, source code) fold to nothing:
    the text folds the same without them."""
    source = Source(data)
    compat, srcline, _, _, _, _, _, _ = source.flags(8)
    lines = source.rest().split(b"\n")
    for line in lines:
        header = script.read_header(line)
        kind = script.non_sample_kind(line)
        detail = script.is_detail(line)
        if kind is not None:
            assert header is None and re.fullmatch(rb"[A-Z0-9_]+", kind), line
        if header is not None:
            assert header.tid.isdigit() and (header.pid is None or header.pid.isdigit()), header
            assert script.read_header(b"  \t" + line) == header, line
            assert header.time_ns is None or header.time_ns >= 0
        if detail:
            assert line[:1] in (b" ", b"|") and not script.is_header(line.strip()), line
        assert script.srcline_suffix(line) == PERL_BRACKETS.sub(b"", line).strip()
    assert set(script.missing_fields(lines)) <= FIELDS
    for joined_compat in (False, True):
        joined = list(script.join_srclines(lines, joined_compat))
        assert b"\n".join(joined).split(b"\n") == lines
    options = FoldOptions(compat=compat)
    if not compat:  # detail lines are never frames nor headers: without them, the same stacks
        kept = [line for line in lines if not script.is_detail(line)]
        assert _fold(kept, options) == _fold(lines, options), "a detail line changed the fold"
    with_source = FoldOptions(compat=compat, srcline=srcline)
    assert _fold(list(script.join_srclines(lines, compat)), with_source) == _fold(
        list(script.join_srclines(lines, compat)), with_source
    ), "not deterministic"
