"""The Python processes a recorded Python 3.12+ command starts (multiprocessing's fork and spawn workers, its
resource tracker, a subprocess) get what the command's own interpreter gets: their functions named and
unwound, every caller up to `_start`; one that our hook cannot reach (`python -S`) is said in one line; and no
/tmp/perf-PID.map of any of them is left behind unless the raw recording is kept or the user turned perf
support on. Real recordings of pyenv's 3.12 and 3.13 (docs/python.md, "Child processes")."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.pythons import need_python

PROGRAM = textwrap.dedent(
    '''
    import multiprocessing, subprocess, sys, time

    def child_work(seconds):
        end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < end:
            n += 1
        return n

    BARE = """
    import time
    def bare_work():
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            pass
    bare_work()
    """

    if __name__ == "__main__":
        for method in ("fork", "spawn"):
            with multiprocessing.get_context(method).Pool(2) as pool:
                pool.map(child_work, [0.4, 0.4])
        if "--bare" in sys.argv:
            subprocess.run([sys.executable, "-S", "-c", BARE], check=True)
    '''
)
PIDS = re.compile(r"flamegraph: (?:pid (\d+)|\d+ Python process(?:es)? it started \(pids? ([\d, ]+)\)): \d+ Python "
                  r"functions with unwind info")  # fmt: skip
UNHOOKED = re.compile(r"flamegraph: 1 Python process of the command ran without our start-up hook \(pid (\d+):")


def _record(tmp_path: Path, python: str, *options: str, bare: bool = False,
            env: dict[str, str] | None = None) -> tuple[list[list[str]], set[int], str]:  # fmt: skip
    """`flamegraph record --folded F OPTIONS -- PYTHON prog.py` -> (stacks, the pids with unwind info, stderr)."""
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    folded = tmp_path / "out.folded"
    ran = subprocess.run(
        [sys.executable, "-m", "flamegraph", "record", "--no-svg", "--folded", str(folded), *options, "--", python,
         str(program), *(["--bare"] if bare else [])], capture_output=True, text=True, timeout=180, cwd=tmp_path,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    pids = {int(p) for m in PIDS.finditer(ran.stderr) for p in re.findall(r"\d+", m.group(1) or m.group(2))}
    stacks = [line.rsplit(" ", 1)[0].split(";") for line in folded.read_text().splitlines()]
    return stacks, pids, ran.stderr


@pytest.mark.perf
@pytest.mark.parametrize("release", ["3.12", "3.13"])
def test_fork_and_spawn_workers_are_unwound_like_the_command(release: str, tmp_path: Path) -> None:
    stacks, pids, err = _record(tmp_path, need_python(release))
    work = [stack for stack in stacks if "child_work (prog.py)" in stack]
    assert work, "no sample of the workers' child_work"
    cut = [stack for stack in work if "_start" not in stack or "worker (pool.py)" not in stack]
    assert not cut, f"{len(cut)} of {len(work)} worker stacks stop before _start: {cut[:3]}"
    forked = [stack for stack in work if "<module> (prog.py)" in stack]  # the command's frames, as the fork left them
    spawned = [stack for stack in work if "spawn_main (spawn.py)" in stack]
    assert forked and spawned, "both the fork and the spawn workers' samples are there"
    assert len(pids) >= 6, f"the command, 2 fork workers, 2 spawn workers and the resource tracker: {err}"
    assert not {p for p in pids if os.path.lexists(f"/tmp/perf-{p}.map")}, "a perf map our perf support caused was left"


@pytest.mark.perf
def test_a_python_the_hook_cannot_reach_is_said_and_its_map_removed(tmp_path: Path) -> None:
    """`python -S` skips site (so our sitecustomize) but keeps the inherited PYTHONPERFSUPPORT: named, not unwound."""
    stacks, pids, err = _record(tmp_path, need_python("3.12"), bare=True)
    found = UNHOOKED.search(err)
    assert found is not None, err
    bare = int(found.group(1))
    assert bare not in pids
    assert any("bare_work (<string>)" in stack for stack in stacks), "its functions are named (its perf map)"
    assert "stacks stop at their first Python function" in err, "the fix line says why, not 'a larger copy'"
    left = {p for p in (*pids, bare) if os.path.lexists(f"/tmp/perf-{p}.map")}
    assert not left, f"perf maps our perf support caused were left: {sorted(left)}"


@pytest.mark.perf
@pytest.mark.parametrize(
    ("options", "env"),
    [(("--perf-data", "kept.data"), {}), ((), {"PYTHONPERFSUPPORT": "1"})],
    ids=["raw-recording-kept", "user-perf-support"],
)
def test_the_children_maps_stay_when_kept_or_not_ours(
    options: tuple[str, ...], env: dict[str, str], tmp_path: Path
) -> None:
    _stacks, pids, _err = _record(tmp_path, need_python("3.13"), *options, env=env)
    maps = [Path(f"/tmp/perf-{pid}.map") for pid in pids]
    try:
        assert len(pids) >= 6 and all(path.is_file() and not path.is_symlink() for path in maps)
    finally:
        for path in maps:
            path.unlink(missing_ok=True)


def _perf_data(records: list[bytes]) -> bytes:
    """A minimal perf.data: the file header, then `records` as its data section."""
    data = b"".join(records)
    return struct.pack("<8sQQQQQQ", b"PERFILE2", 104, 136, 0, 0, 104, len(data)) + bytes(104 - 56) + data


def _record_bytes(kind: int, misc: int, body: bytes) -> bytes:
    return struct.pack("<IHH", kind, misc, 8 + len(body)) + body


def test_an_exec_after_a_fork_marks_the_fork(tmp_path: Path) -> None:
    """perf copies a parent's maps into its child at FORK and keeps them past an exec; the child's FORK is marked
    PERF_RECORD_MISC_FORK_EXEC (as perf marks those it synthesises) so that the exec'd program's maps are its own.
    A thread's FORK and a fork without exec stay as they are; an exec COMM written before its FORK counts."""
    from flamegraph.record.exec_forks import PERF_RECORD_MISC_FORK_EXEC, mark_exec_forks

    fork = lambda pid, ppid, tid: _record_bytes(7, 0, struct.pack("<IIIIQ", pid, ppid, tid, ppid, 1))  # noqa: E731
    comm = lambda pid, misc: _record_bytes(3, misc, struct.pack("<II", pid, pid) + b"python\0\0")  # noqa: E731
    records = [comm(300, 1 << 13), fork(100, 10, 100), fork(10, 10, 11), fork(200, 10, 200), comm(100, 1 << 13),
               comm(200, 0), fork(300, 10, 300)]  # fmt: skip
    path = tmp_path / "perf.data"
    path.write_bytes(_perf_data(records))
    assert mark_exec_forks(str(path)) == 2
    data = path.read_bytes()
    at, misc = 104, {}
    for _ in records:
        kind, bits, size = struct.unpack_from("<IHH", data, at)
        if kind == 7:
            misc[struct.unpack_from("<II", data, at + 8)] = bits
        at += size
    marked = PERF_RECORD_MISC_FORK_EXEC
    assert misc == {(100, 10): marked, (10, 10): 0, (200, 10): 0, (300, 10): marked}
    assert len(data) == len(_perf_data(records))
    (tmp_path / "not.data").write_bytes(b"PERFILE2" + bytes(10))
    assert mark_exec_forks(str(tmp_path / "not.data")) == 0


def test_the_site_directory_is_under_our_private_cache_not_the_runs_scratch(tmp_path: Path) -> None:
    """A daemon that outlives the run keeps the PYTHONPATH entry: it must name a place nobody else can create
    again (a scratch path in a shared /tmp, once removed, could be planted with a sitecustomize)."""
    import stat

    from flamegraph.frameworks.jit import pysite
    from flamegraph.frameworks.jit.hook import HOOK

    cache = tmp_path / "cache"
    _env, site = pysite.install(tmp_path / "run", HOOK, {}, cache)
    assert site.parent == cache / "python-site" and site.name.startswith("site-")
    for directory in (site, site.parent):
        status = directory.lstat()
        assert status.st_uid == os.geteuid() and not status.st_mode & (stat.S_IWOTH | stat.S_IWGRP)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # a cache others may write to is not used: the run's own directory is
    _env, fallback = pysite.install(tmp_path / "run", HOOK, {}, shared)
    assert fallback == tmp_path / "run" / "site"


def test_the_site_stub_reads_in_any_python(tmp_path: Path) -> None:
    """The sitecustomize every Python the command starts imports, 2.7 included: valid syntax for all."""
    from flamegraph.frameworks.jit import pysite
    from flamegraph.frameworks.jit.hook import HOOK

    env, site = pysite.install(tmp_path, HOOK, {"PYTHONPATH": "/user/path"}, tmp_path / "cache")
    assert env["PYTHONPATH"] == f"{site}{os.pathsep}/user/path"
    stub = (site / "sitecustomize.py").read_text()
    compile(stub, "sitecustomize.py", "exec")
    from helpers.pythons import find_python

    for release in ("2.7", "3.6"):
        if (python := find_python(release)) is not None:
            checked = subprocess.run([python, "-c", "import sys; compile(sys.stdin.read(), 's', 'exec')"], input=stub,
                                     capture_output=True, text=True, timeout=30)  # fmt: skip
            assert checked.returncode == 0, checked.stderr
