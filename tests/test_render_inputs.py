"""What `render` and `diff` accept as folded input, and the one-line errors for what they refuse."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from helpers.svg import frames
from helpers.svg import settings as svg_settings
from hypothesis import given, settings
from hypothesis import strategies as st

from flamegraph.io.diagnostics import BadCounts, BadOption, Diagnostics
from flamegraph.io.folded import format_folded_count, parse_count, read_folded
from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_svg

FOLDED = b"python;main;compute;gemm 50\npython;main;compute;relu 10\npython;main;io;read 20\n"
BIG = "1" + "0" * 308  # 1e308 as digits: a valid count; two of them add up past a float


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "flamegraph", *args], input=stdin, capture_output=True, cwd=REPO, timeout=120
    )


def one_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text and "Aborted" not in text, text
    assert text.count("\n") == 1, text
    return text


# --- counts: plain digits, optionally '.' and digits -------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("17", 17), ("0", 0), ("007", 7), ("3.5", 3.5), ("12.", 12.0), ("0.25", 0.25), (BIG, 10**308),
     ("0" * 400 + "1", 1)],
)  # fmt: skip
def test_plain_counts_are_read(text: str, value: float) -> None:
    assert parse_count(text.encode()) == value


@pytest.mark.parametrize(
    "text",
    ["1_000", "1e3", "1E3", "1.5e3", "-1", "+1", "inf", "nan", "Infinity", "0x10", "", ".5", " 1", "1 ",
     "\u0661\u0662", "\uff11", "9" * 309, "1" + "0" * 5000, "9" * 400 + ".5"],
)  # fmt: skip
def test_other_counts_are_refused(text: str) -> None:
    assert parse_count(text.encode()) is None


def test_underscore_count_is_a_bad_count_line() -> None:
    result = run("render", "-", stdin=b"a;b 1_000\na;c 2\n")
    assert result.returncode == 0
    assert "<stdin>:1: bad-count" in result.stderr.decode()
    assert "skipped 1 of 2 records: 1 bad-count" in result.stderr.decode()  # the summary counts the record
    assert [f.name for f in frames(result.stdout)] == ["all", "a", "c"]


@given(st.floats(min_value=0, allow_nan=False, allow_infinity=False) | st.integers(min_value=0, max_value=10**308))
def test_written_counts_read_back(count: float) -> None:
    text = format_folded_count(count)
    assert "e" not in text.lower() and "_" not in text
    assert parse_count(text.encode()) == count


# --- counts past a float, and --factor ---------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [f"a {BIG}\nb {BIG}\n", f"a {BIG}.5\nb {BIG}.5\n", f"a {BIG}\na {BIG}\n"],
    ids=["integers", "decimals", "one-stack"],
)
def test_counts_adding_up_past_a_float_are_one_line(lines: str) -> None:
    result = run("render", "-", stdin=lines.encode())
    assert result.returncode == 3
    assert one_line(result.stderr) == "flamegraph: the counts add up to more than the largest float (1.8e+308)\n"


def test_diff_past_a_float_is_one_line(tmp_path: Path) -> None:
    huge = tmp_path / "huge.folded"
    huge.write_text(f"a {BIG}\nb {BIG}\n")
    small = tmp_path / "small.folded"
    small.write_bytes(FOLDED)
    for args in ([str(small), str(huge)], [str(huge), str(small), "--normalize"]):
        result = run("diff", *args)
        assert result.returncode == 3
        assert "more than the largest float" in one_line(result.stderr)


def test_one_count_near_the_limit_is_drawn() -> None:
    """1e308 alone fits: no overflow on the way (a frame's width was once (w + cum) - cum = inf)."""
    drawn = frames(render_svg(FoldedProfile({"a;b": 10**308}), RenderOptions()))
    assert [(f.name, f.width) for f in drawn] == [("all", 1e308), ("a", 1e308), ("b", 1e308)]


@pytest.mark.parametrize("factor", ["inf", "-inf", "nan", "-1", "0"])
def test_factor_must_be_positive_and_finite(factor: str) -> None:
    result = run("render", "-", f"--factor={factor}", stdin=FOLDED)
    assert result.returncode == 2
    assert "must be a positive, finite number" in one_line(result.stderr)


def test_factor_times_total_past_a_float_is_one_line() -> None:
    with pytest.raises(BadCounts, match="--factor 1e\\+300 times the total"):
        render_svg(FoldedProfile({"a": 10**10}), RenderOptions(factor=1e300))
    with pytest.raises(BadOption):
        render_svg(FoldedProfile({"a": 1}), RenderOptions(factor=float("inf")))


# --- stdin, once -------------------------------------------------------------------------------


def test_flamechart_from_stdin_reads_it_once() -> None:
    chart = b"p;step 3\np;wait 1\np;step 2\n"
    result = run("render", "--flamechart", "-", stdin=chart)
    assert result.returncode == 0, result.stderr
    drawn = [(f.name, f.x, f.width) for f in frames(result.stdout) if f.depth == 2]
    assert drawn == [("step", 0, 3), ("wait", 3, 1), ("step", 4, 2)]


# --- difffolded.pl's two counts ----------------------------------------------------------------


def test_two_count_lines_draw_a_differential_graph() -> None:
    result = run("render", "-", stdin=b"a;b 10 30\na;c 20 5\n")
    assert result.returncode == 0, result.stderr
    drawn = {f.name: f for f in frames(result.stdout)}
    assert set(drawn) == {"all", "a", "b", "c"}  # not frames named "b 10"
    assert drawn["b"].width == 30 and drawn["c"].width == 5  # flamegraph.pl's geometry: AFTER's counts
    assert drawn["b"].title.startswith("b (before 10, after 30 samples: +20 / +200.0%")
    assert drawn["b"].fill.startswith("#ff") and drawn["c"].fill.endswith("ff")  # grew red, shrank blue
    assert svg_settings(result.stdout)["diff"] is True


def test_two_count_lines_after_one_count_lines_are_reported() -> None:
    profile = FoldedProfile()
    diagnostics = Diagnostics(echo=False)
    read_folded([b"a;b 1 2\n", b"a;c 3\n"], "in", diagnostics, profile, FoldedProfile())
    assert [(p.line, p.kind) for p in diagnostics.problems] == [(2, "bad-folded-line")]


def test_diff_refuses_two_count_input(tmp_path: Path) -> None:
    both = tmp_path / "both.folded"
    both.write_bytes(b"a;b 10 30\n")
    plain = tmp_path / "plain.folded"
    plain.write_bytes(FOLDED)
    result = run("diff", str(both), str(plain))
    assert result.returncode == 4
    assert "two counts per line" in one_line(result.stderr)


# --- gzip ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        gzip.compress(FOLDED)[:20],  # truncated
        b"\x1f\x8b",  # the magic alone
        b"\x1f\x8bgarbage",  # no gzip header
        gzip.compress(b"x")[:10] + b"garbage garbage",  # a header, then not deflate (zlib.error)
    ],
    ids=["truncated", "magic-only", "bad-header", "zlib-error"],
)
@pytest.mark.parametrize("command", ["render", "diff"])
def test_corrupt_gzip_is_one_line(data: bytes, command: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.folded.gz"
    bad.write_bytes(data)
    plain = tmp_path / "plain.folded"
    plain.write_bytes(FOLDED)
    args = [str(bad)] if command == "render" else [str(plain), str(bad)]
    result = run(command, *args)
    assert result.returncode == 4
    assert one_line(result.stderr).startswith(f"flamegraph: {bad}: truncated or corrupt gzip data: ")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=20), st.booleans())
def test_any_bytes_only_add_diagnostics(lines: list[bytes], two_counts: bool) -> None:
    profile, before = FoldedProfile(), FoldedProfile()
    diagnostics = Diagnostics(echo=False)
    read_folded([line + b"\n" for line in lines], "fuzz", diagnostics, profile, before if two_counts else None)
    for side in (profile, before):
        assert all(0 <= count <= sys.float_info.max for count in side.counts.values())
    assert diagnostics.skipped + (len(profile.counts) > 0) <= max(diagnostics.records, 1)
