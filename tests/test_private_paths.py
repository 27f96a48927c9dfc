"""A root run never writes through another user's links: every directory the tool picks itself is ours.

Each attack is planted as an unprivileged user plants it: a forked child that drops to uid nobody
creates the directory we would use (mode 777) in a sticky, world-writable directory (as /tmp is) and
links every name we would write, for the next PIDS process ids, to a file of root's (the child
creates no process, so the program we start next gets one of them). Then the real writer
runs as root; the file must be untouched and the run refused with one line, exit 4 (docs/exit-codes.md).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import REPO

from flamegraph.frameworks.jit import jitmap, session
from flamegraph.frameworks.jit.hook import HOOK, JitHook, inject
from flamegraph.frameworks.mxnet.hook import MxnetHook
from flamegraph.io.diagnostics import EXIT_NO_INPUT
from flamegraph.io.private import NotPrivate, private_dir, replace_file
from flamegraph.record import RecordSpec

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="planting as another user needs root"),
    pytest.mark.parallel,  # its perf tests were proven beside two busy loops (make test's parallel part)
]

NOBODY = 65534
VICTIM_TEXT = b"root's own file\n"
PID_MAX = int(Path("/proc/sys/kernel/pid_max").read_text())
PIDS = 3000  # the next process ids: the hook's program is started within this many (2 cores, busy)


def as_nobody(action: Callable[[], None]) -> None:
    """Run `action` in a forked child that has become uid/gid nobody (no groups)."""
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            action()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the planting child failed"


def plant(directory: Path, names: Callable[[int], list[str]], target: Path) -> None:
    """As nobody: `directory` made with mode 777 and, for the next PIDS process ids (and ours), links
    named `names(pid)` -> `target`."""

    def run() -> None:
        os.mkdir(directory)
        os.chmod(directory, 0o777)
        last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
        pids = {os.getppid(), *((last + i) % PID_MAX for i in range(1, PIDS + 1))} - {0}
        for pid in sorted(pids):
            for name in names(pid):
                os.symlink(target, directory / name)

    as_nobody(run)


@pytest.fixture
def public() -> Iterator[Path]:
    """A root-owned sticky directory everyone may write to, as /tmp is (on tmpfs where there is one:
    thousands of links on a busy disk take seconds)."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"
    path = Path(tempfile.mkdtemp(prefix="flamegraph-public-", dir=base))
    path.chmod(0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "root-only"
    path.write_bytes(VICTIM_TEXT)
    path.chmod(0o600)
    return path


def untouched(victim: Path) -> bool:
    return victim.read_bytes() == VICTIM_TEXT


def hook(*options: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The in-process hook as `record` runs it, around a program that does nothing."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, str(HOOK), *options, "--", "-c", "pass"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd, env=env)


# -- the reported attack: PERF_DATA.mxnet/ planted, the hook's files linked to root's --------------------


def mxnet_names(pid: int) -> list[str]:
    return [f"mxnet-{pid}.json.{pid}.tmp", f"dnnl-verbose-{pid}.log"]


def test_hook_refuses_a_planted_mxnet_directory(public: Path, victim: Path, tmp_path: Path) -> None:
    planted = public / "run.data.mxnet"
    plant(planted, mxnet_names, victim)
    proc = hook("--mxnet-dir", str(planted), cwd=tmp_path)
    assert untouched(victim)
    assert proc.returncode == EXIT_NO_INPUT, proc.stderr
    assert proc.stderr == (
        f"flamegraph: {planted}: not a private directory: it belongs to uid {NOBODY}, not to us (uid 0); "
        "remove it or choose another place\n"
    )


def test_mxnet_hook_refuses_before_recording(public: Path, victim: Path) -> None:
    planted = public / "run.data.mxnet"
    plant(planted, mxnet_names, victim)
    before = sorted(os.listdir(planted))
    with pytest.raises(NotPrivate, match="belongs to uid 65534"):
        MxnetHook(planted, note=print).prepare(RecordSpec(command=(sys.executable, "-c", "pass")))
    assert untouched(victim) and sorted(os.listdir(planted)) == before  # nothing removed or added


@pytest.mark.perf
def test_record_mxnet_with_a_planted_directory_end_to_end(public: Path, victim: Path, tmp_path: Path) -> None:
    """The reported run: `record --mxnet --perf-data /tmp/run.data` as root; exit 4 before perf starts."""
    data = public / "run.data"
    plant(public / "run.data.mxnet", mxnet_names, victim)
    argv = [sys.executable, "-m", "flamegraph", "record", "--mxnet", "--perf-data", str(data)]
    argv += ["-o", str(tmp_path / "out.svg"), "--", sys.executable, "-c", "pass"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert untouched(victim)
    assert proc.returncode == EXIT_NO_INPUT, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("note: ")]
    assert errors == [
        f"flamegraph: {public}/run.data.mxnet: not a private directory: it belongs to uid {NOBODY}, not to us "
        "(uid 0); remove it or choose another place"
    ]
    assert not data.exists() and not (tmp_path / "out.svg").exists()


@pytest.mark.perf
def test_record_mxnet_in_our_own_directory_still_works(public: Path, tmp_path: Path) -> None:
    """The same run where PERF_DATA.mxnet/ is ours (an earlier run's): accepted, its files ours alone."""
    data = public / "run.data"
    (public / "run.data.mxnet").mkdir(mode=0o755)
    argv = [sys.executable, "-m", "flamegraph", "record", "--mxnet", "--perf-data", str(data)]
    argv += ["-o", str(tmp_path / "out.svg"), "--", sys.executable, "-c", "pass"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "the program never imported mxnet" in proc.stderr
    written = list((public / "run.data.mxnet").iterdir())
    # the trace's file is made with its pipe's drainer, before the program runs: empty when it never traced
    assert {p.name.split("-")[0] for p in written} == {"mxnet", "dnnl", "profile"}, written
    for path in written:
        status = path.lstat()
        assert stat.S_ISREG(status.st_mode) and status.st_uid == 0 and stat.S_IMODE(status.st_mode) == 0o644


# -- the JIT directory: the jitdump marker, the kernels file, perf inject's output ---------------------


def jit_names(pid: int) -> list[str]:
    return [f"jit-{pid}.dump", f"jit-{pid}.kernels"]


def test_hook_refuses_a_planted_jit_directory(public: Path, victim: Path, tmp_path: Path) -> None:
    planted = public / "run.data.jit"
    plant(planted, jit_names, victim)
    proc = hook("--jit-dir", str(planted), cwd=tmp_path)
    assert untouched(victim)
    assert proc.returncode == EXIT_NO_INPUT and "not a private directory" in proc.stderr, proc.stderr


def test_jit_hook_refuses_a_planted_directory(public: Path, victim: Path) -> None:
    planted = public / "run.data.jit"
    plant(planted, jit_names, victim)
    with pytest.raises(NotPrivate, match="belongs to uid 65534"):
        JitHook(planted, note=print).prepare(RecordSpec(command=(sys.executable, "-c", "pass")))
    assert untouched(victim)


def test_a_command_without_python_or_jit_needs_no_jit_directory(public: Path, tmp_path: Path) -> None:
    """Python frames are on by default, but a C program never runs through the launcher: its JIT directory
    is neither made nor checked (a planted one does not refuse the run)."""
    spec = RecordSpec(command=("sh", "-c", "true"))
    fresh = JitHook(tmp_path / "c.data.jit", note=print, dnnl=False, python=None)
    assert fresh.prepare(spec) == spec and not fresh.directory.exists()
    plant(public / "c.data.jit", lambda _pid: [], public)
    assert JitHook(public / "c.data.jit", note=print, dnnl=False, python=None).prepare(spec) == spec


@pytest.mark.perf
@pytest.mark.parametrize("planted", [False, True], ids=["fresh", "planted"])
def test_record_of_a_c_program_makes_no_jit_directory(planted: bool, public: Path, tmp_path: Path) -> None:
    """`record --perf-data X -- PROGRAM`: no empty X.jit/ left, and another user's X.jit/ refuses nothing."""
    data, jit = public / "c.data", public / "c.data.jit"
    if planted:
        plant(jit, lambda _pid: [], public)
    loop = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"
    argv = [sys.executable, "-m", "flamegraph", "record", "--perf-data", str(data), "--no-svg", "--folded",
            str(tmp_path / "c.folded"), "--", "sh", "-c", loop]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert data.is_file()
    if planted:
        assert jit.stat().st_uid == NOBODY and not list(jit.iterdir())
    else:
        assert not jit.exists()


def test_jit_dumps_are_refused_in_a_shared_working_directory(public: Path, tmp_path: Path) -> None:
    """oneDNN opens dnnl_dump_*.bin by name in the working directory: /tmp-like places are refused."""
    with pytest.raises(NotPrivate, match=r"JIT dumps .* others may write to it \(mode 1777\)"):
        spec = RecordSpec(command=(sys.executable, "-c", "pass"), cwd=str(public))
        JitHook(tmp_path / "jit", note=print).prepare(spec)
    proc = hook("--jit-dir", str(tmp_path / "jit2"), cwd=public)
    assert proc.returncode == EXIT_NO_INPUT and "run from a directory of yours" in proc.stderr, proc.stderr


def test_attach_writes_no_kernels_file_into_another_users_directory(
    public: Path, victim: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """--pid: the jitdump marker names the directory whoever started the process chose; written only if ours."""
    planted = public / "jit"
    plant(planted, jit_names, victim)
    pid = PID_MAX + 12345  # no such process: the perf map below is ours to remove
    kernel = jitmap.Kernel(0x7F0000001000, 0x80, "jit_gemm", 1)
    monkeypatch.setattr(jitmap, "scan", lambda _pid: jitmap.ScanResult([kernel]))
    monkeypatch.setattr("flamegraph.frameworks.jit.hook.marker_of", lambda _pid: str(planted / f"jit-{pid}.dump"))
    notes: list[str] = []
    jit = JitHook(tmp_path / "jit", note=notes.append)
    try:
        jit.name_running(pid)
    finally:
        Path(jitmap.perf_map_path(pid)).unlink(missing_ok=True)
    assert untouched(victim)
    assert jit.directory == tmp_path / "jit"
    assert any("no unwind info for the JIT kernels" in n and "belongs to uid 65534" in n for n in notes), notes


@pytest.mark.perf
def test_perf_inject_writes_into_our_directory_only(public: Path, victim: Path, tmp_path: Path) -> None:
    """perf inject opens its -o by name: the name is a fresh one in PERF_DATA.jit/, never PERF_DATA.injected
    beside a perf.data in /tmp. (perf renames an existing non-empty -o to .old first; an empty file of
    root's, a lock or a flag, was written through the link, and the link then renamed over perf.data.)"""
    victim.write_bytes(b"")
    data = public / "run.data"
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-o", str(data), "--", "true"],
                   check=True, capture_output=True)  # fmt: skip
    as_nobody(lambda: os.symlink(victim, public / "run.data.injected"))
    jit_dir = private_dir(public / "run.data.jit")
    assert inject(data, jit_dir) is None
    assert victim.read_bytes() == b""
    assert data.is_file() and not data.is_symlink() and os.listdir(jit_dir) == []


def test_perf_map_replaces_a_planted_link(public: Path, victim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/tmp/perf-PID.map (perf reads it only there): a fresh file renamed over the name, the link replaced."""
    monkeypatch.setattr(jitmap, "PERF_MAP_DIR", str(public))
    as_nobody(lambda: os.symlink(victim, public / "perf-4242.map"))
    path = jitmap.write_perf_map([jitmap.Kernel(0x1000, 0x10, "k", 1)], 4242)
    assert untouched(victim)
    status = os.lstat(path)
    assert stat.S_ISREG(status.st_mode) and status.st_uid == 0 and Path(path).read_text() == "1000 10 k\n"


def test_a_planted_link_to_a_running_process_map_is_not_appended_through(
    public: Path, victim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """save_perf_map appends to a map the process wrote itself (python -X perf): a link another user
    planted under that name since the process started is no such map; ours replaces it."""
    monkeypatch.setattr(jitmap, "PERF_MAP_DIR", str(public))
    process = subprocess.Popen(["sleep", "30"])
    try:
        as_nobody(lambda: os.symlink(victim, public / f"perf-{process.pid}.map"))
        keep = tmp_path / "keep"
        keep.mkdir()
        path = jitmap.save_perf_map([jitmap.Kernel(0x1000, 0x10, "k", 1)], process.pid, str(keep))
    finally:
        process.kill()
        process.wait()
    assert untouched(victim)
    status = os.lstat(path)
    assert stat.S_ISREG(status.st_mode) and Path(path).read_text() == "1000 10 k\n"


def test_cfi_cache_of_another_user_is_neither_read_nor_written(public: Path, victim: Path) -> None:
    import hashlib

    code = b"\x55\x48\x89\xe5\x5d\xc3"  # push rbp; mov rbp, rsp; pop rbp; ret
    planted = public / "cfi"
    name = hashlib.sha256(code).hexdigest()
    as_nobody(lambda: (os.mkdir(planted), os.chmod(planted, 0o777), os.symlink(victim, planted / name)))
    result = session.analyse_cached([code], str(planted))
    assert untouched(victim)
    assert result[code].status == "ok"  # analysed afresh, the same answer without a cache


# -- scratch and fleet temporary directories ----------------------------------------------------------


@pytest.fixture
def open_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """TMPDIR is world-writable without the sticky bit: anyone could rename our directory away."""
    path = Path(tempfile.mkdtemp(prefix="flamegraph-opentmp-", dir="/tmp"))
    path.chmod(0o777)
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_scratch_recording_refuses_an_open_tmpdir(open_tmpdir: Path) -> None:
    from flamegraph.pipeline.scratch import ScratchRecording

    with pytest.raises(NotPrivate, match=r"may be written by others \(mode 0777, no sticky bit\)"):
        with ScratchRecording("flamegraph-record-", None, print) as scratch:
            scratch.data_path  # noqa: B018 - creating it is the point
    assert os.listdir(open_tmpdir) == []


def test_fleet_host_refuses_an_open_tmpdir(open_tmpdir: Path) -> None:
    from flamegraph.fleet.model import FAILED, HostIdentity, HostRequest, Target
    from flamegraph.fleet.tasks import record_host

    request = HostRequest(Target(command=("true",)), 1.0)
    result = record_host(request, HostIdentity("here"), "worker", lambda _seconds: False)
    assert result.state == FAILED and result.exit_code == EXIT_NO_INPUT
    assert "no sticky bit" in result.reason and os.listdir(open_tmpdir) == []


# -- the primitives ------------------------------------------------------------------------------------


def test_private_dir_rules(public: Path, tmp_path: Path) -> None:
    made = private_dir(tmp_path / "new" / "dir")
    assert stat.S_IMODE(made.stat().st_mode) == 0o755 & ~_umask()
    assert private_dir(made) == made  # ours: accepted again
    (tmp_path / "link").symlink_to(made)
    with pytest.raises(NotPrivate, match="is a symbolic link"):
        private_dir(tmp_path / "link")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chown(shared, 0, NOBODY)
    shared.chmod(0o775)  # a group that is not ours may write
    with pytest.raises(NotPrivate, match=r"may be written by others \(mode 0775\)"):
        private_dir(shared)
    (tmp_path / "file").write_text("")
    with pytest.raises(NotPrivate, match="not a directory"):
        private_dir(tmp_path / "file")


def test_replace_file_never_follows(public: Path, victim: Path) -> None:
    as_nobody(lambda: os.symlink(victim, public / "name"))
    replace_file(public / "name", b"ours\n")
    assert untouched(victim) and (public / "name").read_bytes() == b"ours\n"
    assert not (public / "name").is_symlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- what the hunt found next to them --------------------------------------------------------------------


def test_planted_dumps_are_never_read(public: Path, victim: Path) -> None:
    """A dump name in a shared directory that is a link (to root's file) or a FIFO: skipped, never opened
    (the link was read as a kernel's code, the FIFO blocked the scan for good)."""
    import threading

    def run() -> None:
        os.symlink(victim, public / "dnnl_dump_cpu_jit_k.1.bin")
        os.mkfifo(public / "dnnl_dump_cpu_jit_k.2.bin")

    as_nobody(run)
    found: list[list[jitmap.Dump]] = []
    reader = threading.Thread(target=lambda: found.append(jitmap.read_dumps(str(public))), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert found == [[]]


def test_dumps_are_looked_for_only_where_nobody_else_writes(public: Path, tmp_path: Path) -> None:
    from flamegraph.frameworks.flamegraph_launcher import dump_dirs

    assert dump_dirs(str(tmp_path), str(public), str(tmp_path)) == [str(tmp_path)]
