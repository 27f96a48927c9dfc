"""`render` views and filters from the command line, on a folded file with a known answer: the exact
folded output of each option (`--format folded`), the header of the SVG, the other exports, the
refusals; `diff` across units and roots; binary input refused in one line."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from helpers.svg import frames, paths, texts
from hypothesis import given
from hypothesis import strategies as st

from flamegraph.io.sniff import looks_binary

FOLDED = b"""python-11;main;compute;gemm 50
python-11;main;compute;compute;compute;relu 10
python-11;main;io;read 20
python-11;main;io;gemm 5
python-11;idle 15
"""


def run(*args: str, stdin: bytes | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "flamegraph", *args], input=stdin, capture_output=True, cwd=cwd, timeout=120
    )


@pytest.fixture
def folded(tmp_path: Path) -> Path:
    path = tmp_path / "in.folded"
    path.write_bytes(FOLDED)
    return path


CASES = {
    "--callers ^gemm$": b"gemm;compute;main;python-11 50\ngemm;io;main;python-11 5\n",
    "--callees ^compute$": b"compute;compute;compute;relu 10\ncompute;gemm 50\n",
    "--focus compute": b"python-11;main;compute;compute;compute;relu 10\npython-11;main;compute;gemm 50\n",
    "--focus compute --focus-root": b"compute;compute;compute;relu 10\ncompute;gemm 50\n",
    "--ignore io|idle": b"python-11;main;compute;compute;compute;relu 10\npython-11;main;compute;gemm 50\n",
    "--hide ^(main|compute)$": b"python-11;gemm 50\npython-11;idle 15\npython-11;io;gemm 5\npython-11;io;read 20\n"
    b"python-11;relu 10\n",
    "--collapse-recursion": b"python-11;idle 15\npython-11;main;compute;gemm 50\npython-11;main;compute;relu 10\n"
    b"python-11;main;io;gemm 5\npython-11;main;io;read 20\n",
    "--strip-root": b"idle 15\nmain;compute;compute;compute;relu 10\nmain;compute;gemm 50\nmain;io;gemm 5\n"
    b"main;io;read 20\n",
    "--merge-pids": b"python;idle 15\npython;main;compute;compute;compute;relu 10\npython;main;compute;gemm 50\n"
    b"python;main;io;gemm 5\npython;main;io;read 20\n",
    # an order of drawing: the folded text stays sorted
    "--order weight": b"python-11;idle 15\npython-11;main;compute;compute;compute;relu 10\n"
    b"python-11;main;compute;gemm 50\npython-11;main;io;gemm 5\npython-11;main;io;read 20\n",
}


@pytest.mark.parametrize("option", list(CASES))
def test_each_option_gives_the_known_folded_stacks(folded: Path, option: str) -> None:
    result = run("render", str(folded), "--format", "folded", *option.split())
    assert result.returncode == 0, result.stderr
    assert result.stdout == CASES[option]


def test_merge_pids_folds_processes_and_threads_together(tmp_path: Path) -> None:
    (tmp_path / "in").write_bytes(b"python-11;main 2\npython-12/13;main 3\nperl-4;x 1\n")
    result = run("render", str(tmp_path / "in"), "--format", "folded", "--merge-pids")
    assert result.stdout == b"perl;x 1\npython;main 5\n"


def test_merge_pids_merges_roots_without_a_pid(tmp_path: Path) -> None:
    """`fold --with-tid` of plain perf script text (no pid printed) roots stacks at `comm-?/TID`, which
    --merge-pids left as they were: `diff` then said the sides share no root frame."""
    (tmp_path / "in").write_bytes(b"cppprog-?/8552;main 2\ncppprog-?;main 1\ncppprog-8600/8601;main 3\nw-?x;y 1\n")
    result = run("render", str(tmp_path / "in"), "--format", "folded", "--merge-pids")
    assert result.stdout == b"cppprog;main 6\nw-?x;y 1\n"
    (tmp_path / "b").write_bytes(b"cppprog-9000/9000;main 4\n")
    assert b"--merge-pids drops the -PID suffix" in run("diff", str(tmp_path / "in"), str(tmp_path / "b")).stderr


def test_the_svg_header_says_what_is_filtered_and_what_remains(folded: Path) -> None:
    result = run("render", str(folded), "--focus", "compute", "--hide", "^main$", "--collapse-recursion")
    assert result.returncode == 0, result.stderr
    summary = texts(result.stdout, "summary")
    assert summary == [
        "event not recorded · 60 samples · 2 stacks",
        "focus /compute/ · hide /^main$/ · recursion collapsed · 60 of 100 samples remain (60.00 %)",
    ]
    drawn = paths(frames(result.stdout))
    assert drawn[("python-11", "compute", "relu")].width == 10  # compute;compute;compute -> compute
    assert ("python-11", "main") not in drawn


def test_the_callers_graph_is_titled_and_inverted(folded: Path) -> None:
    result = run("render", str(folded), "--callers", "^gemm$")
    assert b"<title>Callers of ^gemm$</title>" in result.stdout
    assert texts(result.stdout, "summary")[1] == (
        "callers of /^gemm$/ (inverted: the function, then who called it) · 55 of 100 samples remain (55.00 %)"
    )
    drawn = paths(frames(result.stdout))
    assert drawn[("gemm",)].width == 55 and drawn[("gemm", "compute", "main")].width == 50


def test_no_view_no_header_line(folded: Path) -> None:
    assert texts(run("render", str(folded)).stdout, "summary") == ["event not recorded · 100 samples · 5 stacks"]


def test_order_weight_puts_the_widest_left(folded: Path) -> None:
    by_name = paths(frames(run("render", str(folded), "--minwidth", "0").stdout))
    by_weight = paths(frames(run("render", str(folded), "--minwidth", "0", "--order", "weight").stdout))
    assert {p: f.width for p, f in by_name.items()} == {p: f.width for p, f in by_weight.items()}
    assert by_name[("python-11", "idle")].x == 0 and by_name[("python-11", "main")].x == 15
    assert by_weight[("python-11", "main")].x == 0 and by_weight[("python-11", "idle")].x == 85
    assert by_weight[("python-11", "main", "compute")].x == 0 and by_weight[("python-11", "main", "io")].x == 60


def test_views_reach_the_exports(folded: Path, tmp_path: Path) -> None:
    result = run("render", str(folded), "--format", "speedscope", "--callers", "^gemm$")
    document = json.loads(result.stdout)
    names = [frame["name"] for frame in document["shared"]["frames"]]
    profile = document["profiles"][0]
    stacks = {";".join(names[i] for i in s): w for s, w in zip(profile["samples"], profile["weights"], strict=True)}
    assert stacks == {"gemm;compute;main;python-11": 50, "gemm;io;main;python-11": 5}
    pprof = run("render", str(folded), "--format", "pprof", "--ignore", "idle", "-o", str(tmp_path / "p.pb.gz"))
    assert pprof.returncode == 0 and b"idle" not in gzip.decompress((tmp_path / "p.pb.gz").read_bytes())


def test_a_flame_chart_keeps_time_order_through_the_views(tmp_path: Path) -> None:
    (tmp_path / "in").write_bytes(b"a;a;b 1\nx;y 2\na;b 3\n")
    result = run("render", str(tmp_path / "in"), "--flamechart", "--collapse-recursion", "--ignore", "^x$")
    drawn = [(f.name, f.depth, f.x, f.width) for f in frames(result.stdout)]
    assert drawn == [("all", 0, 0, 4), ("a", 1, 0, 4), ("b", 2, 0, 4)]


def test_a_differential_file_is_viewed_on_both_sides(tmp_path: Path) -> None:
    (tmp_path / "in").write_bytes(b"p-1;a;a;b 1 2\np-1;c 3 0\n")
    result = run("render", str(tmp_path / "in"), "--format", "folded", "--collapse-recursion", "--merge-pids")
    assert result.stdout == b"p;a;b 1 2\np;c 3 0\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--focus", "("], "--focus '(': bad regular expression: missing ), unterminated subpattern at position 0"),
        (["--ignore", "[a"], "--ignore '[a': bad regular expression: unterminated character set at position 0"),
        (["--hide", "*"], "--hide '*': bad regular expression: nothing to repeat at position 0"),
        (["--callers", "a{4294967296}"], "--callers 'a{4294967296}': bad regular expression: "),
        (["--callees", "(?P<"], "--callees '(?P<': bad regular expression: "),
        (["--focus-root"], "--focus-root re-roots at the --focus frame: give --focus REGEX too"),
        (["--callers", "a", "--callees", "b"], "--callers and --callees are two views: draw one at a time"),
        (["--order", "weight", "--flamechart"], "--order weight: a flame chart keeps time order"),
        (["--order", "weight", "--flamechart", "--format", "folded"], "--order weight: a flame chart keeps time"),
        (["--order", "size"], "--order 'size': choose one of name, weight"),
    ],
)
def test_refusals_are_one_line_exit_2(folded: Path, args: list[str], message: str) -> None:
    result = run("render", str(folded), *args)
    assert result.returncode == 2, result.stderr
    line = result.stderr.decode()
    assert line.count("\n") == 1 and line.startswith(f"flamegraph: {message}"), line


def test_a_bad_regex_is_refused_before_the_input_is_read() -> None:
    result = run("render", "--focus", "(", stdin=b"")  # stdin is never waited for
    assert result.returncode == 2 and b"bad regular expression" in result.stderr


def test_a_focus_that_leaves_nothing_says_so(folded: Path) -> None:
    result = run("render", str(folded), "--focus", "nomatch")
    assert result.returncode == 3
    assert result.stderr == b"flamegraph: nothing left to draw: no stack passes --focus 'nomatch'\n"


# --- diff ------------------------------------------------------------------------------------------

SIDECAR = {"flamegraph-perf": "capture facts of a folded file", "version": 1, "event": "sched:sched_switch"}


def test_diff_refuses_sides_in_different_units(tmp_path: Path) -> None:
    # The pair: 1,684 samples against 1,407,537 microseconds, printed as if both were µs.
    (tmp_path / "on.folded").write_bytes(b"python-1;main;compute 1684\n")
    (tmp_path / "off.folded").write_bytes(b"python-1;main;compute;[S] 1407537\n")
    (tmp_path / "off.folded.json").write_text(json.dumps({**SIDECAR, "unit": "microseconds"}))
    result = run("diff", str(tmp_path / "on.folded"), str(tmp_path / "off.folded"), "-o", str(tmp_path / "d.svg"))
    assert result.returncode == 2 and not (tmp_path / "d.svg").exists()
    assert result.stderr == (
        b"flamegraph: BEFORE counts samples and AFTER microseconds: their totals do not compare; "
        b"--normalize compares shares instead\n"
    )
    normalized = run("diff", str(tmp_path / "on.folded"), str(tmp_path / "off.folded"), "--normalize")
    assert normalized.returncode == 0, normalized.stderr
    assert texts(normalized.stdout, "summary")[0].startswith(
        "sched:sched_switch · BEFORE 1,684 samples -> AFTER 1,407,537 microseconds (BEFORE normalized"
    )
    same = run("diff", str(tmp_path / "on.folded"), str(tmp_path / "off.folded"), "--unit", "samples")
    assert same.returncode == 0, same.stderr  # --unit says both are samples


def test_diff_of_two_programs_suggests_and_takes_strip_root(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"burn1-10;main;spin 8\nburn1-10;main;io 2\n")
    (tmp_path / "b").write_bytes(b"burn2-20;main;spin 4\nburn2-20;main;io 6\n")
    result = run("diff", str(tmp_path / "a"), str(tmp_path / "b"))
    assert result.returncode == 0
    assert result.stderr == (
        b"note: BEFORE and AFTER share no root frame, so every stack is new or gone: --strip-root drops the "
        b"root frame (the process or thread), so the stacks below it compare\n"
    )
    stripped = run("diff", str(tmp_path / "a"), str(tmp_path / "b"), "--strip-root")
    assert stripped.returncode == 0 and stripped.stderr == b""
    drawn = paths(frames(stripped.stdout))
    assert drawn[("main", "spin")].title == "spin (before 8, after 4 samples: -4 / -50.0%; self -4; 40.00% of after)"
    assert texts(stripped.stdout, "summary")[1] == "root frame stripped · all 10 samples remain"


def test_diff_of_two_runs_suggests_and_takes_merge_pids(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"python-10;main 8\n")
    (tmp_path / "b").write_bytes(b"python-20/21;main 4\n")
    result = run("diff", str(tmp_path / "a"), str(tmp_path / "b"))
    assert b"--merge-pids drops the -PID suffix" in result.stderr and result.stderr.count(b"\n") == 1
    merged = run("diff", str(tmp_path / "a"), str(tmp_path / "b"), "--merge-pids")
    assert merged.stderr == b""
    assert paths(frames(merged.stdout))[("python", "main")].title.startswith("main (before 8, after 4 samples")


# --- binary input ------------------------------------------------------------------------------------

BINARY = bytes(range(256)) * 16 + os.urandom(4096)


@pytest.mark.parametrize(
    "command",
    [["fold"], ["render"], ["diff", "OTHER"], ["convert", "-", "--to", "speedscope"], ["fleet", "diff", "OTHER"]],
)
@pytest.mark.parametrize("packing", ["plain", "gzip"])
def test_binary_input_is_one_line_exit_4(tmp_path: Path, folded: Path, command: list[str], packing: str) -> None:
    path = tmp_path / "rand.bin"
    path.write_bytes(BINARY if packing == "plain" else gzip.compress(BINARY))
    argv = [command[0], str(path), *(str(folded) if a == "OTHER" else a for a in command[1:])]
    if command[0] == "fleet":
        argv = ["fleet", "diff", str(path), str(folded)]
    result = run(*argv, "-o", str(tmp_path / "out")) if command[0] != "convert" else run(*argv)
    assert result.returncode == 4, result.stderr
    assert result.stderr == f"flamegraph: {path}: not perf script text or folded stacks: looks binary\n".encode()
    assert result.stdout == b""


def test_binary_on_stdin_is_refused_too() -> None:
    for command in ("fold", "render"):
        result = run(command, "-", stdin=BINARY)
        assert (result.returncode, result.stderr) == (
            4, b"flamegraph: <stdin>: not perf script text or folded stacks: looks binary\n")  # fmt: skip


def test_text_with_raw_symbol_bytes_still_reads(tmp_path: Path) -> None:
    # perf prints symbol names as their bytes: Latin-1 and cut UTF-8 stay text
    folded = b"python;caf\xe9;na\xefve\xff 3\npython;main;\xc3\xa9t\xc3\xa9 1\npython;main;\xe4\xb8 2\n"
    (tmp_path / "in").write_bytes(folded)
    result = run("render", str(tmp_path / "in"), "--format", "folded")
    assert (result.returncode, result.stdout) == (0, folded)
    script = (
        b"python 4242/4243 [001] 100.000001: cpu-clock:\n"
        b"\t    7f0c1a2b3c4d caf\xe9_latin1+0x3d (/usr/lib/libx.so)\n"
        b"\t    7f0c1a2b3c00 main+0x1 (/usr/bin/python3)\n\n"
    )
    (tmp_path / "perf.txt").write_bytes(script)
    result = run("fold", str(tmp_path / "perf.txt"))
    assert (result.returncode, result.stdout) == (0, b"python;main;caf\xe9_latin1 1\n"), result.stderr


def test_off_cpu_views_that_move_the_roots_drop_the_thread_view(tmp_path: Path) -> None:
    # Off-CPU roots are threads: once --callers (or --strip-root, --merge-pids, --focus-root) puts a
    # function there, no thread count, roles or idle-thread line may be made from it.
    (tmp_path / "w.folded").write_bytes(
        b"python-1;main;poll;schedule_[k];[S] 700000\npython-2;worker;read;schedule_[k];[D] 300000\n"
    )
    (tmp_path / "w.folded.json").write_text(json.dumps({**SIDECAR, "unit": "microseconds", "window_us": 700000}))
    plain = texts(run("render", str(tmp_path / "w.folded")).stdout, "summary")
    assert plain[0].startswith("off-CPU time (sched:sched_switch) · 0.300 s in 1 thread")  # python-1 idle: not drawn
    result = run("render", str(tmp_path / "w.folded"), "--callers", "schedule")
    assert texts(result.stdout, "summary") == [
        "off-CPU time (sched:sched_switch) · 1.000 s · window 0.700 s · 2 stacks",
        "callers of /schedule/ (inverted: the function, then who called it) · all 1.000 s remain",
    ]
    drawn = paths(frames(result.stdout))
    assert drawn[("schedule", "poll", "main", "python-1")].width == 700000


@given(st.binary(max_size=400), st.integers(0, 8))
def test_the_binary_share_counts_each_byte_that_is_not_utf8(head: bytes, cut: int) -> None:
    head += "é€😀".encode()[:cut]  # a character cut at the end counts too
    text = head.decode("utf-8", "surrogateescape")
    foreign = sum(1 for char in text if "\udc80" <= char <= "\udcff")  # the definition, one character at a time
    controls = sum(1 for byte in head if byte < 32 and bytes([byte]) not in b"\t\n\r\f\v\b\x1b" or byte == 127)
    expected = b"\x00" in head or (bool(head) and controls + foreign > 0.3 * len(head))
    assert looks_binary(head) == expected
