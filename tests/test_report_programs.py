"""The attribution report on real programs recorded with real perf: what it counts as a root and what it
advises must hold for the program recorded (a stripped C program, a Go binary, a V8 program)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.programs import compile_c, need_perf

pytestmark = [pytest.mark.perf, pytest.mark.parallel]

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
ROOTED = re.compile(r"^ +([0-9.]+) %  reach a (?:thread|goroutine or thread) root", re.M)
# Two leaves under two callers, ~0.5 s of CPU: deep enough that a cut stack would show.
BUSY_C = r"""
#include <stdlib.h>
__attribute__((noinline)) double leaf_a(long n) { double s = 0; for (long i = 1; i < n; i++) s += 1.0 / i; return s; }
__attribute__((noinline)) double leaf_b(long n) { double s = 1; for (long i = 1; i < n; i++) s *= 1.0000001; return s; }
__attribute__((noinline)) double mid(long n) { return leaf_a(n) + leaf_b(n / 2); }
int main(int argc, char **argv) { double t = 0; for (int r = 0; r < 10; r++) t += mid(atol(argv[1])); return t < 0; }
"""


def record(tmp_path: Path, *command: str, options: tuple[str, ...] = ()) -> tuple[str, str]:
    """`flamegraph record` of `command`: its stderr and the folded stacks."""
    need_perf()
    folded = tmp_path / "out.folded"
    done = subprocess.run(
        [*FLAMEGRAPH, "record", *options, "--no-svg", "--folded", str(folded), "--", *command],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr, folded.read_text()


def rooted(stderr: str) -> float:
    found = ROOTED.search(stderr)
    assert found, stderr
    return float(found.group(1))


def test_a_stripped_programs_stacks_reach_its_entry_point(tmp_path: Path) -> None:
    """newcomer10 a-F1, b-7: a stripped program's stacks start at its entry point (`prog+0x10f0`, _start
    unnamed) and were reported 0 % rooted, with advice to grow the stack copy (which cannot help)."""
    program = compile_c(tmp_path, "busy", BUSY_C, "-O2", "-fomit-frame-pointer")
    subprocess.run(["strip", str(program)], check=True)
    stderr, folded = record(tmp_path, "./busy", "30000000")
    # stripped indeed: the program's own frames are named by function start, _start among them
    assert re.search(r"^busy;busy\+0x[0-9a-f]+;__libc_start_main", folded, re.M), folded
    frames = {frame for line in folded.splitlines() for frame in line.rpartition(" ")[0].split(";")}
    assert not frames & {"_start", "main", "mid"}, frames
    assert rooted(stderr) >= 95.0, stderr
    assert "fix:" not in stderr, stderr


# Four goroutines calling main.work for ~0.6 s; no assembly in the way of the frame pointers.
BUSY_GO = """package main

import ("fmt"; "sync"; "time")

//go:noinline
func work(n int) float64 { s := 0.0; for i := 0; i < n; i++ { s += float64(i) * 0.5 }; return s }

func main() {
	var wg sync.WaitGroup
	start, r := time.Now(), make([]float64, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) { defer wg.Done(); for time.Since(start) < 600*time.Millisecond { r[g] += work(100000) } }(g)
	}
	wg.Wait()
	fmt.Println(r[0] > 0)
}
"""


def build_go(directory: Path) -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed (apt-get install golang-go)")
    (directory / "main.go").write_text(BUSY_GO)
    (directory / "go.mod").write_text("module busy\n\ngo 1.19\n")
    cache = {"GOCACHE": str(directory / ".cache"), "GOFLAGS": "-mod=mod", "HOME": str(directory)}
    subprocess.run([go, "build", "-o", "busy-go", "."], cwd=directory, check=True, env={**os.environ, **cache})
    return directory / "busy-go"


def test_a_go_binary_is_recorded_with_frame_pointers(tmp_path: Path) -> None:
    """newcomer10 a-F6, b-8: Go code has no .eh_frame, so the default DWARF call graph gave 1-frame stacks and
    advice that went in a circle (dwarf,65528, then --window; fp, then dwarf)."""
    build_go(tmp_path)
    stderr, folded = record(tmp_path, "./busy-go")
    assert "busy-go is a Go binary: recorded with --call-graph fp" in stderr, stderr
    assert re.search(r"^busy-go;runtime\.goexit(\.abi0)?;main\.main\.func\d+;main\.work", folded, re.M), folded
    assert rooted(stderr) >= 90.0, stderr  # goroutines start at runtime.goexit, Ms at runtime.mstart
    assert "--call-graph dwarf" not in stderr, stderr
    # asked for DWARF: the stacks stop at their first frame, and the advice names fp (and nothing else)
    stderr, folded = record(tmp_path, "./busy-go", options=("--call-graph", "dwarf"))
    assert "is a Go binary" not in stderr and rooted(stderr) < 10.0, stderr
    fixes = [line for line in stderr.splitlines() if "fix:" in line]
    assert len(fixes) == 1 and fixes[0].endswith("Go keeps frame pointers: record with --call-graph fp"), stderr


# ~0.5 s of optimised JavaScript (named in the perf map node --perf-basic-prof writes) under a few calls.
BUSY_JS = """
class Foo { heavy(n) { let x = 0; for (let i = 0; i < n; i++) x += Math.sqrt(i); return x; } }
function outer(n) { return new Foo().heavy(n); }
let t = 0; for (let r = 0; r < 10; r++) t += outer(2e7);
console.log(t > 0);
"""


def fixes_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("  fix: ")]


def test_a_v8_program_is_advised_frame_pointers_and_never_jit(tmp_path: Path) -> None:
    """newcomer10 a-F7: node's stacks stop at V8's JIT frames under DWARF; the fix said `record with --jit`,
    which record then refused for a non-Python command in a line that read like an error (exit 0)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (apt-get install nodejs)")
    (tmp_path / "busy.js").write_text(BUSY_JS)
    try:
        _v8_advice(tmp_path, node)
    finally:  # node writes /tmp/perf-PID.map and leaves it: ours name this test's script
        for path in Path("/tmp").glob("perf-*.map"):
            if str(tmp_path / "busy.js") in path.read_text(errors="replace"):
                path.unlink(missing_ok=True)


def _v8_advice(tmp_path: Path, node: str) -> None:
    stderr, folded = record(tmp_path, node, "--perf-basic-prof", "busy.js", options=("--jit",))
    assert "flamegraph: --jit ignored: it works for Python commands" in stderr, stderr
    assert "JS:*heavy" in folded, folded
    fixes = fixes_of(stderr)
    assert fixes and not any("--jit" in fix for fix in fixes), stderr
    assert any("stop at a V8 JIT frame" in fix and fix.endswith("record with --call-graph fp") for fix in fixes)
    # following it: the JavaScript frames sit between node::Start and the leaf, the stacks rooted
    stderr, folded = record(tmp_path, node, "--perf-basic-prof", "busy.js", options=("--call-graph", "fp"))
    assert re.search(r"node::Start;.*;JS:\*heavy [^;]*busy\.js", folded), folded
    assert rooted(stderr) >= 80.0, stderr
    assert not any("--call-graph dwarf" in fix or "--jit" in fix for fix in fixes_of(stderr)), stderr


def test_offcpu_records_a_go_binary_with_frame_pointers(tmp_path: Path) -> None:
    """As record: a Go binary's waits recorded with DWARF stop at runtime.futex; with fp they reach the
    goroutine or the M that waited."""
    build_go(tmp_path)
    folded = tmp_path / "off.folded"
    done = subprocess.run(
        [*FLAMEGRAPH, "offcpu", "--no-svg", "--folded", str(folded), "--", "./busy-go"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "busy-go is a Go binary: recorded with --call-graph fp" in done.stderr, done.stderr
    assert re.search(r";runtime\.(goexit|mstart)(\.abi0)?;", folded.read_text()), folded.read_text()
