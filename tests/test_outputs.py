"""Outputs never destroy anything: the one safe writer, full disks, palette files, --per-event names.

Nothing here points `-o` at a real device node: on a build without the fix, that would replace the
node (as root, /dev/full became a regular file). Devices are reached through a symlink in tmp_path,
so a regression replaces only that link.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO

from flamegraph.color import format_palette, parse_palette
from flamegraph.io.diagnostics import OutputFailed
from flamegraph.io.writer import write_atomically

FOLDED = b"python;main;compute;gemm 50\npython;main;compute;relu 10\npython;main;io;read 20\n"
PERF_TEXT = REPO / "tests" / "golden" / "fold" / "cxx-names.perf.txt"


def run(*args: str, stdin: bytes | None = None, stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "flamegraph", *args],
        input=stdin,
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        cwd=REPO,
        timeout=120,
    )


def one_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text and "Exception ignored" not in text, text
    assert text.count("\n") == 1, text
    return text


@pytest.fixture
def folded(tmp_path: Path) -> Path:
    path = tmp_path / "in.folded"
    path.write_bytes(FOLDED)
    return path


def commands(folded: Path) -> dict[str, list[str]]:
    return {
        "fold": ["fold", "--no-group-unknown", str(PERF_TEXT)],
        "render": ["render", str(folded)],
        "diff": ["diff", str(folded), str(folded)],
    }


# --- full disk: one line, exit 4 ---------------------------------------------------------------


@pytest.mark.parametrize("command", ["fold", "render", "diff"])
def test_full_disk_on_stdout_is_one_line(command: str, folded: Path) -> None:
    with open("/dev/full", "wb") as full:
        result = run(*commands(folded)[command], stdout=full)
    assert result.returncode == 4
    assert one_line(result.stderr) == "flamegraph: <stdout>: cannot write: No space left on device\n"


@pytest.mark.parametrize("command", ["fold", "render", "diff"])
def test_full_disk_on_output_keeps_the_device(command: str, folded: Path, tmp_path: Path) -> None:
    link = tmp_path / "full.svg"
    link.symlink_to("/dev/full")
    result = run(*commands(folded)[command], "-o", str(link))
    assert result.returncode == 4
    assert one_line(result.stderr) == f"flamegraph: {link}: cannot write: No space left on device\n"
    assert link.is_symlink() and os.readlink(link) == "/dev/full"  # written through, never replaced
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full.svg", "in.folded"]  # no temporary left


def test_full_disk_while_writing_a_file_keeps_the_old_one(tmp_path: Path) -> None:
    out = tmp_path / "out.svg"
    out.write_bytes(b"what the user had")

    def write(stream: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OutputFailed, match=r"out.svg: cannot write: No space left on device"):
        write_atomically(out, write)
    assert out.read_bytes() == b"what the user had"
    assert [p.name for p in tmp_path.iterdir()] == ["out.svg"]


# --- what -o writes to ------------------------------------------------------------------------


def test_fifo_is_written_through(folded: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "graph.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run("render", str(folded), "-o", str(fifo))
    reader.join(timeout=60)
    if reader.is_alive():  # the FIFO was replaced: release the reader still waiting for a writer
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)) if stat.S_ISFIFO(os.lstat(fifo).st_mode) else None
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received and received[0].startswith(b"<?xml") and received[0].rstrip().endswith(b"</svg>")


def test_symlink_target_is_written_and_the_link_kept(folded: Path, tmp_path: Path) -> None:
    target = tmp_path / "graphs" / "real.svg"
    target.parent.mkdir()
    target.write_bytes(b"old")
    target.chmod(0o600)
    link = tmp_path / "latest.svg"
    link.symlink_to(Path("graphs") / "real.svg")
    result = run("render", str(folded), "-o", str(link))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(Path("graphs") / "real.svg")
    assert target.read_bytes().startswith(b"<?xml")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["real.svg"]


def test_dangling_symlink_creates_its_target(folded: Path, tmp_path: Path) -> None:
    link = tmp_path / "out.svg"
    link.symlink_to("made.svg")
    assert run("render", str(folded), "-o", str(link)).returncode == 0
    assert link.is_symlink() and (tmp_path / "made.svg").read_bytes().startswith(b"<?xml")


def test_existing_file_keeps_its_mode_and_owner(folded: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.folded"
    out.write_bytes(b"old")
    out.chmod(0o640)
    owner = (65534, 65534) if os.geteuid() == 0 else (os.geteuid(), os.getegid())  # root: give it to nobody
    os.chown(out, *owner)
    result = run("fold", "--no-group-unknown", str(PERF_TEXT), "-o", str(out))
    assert result.returncode == 0, result.stderr
    status = out.stat()
    assert stat.S_IMODE(status.st_mode) == 0o640
    assert (status.st_uid, status.st_gid) == owner
    assert out.read_bytes() != b"old"


def test_directory_is_refused(folded: Path, tmp_path: Path) -> None:
    result = run("render", str(folded), "-o", str(tmp_path))
    assert result.returncode == 4
    assert one_line(result.stderr) == f"flamegraph: {tmp_path}: is a directory, not a file to write to\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.folded"]


def test_dev_stdout_is_our_stdout_as_it_is(tmp_path: Path) -> None:
    """`-o /dev/stdout >> log` appends to the log, as without -o; the log is never renamed over."""
    log = tmp_path / "all.folded"
    log.write_bytes(b"kept;from;before 1\n")
    inode = log.stat().st_ino
    stdout = tmp_path / "stdout"
    stdout.symlink_to("/dev/stdout")  # not /dev/stdout itself: a regression replaces only this link
    with open(log, "ab") as out:
        result = run("fold", "--no-group-unknown", str(PERF_TEXT), "-o", str(stdout), stdout=out)
    assert result.returncode == 0, result.stderr
    assert log.stat().st_ino == inode
    alone = run("fold", "--no-group-unknown", str(PERF_TEXT))
    assert log.read_bytes() == b"kept;from;before 1\n" + alone.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["all.folded", "stdout"] and stdout.is_symlink()


def test_broken_pipe_is_quiet(tmp_path: Path) -> None:
    big = tmp_path / "big.folded"
    big.write_text("".join(f"a;b{i};c{i} {i + 1}\n" for i in range(5000)))
    process = subprocess.Popen(
        [sys.executable, "-m", "flamegraph", "render", "--minwidth", "0", str(big)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(100)
    process.stdout.close()  # `| head -c 100`
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == 0
    assert stderr == b""


SAMPLE_GZ = REPO / "sample_data" / "mlp-oncpu.perf.txt.gz"


@pytest.mark.parametrize(
    "args",
    [
        ["fold", str(SAMPLE_GZ)],
        ["fold", "--jobs", "2", str(SAMPLE_GZ)],
        ["convert", str(SAMPLE_GZ), "-", "--to", "folded"],
    ],
    ids=["fold", "fold-jobs", "convert"],
)
def test_head_1_leaves_with_exit_0(args: list[str], tmp_path: Path) -> None:
    """`fold sample.gz | head -1`: exit 0 as the docs promise (typer's own EPIPE handler said 1)."""
    command = " ".join([sys.executable, "-m", "flamegraph", *args])
    errors = tmp_path / "stderr"
    script = f"{command} 2>{errors} | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, timeout=120)
    assert done.stdout.strip() == b"0", errors.read_text()
    assert errors.read_bytes() == b""


# --- --per-event names ------------------------------------------------------------------------

CLASHING_EVENTS = (
    b"noploop 21796 [001] 1410597.984841:     100 a/b: \n"
    b"\t          4004d4 main (/tmp/noploop)\n\n"
    b"noploop 21796 [001] 1410597.984842:     200 a_b: \n"
    b"\t          4004d8 loop (/tmp/noploop)\n"
    b"\t          4004d8 main (/tmp/noploop)\n\n"
)


def test_per_event_names_that_sanitise_alike_do_not_overwrite(tmp_path: Path) -> None:
    source = tmp_path / "events.perf.txt"
    source.write_bytes(CLASHING_EVENTS)
    result = run("fold", "--no-group-unknown", str(source), "--per-event", str(tmp_path / "ev"))
    assert result.returncode == 0, result.stderr
    written = {p.name: p.read_bytes() for p in (tmp_path / "ev").iterdir() if p.suffix == ".folded"}
    assert written == {"a_b.folded": b"noploop;main;loop 200\n", "a_b-c14cddc0.folded": b"noploop;main 100\n"}
    sidecars = {p.name for p in (tmp_path / "ev").iterdir() if p.suffix == ".json"}
    assert sidecars == {"a_b.folded.json", "a_b-c14cddc0.folded.json"}  # each file's event beside it
    assert "a_b-c14cddc0.folded: 1 stacks, 100 events (event a/b)" in result.stderr.decode()  # periods: a-F2


# --- palette files ----------------------------------------------------------------------------


def test_palette_file_that_is_not_a_palette_is_left_unchanged(folded: Path, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_bytes(b"# notes\n\nkeep me\n")
    for victim, line, text in ((folded, 1, "python;main;compute;gemm 50"), (readme, 1, "# notes")):
        before = victim.read_bytes()
        result = run("render", str(folded), "--palette-file", str(victim), "-o", str(tmp_path / "out.svg"))
        assert result.returncode == 4
        assert one_line(result.stderr) == (
            f"flamegraph: {victim}:{line}: bad-palette-line: expected '<name>->rgb(<r>,<g>,<b>)', got {text!r}"
            " (not a palette file; it is left unchanged)\n"
        )
        assert victim.read_bytes() == before
    assert not (tmp_path / "out.svg").exists()


def test_palette_file_with_one_bad_line_reports_it(folded: Path, tmp_path: Path) -> None:
    palette = tmp_path / "palette.map"
    palette.write_bytes(b"gemm->rgb(1,2,3)\nrelu->rgb(4,5,6)\nread->rgb(300,0,0)\n")
    result = run("render", str(folded), "--palette-file", str(palette))
    assert result.returncode == 4
    assert f"{palette}:3: bad-palette-line" in one_line(result.stderr)
    assert palette.read_bytes() == b"gemm->rgb(1,2,3)\nrelu->rgb(4,5,6)\nread->rgb(300,0,0)\n"


def test_palette_file_empty_or_a_palette_is_extended_atomically(folded: Path, tmp_path: Path) -> None:
    palette = tmp_path / "palette.map"
    palette.write_bytes(b"")
    palette.chmod(0o600)
    assert run("render", str(folded), "--palette-file", str(palette)).returncode == 0
    first = palette.read_text()
    assert "gemm->rgb(" in first and "read->rgb(" in first
    assert stat.S_IMODE(palette.stat().st_mode) == 0o600
    palette.write_text(first.replace(first.split("gemm->")[1].split("\n")[0], "rgb(1,2,3)") + "\n")
    second = run("render", str(folded), "--palette-file", str(palette))
    assert second.returncode == 0
    assert b'fill="#010203"' in second.stdout
    assert "gemm->rgb(1,2,3)\n" in palette.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.folded", "palette.map"]


def test_palette_file_in_a_missing_directory_is_created(folded: Path, tmp_path: Path) -> None:
    palette = tmp_path / "colours" / "mxnet.map"
    result = run("render", str(folded), "--palette-file", str(palette))
    assert result.returncode == 0, result.stderr
    assert parse_palette(palette.read_text())["gemm"].startswith("#")


def test_palette_file_cannot_be_the_output(folded: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.svg"
    result = run("render", str(folded), "--palette-file", str(out), "-o", str(out))
    assert result.returncode == 2
    assert "is also an output of this run" in one_line(result.stderr)
    assert not out.exists()


def test_palette_names_survive_a_round_trip() -> None:
    colors = {"a\u2028b": "#010203", "c\x0cd": "#040506", "x->y": "#070809", "\udcff": "#0a0b0c"}
    assert parse_palette(format_palette(colors).decode("utf-8", "surrogateescape")) == colors


def test_closed_stdout_is_one_line(folded: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "flamegraph", "render", str(folded)],
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(1),  # `>&-`
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 4
    assert one_line(result.stderr) == "flamegraph: <stdout>: cannot write: it is closed\n"


# --- a read-only mount ------------------------------------------------------------------------


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A real read-only file system (tmpfs, remounted ro) holding `existing.svg` and a palette."""
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    mount = tmp_path / "ro"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=755", "tmpfs", str(mount)], check=True)
    try:
        (mount / "existing.svg").write_bytes(b"<svg/>")
        (mount / "palette.map").write_text("main->rgb(1,2,3)\n")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_read_only_file_system_is_named_as_such(read_only: Path, folded: Path) -> None:
    """An existing file on a read-only mount was reported as "permission denied" (root may write it)."""
    for args in (
        ["render", str(folded), "-o", str(read_only / "existing.svg")],  # an existing file
        ["render", str(folded), "-o", str(read_only / "new.svg")],  # a new file in a read-only directory
        ["fold", "--no-group-unknown", str(PERF_TEXT), "-o", str(read_only / "sub" / "new.folded")],
        ["render", str(folded), "--palette-file", str(read_only / "palette.map"), "-o", os.devnull],
        ["record", "--folded", str(read_only / "existing.svg"), "--no-svg", "--", "true"],  # checked first
    ):
        result = run(*args)
        assert result.returncode == 4, result.stderr
        assert "read-only file system" in one_line(result.stderr).lower(), result.stderr
        assert "permission denied" not in result.stderr.decode().lower()
    assert (read_only / "existing.svg").read_bytes() == b"<svg/>"
    assert sorted(p.name for p in read_only.iterdir()) == ["existing.svg", "palette.map"]


# -- an output that is one of the inputs: refused, the input kept --------------------------------------


@pytest.mark.parametrize(
    ("command", "same"),
    [
        ("fold", "path"),
        ("render", "path"),
        ("render --format speedscope", "path"),
        ("diff", "path"),
        ("convert", "path"),
        ("render", "symlink"),
        ("render", "hard link"),
        ("render", "another spelling"),
        ("render", "stdin"),
    ],
)
def test_an_output_that_is_an_input_is_refused(command: str, same: str, tmp_path: Path) -> None:
    """`render X.folded -o X.folded` would leave an SVG named X.folded: one line, exit 2, nothing written."""
    source = tmp_path / "in.txt"
    source.write_bytes(PERF_TEXT.read_bytes() if command == "fold" else FOLDED)
    before = source.read_bytes()
    output = {"path": source, "symlink": tmp_path / "link", "hard link": tmp_path / "hard",
              "another spelling": tmp_path / "sub" / ".." / "in.txt", "stdin": source}[same]  # fmt: skip
    if same == "symlink":
        output.symlink_to(source.name)
    elif same == "hard link":
        os.link(source, output)
    elif same == "another spelling":
        (tmp_path / "sub").mkdir()
    name, *options = command.split()
    read = "-" if same == "stdin" else str(source)
    argv = {"diff": [name, read, str(source), "-o", str(output)], "convert": [name, read, str(output), "--to",
            "speedscope"]}.get(name, [name, *options, read, "-o", str(output)])  # fmt: skip
    with source.open("rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "flamegraph", *argv], stdin=stdin, capture_output=True,
                              cwd=REPO, timeout=120)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    flag = "OUTPUT" if name == "convert" else "-o"
    assert one_line(proc.stderr) == (f"flamegraph: {flag} {output}: is also an input of this run (the same file): "
                                     "writing it would replace what is read; write to another file\n")  # fmt: skip
    assert source.read_bytes() == before


def test_a_file_nothing_can_be_created_beside_is_not_called_missing(folded: Path) -> None:
    """/proc/self/status exists (and root may open it for writing), but no file can be made in /proc/self
    to be renamed over it: that is said, not "No such file or directory" about the output itself."""
    result = run("render", str(folded), "-o", "/proc/self/status")
    assert result.returncode == 4
    assert one_line(result.stderr) == (
        "flamegraph: /proc/self/status: cannot write: cannot create a file in /proc/self (an output is written "
        "there, then renamed into place): No such file or directory\n"
    )


def test_an_output_on_a_device_or_beside_the_input_is_not_refused(folded: Path, tmp_path: Path) -> None:
    """Only the same regular file is refused: /dev/null (written through) and a copy are outputs as any."""
    copy = tmp_path / "copy.folded"
    copy.write_bytes(FOLDED)
    for output in ("/dev/null", str(copy)):
        proc = run("render", str(folded), "-o", output)
        assert proc.returncode == 0, proc.stderr
    assert copy.read_bytes().startswith(b"<?xml")


def test_the_room_a_graph_is_checked_for_is_less_than_the_smallest_graph() -> None:
    """`record` refuses an SVG output whose file system has less room than SMALLEST_GRAPH (b-4): no graph
    we draw may be smaller, or a disk with room for it would be refused."""
    from flamegraph.io.writer import SMALLEST_GRAPH
    from flamegraph.model import FoldedProfile
    from flamegraph.render import RenderOptions, render_svg

    smallest = render_svg(FoldedProfile({"a": 1}), RenderOptions(title=""))
    assert SMALLEST_GRAPH <= len(smallest) < 2 * SMALLEST_GRAPH
