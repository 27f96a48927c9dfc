"""Fuzz targets of the command line: fold, render and diff as the user runs them, and the
`--window` / `--call-graph` specs of record and offcpu."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from flamegraph.io.diagnostics import BadOption, Diagnostics
from flamegraph.io.folded import read_folded
from flamegraph.record.spec import parse_call_graph
from flamegraph.window import Window

from .common import lines_of, run_cli, scratch_file
from .source import Source

# -- the command line: fold, render and diff as the user runs them ---------------------------------
FOLD_FLAGS = ("--with-pid", "--with-tid", "--annotate-kernel", "--annotate-jit", "--annotate", "--addrs", "--strict",
              "--compat", "--no-group-unknown", "--report", "--offcpu")  # fmt: skip
RENDER_FLAGS = ("--reverse", "--inverted", "--flamechart", "--hash", "--random", "--strict", "--negate",
                "--normalize")  # fmt: skip
RENDER_VALUES = (("--minwidth", ("0", "1", "5%")), ("--colors", ("io", "java", "chain", "python")),
                 ("--top", ("0", "3")), ("--factor", ("0.5", "1000")), ("--diff-width", ("after", "before")),
                 ("--unit", ("microseconds",)), ("--highlight", ("a", "[unknown]=#ff0000:X")),
                 ("--palette-file", ("PALETTE",)))  # fmt: skip
EXIT_CODES = {0, 2, 3, 4}  # documented: ok, usage, bad input, input/output problem


def command_line(data: bytes) -> None:
    """`fold`, `render` or `diff` with a random choice of options on a file of any bytes: a documented
    exit code with one line of error, or an output that parses (folded text, or SVG)."""
    source = Source(data)
    command = source.choice(("fold", "render", "diff"))
    flags = source.flags(8) + source.flags(4)
    values = source.flags(8)
    picks = [source.byte() for _ in RENDER_VALUES]
    text = source.rest()
    path = scratch_file("cli.in", text)
    if command == "fold":
        args = ["fold", *(f for f, on in zip(FOLD_FLAGS, flags, strict=False) if on), str(path)]
    else:
        args = [command, *(f for f, on in zip(RENDER_FLAGS, flags, strict=False) if on)]
        for (option, choices), on, pick in zip(RENDER_VALUES, values, picks, strict=True):
            if on:
                args += [option, choices[pick % len(choices)]]
        if "PALETTE" in args:  # a fresh palette file each time: missing, then written by render
            palette = scratch_file("cli.palette.map", b"")
            palette.unlink()
            args[args.index("PALETTE")] = str(palette)
        args += [str(path)] * (2 if command == "diff" else 1)
        if command == "render":
            args = [a for a in args if a not in ("--negate", "--normalize", "--diff-width", "after", "before")]
        else:
            args = [a for a in args if a not in ("--flamechart", "--hash", "--random", "--colors", "io", "java",
                                                 "chain", "python")]  # fmt: skip
    code, out, err = run_cli(args)
    assert code in EXIT_CODES, (code, err)
    assert "Traceback" not in err, err
    if code != 0:
        errors = [line for line in err.splitlines() if line.startswith(("flamegraph: ", "Error: "))]
        assert len(errors) == 1, err
        return
    if command == "fold":
        diagnostics = Diagnostics(echo=False)
        read_folded(lines_of(out), "out", diagnostics)
        assert diagnostics.skipped == 0, (diagnostics.problems, out[:300])
    else:
        ET.fromstring(out)


# -- --window START,END ---------------------------------------------------------------------------
def window_spec(data: bytes) -> None:
    """`record --window` / `offcpu --window`: a usable span or a usage error, never a traceback."""
    from flamegraph.cli.numbers import parse_window_option
    from flamegraph.record.script import script_args
    from flamegraph.record.spec import Recording, RecordSpec

    text = data.decode("utf-8", "surrogateescape")
    try:
        graph = parse_call_graph(text)  # --call-graph, the other spec these commands parse
    except ValueError as err:
        assert str(err).startswith(("call graph ", "dwarf stack size ")), err
    else:
        assert graph == text.strip() and graph.split(",")[0] in ("fp", "lbr", "dwarf"), graph
    try:
        bounds = Window.parse(text)
    except ValueError:
        bounds = None
    if bounds is not None:
        start, end = bounds
        assert all(b is None or math.isfinite(b) for b in bounds), bounds
        assert start is None or end is None or start <= end
        recording = Recording(Path("perf.data"), RecordSpec(pid=1), {}, 0.0)
        time_arg = script_args(recording, bounds)[3]
        assert re.fullmatch(r"(\d+\.\d{6})?,(\d+\.\d{6})?", time_arg), time_arg
    try:
        window = parse_window_option(text)
    except BadOption:
        assert bounds is None
        return
    assert window == bounds and window is not None, (text, window)
    span = window.ns()  # what off-CPU's folder clips to
    assert 0 <= span[0] and (span[0] <= span[1] or bounds[1] is None), (text, span)  # a start past 2**62 ns: nothing
