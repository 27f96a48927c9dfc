"""The fleet's faults from issue 18, reproduced as reported: a wrong --scheduler endpoint, an output
that cannot be written, Ctrl-C in a real terminal with a LocalCluster, a worker stopped mid-recording."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers.children import interruptible
from helpers.extras import need
from helpers.fleet import FLAMEGRAPH, fleet_perfs, has_events, tcp_cluster, wait_for

from flamegraph.fleet.model import MISSING, HostRequest, Target
from flamegraph.io.diagnostics import EXIT_INTERRUPTED, EXIT_NO_CLUSTER, EXIT_NO_INPUT, EXIT_OK, ClusterUnavailable

pytestmark = pytest.mark.fleet


# -- endpoints that are not a Dask scheduler ------------------------------------------------------------


@contextmanager
def serving(kind: str) -> Iterator[str]:
    """tcp://127.0.0.1:PORT where an HTTP server, an SSH-like banner, a silent listener or nothing is."""
    if kind == "http":
        server = ThreadingHTTPServer(("127.0.0.1", 0), SimpleHTTPRequestHandler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"tcp://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
        return
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    if kind == "nothing":
        listener.close()  # the port was free a moment ago: nothing listens there now
        yield f"tcp://127.0.0.1:{port}"
        return
    listener.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)  # kept open: a silent peer, not a closed one
            if kind == "ssh":
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{port}"
    finally:
        listener.close()
        for conn in accepted:
            conn.close()


ENDPOINTS = {
    "http": "sent no Dask greeting",
    "ssh": "is not a Dask scheduler: it sent b'SSH-2.0-OpenSSH_9.2\\r\\n'",
    "silent": "sent no Dask greeting",
    "nothing": "Connection refused",
}


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
@pytest.mark.parametrize("kind", ENDPOINTS)
def test_check_scheduler_answers_within_its_timeout(kind: str) -> None:
    from flamegraph.fleet.scheduler import check_scheduler

    timeout = 1.0  # the default 5 s, which the silent peers wait out: the CLI's, in the test below
    with serving(kind) as address:
        started = time.monotonic()
        with pytest.raises(ClusterUnavailable) as raised:
            check_scheduler(address, timeout)
        assert time.monotonic() - started < timeout + 1
    assert ENDPOINTS[kind] in str(raised.value)
    assert ("within 1 s" in str(raised.value)) == (kind in ("http", "silent"))


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
def test_wrong_endpoints_are_one_line_and_exit_11(tmp_path: Path) -> None:
    """`fleet record` and `fold --scheduler` against an HTTP server (it hung for minutes), an SSH banner
    (a MemoryError traceback), a silent listener and a closed port: one line, exit 11, in seconds."""
    need("distributed")  # without Dask, every fleet command says how to install it instead (exit 11 too)
    text = tmp_path / "in.txt"
    text.write_text("python 1 1.0: cpu-clock:\n\tffff main (/bin/python)\n\n")
    with serving("http") as http, serving("ssh") as ssh, serving("silent") as silent, serving("nothing") as nothing:
        runs = {}
        for kind, address in (("http", http), ("ssh", ssh), ("silent", silent), ("nothing", nothing)):
            fleet = ["fleet", "record", "--scheduler", address, "--all-cpus", "--duration", "1"]
            runs[kind, "fleet"] = [*fleet, "-o", str(tmp_path / f"{kind}.svg")]
            runs[kind, "fold"] = ["fold", "--scheduler", address, str(text), "-o", str(tmp_path / f"{kind}.folded")]
        started = time.monotonic()
        procs = {
            key: subprocess.Popen([*FLAMEGRAPH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for key, args in runs.items()
        }
        done = {key: proc.communicate(timeout=60) for key, proc in procs.items()}
        took = time.monotonic() - started  # eight CLIs at once on a shared machine: start-up dominates
    for (kind, command), (_out, err) in done.items():
        assert procs[kind, command].returncode == EXIT_NO_CLUSTER, (kind, command, err)
        assert err.count("\n") == 1 and "Traceback" not in err, (kind, command, err)
        assert ENDPOINTS[kind] in err, (kind, command, err)
        assert ("within 5 s" in err) == (kind in ("http", "silent")), (kind, command, err)  # the default timeout
    assert took < 45


# -- outputs are checked before anything is recorded ------------------------------------------------------


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
@pytest.mark.parametrize("flag", ["-o", "--folded", "--outlier"])
def test_an_output_that_is_a_directory_is_refused_before_recording(tmp_path: Path, flag: str) -> None:
    adir = tmp_path / "adir"
    adir.mkdir()
    args = ["fleet", "record", "--scheduler", "local:1", "--all-cpus", "--duration", "10"]
    outputs = {"-o": tmp_path / "x.svg", "--folded": tmp_path / "x.folded", "--outlier": tmp_path / "o.svg"}
    outputs[flag] = adir
    for name, path in outputs.items():
        args += [name, str(path)]
    started = time.monotonic()
    proc = subprocess.run([*FLAMEGRAPH, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == EXIT_NO_INPUT, proc.stderr
    assert proc.stderr == f"flamegraph: {adir}: cannot write: is a directory\n"
    assert time.monotonic() - started < 10  # not after a 10 s recording
    assert "recording" not in proc.stderr


# -- Ctrl-C in a real terminal, LocalCluster -------------------------------------------------------------


def _own_terminal() -> None:
    """In the child: a new session whose controlling terminal is the pty on stdin (as a login shell's)."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    interruptible()  # Ctrl-C typed on it


def _perfs_under(directory: Path) -> list[int]:
    """The fleet's perf processes recording into `directory` (other tests' fleets may run meanwhile)."""
    found = []
    for pid in fleet_perfs():
        try:
            if str(directory).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def _sampling(perf: int) -> bool:
    """perf has started its workload (`sleep`, which bounds an --all-cpus recording): it enables its
    events then, after opening them and describing every process (seconds on a loaded machine)."""
    from flamegraph.record.processes import children_of

    for child in children_of(perf):
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == "sleep":
                return True
        except OSError:
            continue
    return False


@pytest.mark.perf
def test_ctrl_c_in_a_terminal_stops_the_local_cluster_cleanly(tmp_path: Path) -> None:
    """^C typed in the terminal reaches the whole foreground group: it killed the LocalCluster's workers
    (exit 11, Dask tracebacks, no graph, a perf.data left in $TMPDIR)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    svg, folded = tmp_path / "fleet.svg", tmp_path / "fleet.folded"
    args = ["fleet", "record", "--scheduler", "local:2", "--duration", "10", "--all-cpus", "-F", "99"]
    args += ["--call-graph", "fp", "-o", str(svg), "--folded", str(folded)]
    proc, master = _in_terminal(args, scratch)
    seen: list[bytes] = []

    def read(seconds: float) -> None:
        seen.append(_read(master, seconds))

    try:
        wait_for(lambda: read(0.1) or any(map(_sampling, _perfs_under(scratch))), 60, "the host recording")
        read(1.5)
        os.write(master, b"\x03")  # the terminal sends SIGINT to its foreground process group
        end = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < end:
            read(0.5)
        read(0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    text = b"".join(seen).decode(errors="replace")
    assert proc.returncode == EXIT_OK, text
    assert "Traceback" not in text and "stopping every host's recording" in text
    assert "1 of 1 host answered" in svg.read_text()
    assert folded.stat().st_size > 0
    assert sorted(p.name for p in scratch.iterdir()) == []  # no flamegraph-fleet-*, no dask-scratch-space
    wait_for(lambda: not _perfs_under(scratch), 10, "no perf left")


def _in_terminal(args: list[str], scratch: Path) -> tuple[subprocess.Popen[bytes], int]:
    """The CLI in a new session whose controlling terminal is a pty; its master end."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [*FLAMEGRAPH, *args], stdin=slave, stdout=slave, stderr=slave, preexec_fn=_own_terminal,
        env={**os.environ, "TMPDIR": str(scratch)},
    )  # fmt: skip
    os.close(slave)
    return proc, master


def _read(master: int, seconds: float) -> bytes:
    seen = b""
    end = time.monotonic() + seconds
    while time.monotonic() < end and select.select([master], [], [], 0.1)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal's last process closed it
            break
        if not chunk:
            break
        seen += chunk
    return seen


def _starting_workers(client: int) -> list[int]:
    """The LocalCluster's worker processes already spawned but still in the client's (the terminal's)
    process group: their preload has not run yet."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getpgid(int(entry.name)) == client:
                if b"--multiprocessing-fork" in (entry / "cmdline").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def _environ_holds(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.perf
def test_ctrl_c_while_the_local_cluster_starts_is_a_clean_stop(tmp_path: Path) -> None:
    """^C typed while the LocalCluster was starting reached its worker processes (still in the terminal's
    group, importing Dask): their KeyboardInterrupt tracebacks filled the terminal. Now the terminal's
    signals are blocked in what the cluster start spawns; the client stops once the cluster is up."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    svg = tmp_path / "fleet.svg"
    args = ["fleet", "record", "--scheduler", "local:2", "--duration", "10", "--all-cpus", "-o", str(svg)]
    proc, master = _in_terminal(args, scratch)
    seen = b""
    try:
        wait_for(lambda: _starting_workers(proc.pid) or proc.poll() is not None, 60, "a starting worker")
        seen += _read(master, 0.1)
        os.write(master, b"\x03")  # the terminal sends SIGINT to its foreground process group
        end = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < end:
            seen += _read(master, 0.5)
        seen += _read(master, 0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    text = seen.decode(errors="replace")
    assert proc.returncode == EXIT_INTERRUPTED, text
    assert "Traceback" not in text and "Exception ignored" not in text and "KeyboardInterrupt" not in text, text
    assert "recording" not in text and not svg.exists()  # stopped before any host recorded
    assert sorted(p.name for p in scratch.iterdir()) == []  # no flamegraph-fleet-*, no dask-scratch-space
    wait_for(lambda: not _environ_holds(str(scratch)), 10, "no worker (nor perf) left")


# -- a worker stopped while it records ---------------------------------------------------------------------

SPIN = "import sys, time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass\n"


def _spinning(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if marker.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.perf
def test_a_stopped_worker_leaves_no_perf_recording(tmp_path: Path) -> None:
    """A SIGSTOPped worker cannot stop its perf at --duration, and is not dead, so perf's parent-death
    signal never comes: its perf and command ran on after the client had left. The watchdog stops them."""
    from flamegraph.fleet.cluster import connect, record_fleet
    from flamegraph.fleet.hosts import children
    from flamegraph.fleet.scheduler import Scheduler
    from flamegraph.fleet.watchdog import MARGIN

    marker = f"fleet-stopped-{os.getpid()}"
    duration = 2.0
    request = HostRequest(Target(command=(sys.executable, "-c", SPIN, marker)), duration, freq=99,
                          call_graph="fp")  # fmt: skip
    outcome: list[object] = []
    with tcp_cluster(tmp_path, "frozen") as cluster:
        worker = cluster.workers["frozen"]

        def perfs() -> list[int]:
            return [pid for pid in fleet_perfs() if pid in children(worker.pid)]

        with connect(Scheduler.parse(cluster.address)) as client:
            thread = threading.Thread(
                target=lambda: outcome.append(record_fleet(client, request, 1.0, lambda _: None, start_allowance=1.0))
            )
            thread.start()
            try:
                wait_for(lambda: any(map(has_events, perfs())) and _spinning(marker), 60, "recording")
                perf = perfs()
                os.kill(worker.pid, signal.SIGSTOP)
                stopped = time.monotonic()
                # the watchdog counts from perf's start: perf and the command are gone by then
                wait_for(lambda: not any(p in fleet_perfs() for p in perf), duration + MARGIN + 15, "perf stopped")
                wait_for(lambda: not _spinning(marker), 5, "the command ended")
                took = time.monotonic() - stopped
                thread.join(timeout=60)
            finally:
                os.kill(worker.pid, signal.SIGKILL)
                for pid in _spinning(marker):
                    os.kill(pid, signal.SIGKILL)
    assert took < duration + MARGIN + 12
    print(f"perf and its command gone {took:.1f} s after the worker was stopped")
    (host,) = outcome[0].results  # type: ignore[attr-defined]
    assert host.state == MISSING and "hung" in host.reason


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
def test_non_finite_seconds_are_refused() -> None:
    """`min=` let nan and inf through (nan < 0.1 is false): --duration nan never stopped a host's perf."""
    base = ["fleet", "record", "--scheduler", "tcp://127.0.0.1:1", "--all-cpus"]
    runs = [["--duration", "nan"], ["--duration", "inf"], ["--grace", "nan"]]
    procs = [subprocess.Popen([*FLAMEGRAPH, *base, *extra], stderr=subprocess.PIPE, text=True) for extra in runs]
    for extra, proc in zip(runs, procs, strict=True):
        _, err = proc.communicate(timeout=60)
        option, value = extra
        assert proc.returncode == 2 and err == f"flamegraph: {option} {value!r}: not a finite number\n", (extra, err)
