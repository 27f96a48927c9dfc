"""`flamegraph render` and `flamegraph diff` from the command line: inputs, outputs, exit codes."""

from __future__ import annotations

import gzip
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import REPO
from helpers.extras import need
from helpers.svg import SVG, frames, paths, texts

FOLDED = b"python;main;compute;gemm 50\npython;main;compute;relu 10\npython;main;io;read 20\n"


def run(*args: str, stdin: bytes | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "flamegraph", *args], input=stdin, capture_output=True, cwd=cwd, timeout=120
    )


def test_render_file_gzip_and_stdin_agree(tmp_path: Path) -> None:
    plain = tmp_path / "in.folded"
    plain.write_bytes(FOLDED)
    packed = tmp_path / "in.folded.gz"
    packed.write_bytes(gzip.compress(FOLDED))
    out = tmp_path / "out.svg"
    first = run(
        "render", str(plain), "-o", str(out), "--event", "cpu-clock", "--meta", "host=vm", "--meta", "kernel=6.1"
    )
    assert first.returncode == 0, first.stderr
    svg = out.read_bytes()
    assert run("render", str(packed), "--event", "cpu-clock", "--meta", "host=vm", "--meta", "kernel=6.1").stdout == svg
    assert (
        run("render", "-", "--event", "cpu-clock", "--meta", "host=vm", "--meta", "kernel=6.1", stdin=FOLDED).stdout
        == svg
    )
    assert texts(svg, "facts")[1:] == ["host: vm", "kernel: 6.1"]
    assert paths(frames(svg))[("python", "main", "compute")].width == 60


def test_render_merges_several_inputs(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"m;x 2\n")
    (tmp_path / "b").write_bytes(b"m;x 3\nm;y 1\n")
    result = run("render", str(tmp_path / "a"), str(tmp_path / "b"), "--minwidth", "0")
    assert {p: f.width for p, f in paths(frames(result.stdout)).items()} == {("m",): 6, ("m", "x"): 5, ("m", "y"): 1}


def test_render_options_reach_the_svg(tmp_path: Path) -> None:
    (tmp_path / "in").write_bytes(FOLDED)
    result = run(
        "render", str(tmp_path / "in"), "--title", "T", "--subtitle", "S", "--width", "800", "--height", "20",
        "--fontsize", "10", "--countname", "ms", "--colors", "blue", "--inverted", "--preset", "onednn",
        "--highlight", "gemm=#123456:BLAS", "--top", "2", "--notes", "n", "--factor", "2",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    root = ET.fromstring(result.stdout)
    assert root.get("width") == "800" and root.findtext(f"{SVG}title") == "T"
    drawn = paths(frames(result.stdout))
    assert drawn[("python", "main", "compute", "gemm")].fill == "#123456"
    assert drawn[("python", "main")].title == "main (160 ms, 100.00%)"
    assert len(texts(result.stdout, "top")) == 1 + 2 * 3
    assert texts(result.stdout, "legend") == ["BLAS 62.50 % (self 62.50 %)"]  # the oneDNN classes match nothing


def test_flamechart_keeps_repeated_stacks_apart(tmp_path: Path) -> None:
    (tmp_path / "in").write_bytes(b"m;step 2\nm;wait 1\nm;step 2\n")
    result = run("render", str(tmp_path / "in"), "--flamechart")
    row = sorted((f for f in frames(result.stdout) if f.depth == 2), key=lambda f: f.x)
    assert [f.name for f in row] == ["step", "wait", "step"]


def test_cp_reads_and_writes_palette_map(tmp_path: Path) -> None:
    (tmp_path / "in").write_bytes(FOLDED)
    assert run("render", "in", "--cp", "-o", "a.svg", cwd=tmp_path).returncode == 0
    palette = (tmp_path / "palette.map").read_text()
    assert "gemm->rgb(" in palette
    (tmp_path / "palette.map").write_text(palette.replace(palette.split("gemm->")[1].split("\n")[0], "rgb(1,2,3)"))
    assert run("render", "in", "--cp", "-o", "b.svg", cwd=tmp_path).returncode == 0
    assert paths(frames((tmp_path / "b.svg").read_bytes()))[("python", "main", "compute", "gemm")].fill == "#010203"


def test_diff_command(tmp_path: Path) -> None:
    (tmp_path / "before").write_bytes(FOLDED + b"python;main;gone 9\n")
    (tmp_path / "after").write_bytes(FOLDED.replace(b"read 20", b"read 60"))
    out = tmp_path / "diff.svg"
    result = run("diff", str(tmp_path / "before"), str(tmp_path / "after"), "-o", str(out), "--normalize")
    assert result.returncode == 0, result.stderr
    drawn = paths(frames(out.read_bytes()))
    assert ("python", "main", "gone") in drawn
    assert drawn[("python", "main", "io", "read")].fill == "#ff0000"
    both_stdin = run("diff", "-", "-")
    assert both_stdin.returncode == 2 and both_stdin.stderr.decode().strip() == (
        "flamegraph: BEFORE and AFTER cannot both be stdin"
    )


def test_diff_of_two_events_names_both(tmp_path: Path) -> None:
    """newcomer10 a-F22: the header named AFTER's event only, and nothing said the sides count different ones."""
    from flamegraph.io.sidecar import Context, render_sidecar, sidecar_path

    for name, event in (("tk.folded", "task-clock"), ("cu.folded", "cpu-clock:u")):
        (tmp_path / name).write_bytes(FOLDED)
        sidecar_path(tmp_path / name).write_bytes(render_sidecar(Context(event=event)))
    result = run("diff", "tk.folded", "cu.folded", "-o", "d.svg", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.decode().splitlines() == [
        "note: BEFORE counts task-clock, AFTER cpu-clock:u: the graph compares different events"
    ]
    assert texts((tmp_path / "d.svg").read_bytes(), "summary")[0].startswith("task-clock -> cpu-clock:u · BEFORE ")
    same = run("diff", "tk.folded", "tk.folded", "-o", "s.svg", cwd=tmp_path)
    assert same.returncode == 0 and not same.stderr
    assert texts((tmp_path / "s.svg").read_bytes(), "summary")[0].startswith("task-clock · BEFORE ")


def test_png_option(tmp_path: Path) -> None:
    need("cairosvg")
    (tmp_path / "in").write_bytes(FOLDED)
    result = run("render", str(tmp_path / "in"), "-o", str(tmp_path / "g.svg"), "--png", str(tmp_path / "g.png"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["render", "missing.folded"], 4, "no such file"),
        (["render", "empty.folded"], 3, "no samples"),
        (["render", "in.folded", "--colors", "rainbow"], 2, "--colors 'rainbow'"),
        (["render", "in.folded", "--minwidth", "wide"], 2, "--minwidth 'wide'"),
        (["render", "in.folded", "--highlight", "(oops"], 2, "bad regular expression"),
        (["render", "in.folded", "--meta", "novalue"], 2, "KEY=VALUE"),
        (["render", "in.folded", "--strict"], 3, "bad-folded-line"),
    ],
)
def test_mistakes_are_one_line(tmp_path: Path, args: list[str], code: int, message: str) -> None:
    (tmp_path / "in.folded").write_bytes(FOLDED + (b"garbage\n" if "--strict" in args else b""))
    (tmp_path / "empty.folded").write_bytes(b"")
    result = run(*args, cwd=tmp_path)
    lines = result.stderr.decode().strip().splitlines()
    assert result.returncode == code, result.stderr
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr.decode()
