"""The `flamegraph fold` command: inputs of every kind, outputs, and one clear line per user mistake."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GOLDEN, REPO, Unprivileged

from flamegraph.io.writer import _umask

pytestmark = pytest.mark.parallel  # its perf tests were proven beside two busy loops (make test's parallel part)

SAMPLE = GOLDEN / "fold" / "cxx-names.perf.txt"
# Grouping [unknown] frames by function reads the DSOs named in the input; the golden is machine-independent.
PLAIN = "--no-group-unknown"
EXPECTED = (GOLDEN / "fold" / "cxx-names.default.folded").read_bytes()


def run(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "flamegraph", *args], input=stdin, capture_output=True, cwd=REPO, env=env, timeout=120
    )


def test_text_gzip_and_stdin_give_the_same_output(tmp_path: Path) -> None:
    gz = tmp_path / "perf.txt.gz"
    gz.write_bytes(gzip.compress(SAMPLE.read_bytes()))
    assert run("fold", PLAIN, str(SAMPLE)).stdout == EXPECTED
    assert run("fold", PLAIN, str(gz)).stdout == EXPECTED
    assert run("fold", PLAIN, "-", stdin=SAMPLE.read_bytes()).stdout == EXPECTED


def test_output_file_is_written_atomically_and_kept_on_failure(tmp_path: Path) -> None:
    out = tmp_path / "out.folded"
    assert run("fold", PLAIN, str(SAMPLE), "-o", str(out)).returncode == 0
    assert out.read_bytes() == EXPECTED
    assert out.stat().st_mode & 0o777 == 0o666 & ~_umask()  # readable by others, like any file
    failed = run("fold", str(tmp_path / "missing.txt"), "-o", str(out))
    assert failed.returncode == 4 and failed.stderr.decode().strip().endswith("missing.txt: no such file")
    assert out.read_bytes() == EXPECTED  # what the user had is not lost
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.folded", "out.folded.json"]  # its facts beside it


@pytest.mark.parametrize(
    ("make_input", "code", "message"),
    [
        (lambda d: d / "nope.txt", 4, "no such file"),
        (lambda d: d, 4, "is a directory"),
        (lambda d: ((d / "empty.txt").write_bytes(b""), d / "empty.txt")[1], 3, "no samples found"),
        (lambda d: ((d / "bad.gz").write_bytes(b"\x1f\x8bxx"), d / "bad.gz")[1], 4, "gzip"),
    ],
    ids=["missing", "directory", "empty", "corrupt-gzip"],
)
def test_user_mistakes_give_one_line_and_an_exit_code(tmp_path: Path, make_input, code: int, message: str) -> None:  # type: ignore[no-untyped-def]
    result = run("fold", str(make_input(tmp_path)))
    assert result.returncode == code
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in lines[0]


def test_unreadable_file(unprivileged: Unprivileged) -> None:
    """Root reads every file: as root, the CLI runs as nobody (from a copy nobody can read)."""
    path = unprivileged.scratch / "secret.txt"
    path.write_bytes(SAMPLE.read_bytes())
    path.chmod(0)
    result = subprocess.run(unprivileged.command("fold", str(path)), capture_output=True, cwd="/", timeout=120)
    assert result.returncode == 4, result.stderr
    assert result.stderr.decode().strip() == f"flamegraph: {path}: permission denied"


def test_perf_data_without_perf_installed(tmp_path: Path) -> None:
    data = tmp_path / "perf.data"
    data.write_bytes(b"PERFILE2" + b"\0" * 200)
    env = dict(os.environ, PATH=str(tmp_path))  # no perf on PATH
    result = run("fold", str(data), env=env)
    assert result.returncode == 5
    assert "perf is not installed" in result.stderr.decode() and b"Traceback" not in result.stderr


def test_bad_lines_are_reported_and_the_rest_is_folded(tmp_path: Path) -> None:
    path = tmp_path / "perf.txt"
    path.write_bytes(SAMPLE.read_bytes().replace(b"\t    300 main (/usr/bin/prog)", b"\tjunk here"))
    result = run("fold", str(path))
    assert result.returncode == 0
    err = result.stderr.decode()
    assert f"{path}:15: bad-frame-line" in err and "skipped 1 of 2 records: 1 bad-frame-line" in err
    assert result.stdout.count(b"\n") == 1
    strict = run("fold", "--strict", str(path))
    assert strict.returncode == 3 and b":15: bad-frame-line" in strict.stderr


def test_per_event_writes_one_file_per_event(tmp_path: Path) -> None:
    source = GOLDEN / "fold" / "multi-event.perf.txt"
    result = run("fold", str(source), "--per-event", str(tmp_path / "ev"))
    assert result.returncode == 0
    written = sorted(p.name for p in (tmp_path / "ev").iterdir() if p.suffix == ".folded")
    assert written == ["cycles.folded", "cycles:u.folded", "instructions.folded"]
    plain = run("fold", str(source))
    assert b"skipped cycles (1 samples), cycles:u (1 samples)" in plain.stderr
    assert b"-e/--event EVENT, or --per-event DIR" in plain.stderr


def test_module_and_console_script_both_work() -> None:
    script = shutil.which("flamegraph", path=str(Path(sys.executable).parent))
    assert script is not None
    assert subprocess.run([script, "fold", PLAIN, str(SAMPLE)], capture_output=True).stdout == EXPECTED


@pytest.mark.perf
def test_perf_data_is_scripted_with_no_inline_and_folded(tmp_path: Path) -> None:
    data = tmp_path / "perf.data"
    record = subprocess.run(
        ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-o", str(data), "--",
         sys.executable, "-c", "sum(i*i for i in range(3_000_000))"],
        capture_output=True,
    )
    assert record.returncode == 0, record.stderr
    result = run("fold", str(data))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode(errors="replace").splitlines()
    assert lines and all(line.rsplit(" ", 1)[1].isdigit() for line in lines)
    assert any("_PyEval_EvalFrameDefault" in line or "python" in line for line in lines)
    pid_mode = run("fold", "--with-pid", str(data))
    assert all(line.split(";")[0].rsplit("-", 1)[1].isdigit() for line in pid_mode.stdout.decode().splitlines())
