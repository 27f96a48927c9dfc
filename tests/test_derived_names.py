"""Names the tool derives itself (an interval's STEM-001.svg/.folded, FILE.folded.json beside --folded, the
trend page) are never followed: in a shared sticky directory another user may have planted a link at them
first, and a root run must not write through it (newcomer10 b-9). A name the user gave is still followed."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from flamegraph.io.diagnostics import OutputFailed
from flamegraph.io.sidecar import Context
from flamegraph.io.writer import write_atomically, write_sidecar
from flamegraph.model import FoldedProfile
from tests.helpers.programs import compile_c, need_perf

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
NOBODY = 65534


def _put(data: bytes):  # type: ignore[no-untyped-def]
    return lambda out: out.write(data)


def test_a_derived_name_replaces_a_planted_link_and_leaves_its_target_alone(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "run-001.svg"
    link.symlink_to(victim)
    write_atomically(link, _put(b"<svg/>"), derived=True)
    assert victim.read_text() == "precious\n"
    assert not link.is_symlink() and link.read_bytes() == b"<svg/>"


def test_a_derived_name_does_not_create_a_dangling_links_target(tmp_path: Path) -> None:
    link = tmp_path / "run-002.folded"
    link.symlink_to(tmp_path / "elsewhere" / "created.txt")
    (tmp_path / "elsewhere").mkdir()
    write_atomically(link, _put(b"main 1\n"), derived=True)
    assert not (tmp_path / "elsewhere" / "created.txt").exists()
    assert link.read_bytes() == b"main 1\n"


def test_a_derived_name_replaces_a_fifo_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "run-trend.svg"
    os.mkfifo(fifo)
    done = threading.Event()

    def write() -> None:
        write_atomically(fifo, _put(b"<svg/>"), derived=True)  # opening the FIFO would block: no reader
        done.set()

    threading.Thread(target=write, daemon=True).start()
    assert done.wait(10), "the writer opened the FIFO"
    assert stat.S_ISREG(os.lstat(fifo).st_mode) and fifo.read_bytes() == b"<svg/>"


def test_a_derived_name_keeps_an_existing_files_mode(tmp_path: Path) -> None:
    old = tmp_path / "run-001.folded"
    old.write_text("old 1\n")
    old.chmod(0o640)
    write_atomically(old, _put(b"new 1\n"), derived=True)
    assert old.read_bytes() == b"new 1\n" and stat.S_IMODE(old.stat().st_mode) == 0o640


def test_a_derived_name_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "run-001.svg").mkdir()
    with pytest.raises(OutputFailed, match="is a directory"):
        write_atomically(tmp_path / "run-001.svg", _put(b"<svg/>"), derived=True)


def test_a_name_the_user_gave_is_still_followed(tmp_path: Path) -> None:
    target = tmp_path / "real.svg"
    target.write_text("old")
    named = tmp_path / "named.svg"
    named.symlink_to(target)
    write_atomically(named, _put(b"<svg/>"))
    assert named.is_symlink() and target.read_bytes() == b"<svg/>"


def test_the_capture_facts_beside_folded_never_follow_a_planted_link(tmp_path: Path) -> None:
    folded = tmp_path / "run.folded"
    folded.write_text("main 1\n")
    victim = tmp_path / "victim.json"
    (tmp_path / "run.folded.json").symlink_to(victim)
    notes: list[str] = []
    assert write_sidecar(folded, Context.of(FoldedProfile({"main": 1})), notes.append) is None
    assert not victim.exists()
    assert notes == [f"note: {tmp_path / 'run.folded.json'} is not a capture-facts file of ours: left alone "
                     "(the capture facts are not saved)"]  # fmt: skip


SPIN_C = """
#include <time.h>
int main(void) {
    struct timespec start, now; clock_gettime(CLOCK_MONOTONIC, &start);
    volatile unsigned long x = 0;
    do { for (int i = 0; i < 1000000; i++) x += i; clock_gettime(CLOCK_MONOTONIC, &now); }
    while (now.tv_sec - start.tv_sec < 3);
    return 0;
}
"""


@pytest.mark.perf
@pytest.mark.parallel
@pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's links needs root")
def test_record_every_as_root_writes_through_no_link_planted_in_a_shared_directory(tmp_path: Path) -> None:
    """The hunter's run: a sticky shared directory, nobody's links at every name `--every` derives."""
    need_perf()
    program = compile_c(tmp_path, "spin", SPIN_C)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    victims = tmp_path / "victims"
    victims.mkdir()
    (victims / "a.txt").write_text("precious\n")
    (victims / "b.txt").write_text("precious\n")
    planted = {"r-001.svg": "a.txt", "r-trend.svg": "b.txt", "r-002.folded": "c.txt", "r-002.folded.json": "d.txt",
               "r-001.folded.json": "e.txt"}  # fmt: skip
    for name, target in planted.items():
        (shared / name).symlink_to(victims / target)
        os.lchown(shared / name, NOBODY, NOBODY)
    done = subprocess.run([*FLAMEGRAPH, "record", "--every", "1", "-F", "199", "-o", str(shared / "r.svg"), "--",
                           str(program)], capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in victims.iterdir()) == ["a.txt", "b.txt"], done.stderr  # c, d, e not created
    assert (victims / "a.txt").read_text() == (victims / "b.txt").read_text() == "precious\n"
    assert (shared / "r-001.svg").read_bytes().startswith(b"<?xml") and not (shared / "r-001.svg").is_symlink()
    assert not (shared / "r-trend.svg").is_symlink()
    assert "r-001.folded.json is not a capture-facts file of ours: left alone" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's file needs root")
def test_a_derived_name_planted_by_another_user_becomes_a_file_of_ours(tmp_path: Path) -> None:
    planted = tmp_path / "run-001.svg"
    planted.write_text("theirs")
    os.chown(planted, NOBODY, NOBODY)
    planted.chmod(0o666)
    write_atomically(planted, _put(b"<svg/>"), derived=True)
    status = planted.lstat()
    assert planted.read_bytes() == b"<svg/>" and status.st_uid == 0 and not status.st_mode & stat.S_IWOTH
