"""A real Dask cluster over TCP on 127.0.0.1 (`dask scheduler`, `dask worker`s standing for hosts), and
the fleet's perf processes, for the fleet tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from flamegraph.fleet.hosts import HOST_VARIABLE

from .extras import need

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
DASK = str(Path(sys.executable).with_name("dask"))


def fleet_perfs() -> list[int]:
    """perf processes recording for a fleet task (their perf.data is in a flamegraph-fleet- scratch dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"perf") and any(b"/flamegraph-fleet-" in a for a in argv):
            found.append(int(entry.name))
    return found


def wait_for(check: object, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def has_events(pid: int) -> bool:
    """Whether perf process `pid` has opened its perf_event fds (it records from then on)."""
    try:
        return any(os.readlink(fd) == "anon_inode:[perf_event]" for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False


@dataclass
class TcpCluster:
    address: str
    scheduler: subprocess.Popen[bytes]
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def add_worker(
        self, name: str, env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()
    ) -> subprocess.Popen[bytes]:
        """`dask worker --name NAME` (no nanny: killing it kills the worker), standing for host NAME."""
        environment = {**os.environ, HOST_VARIABLE: name, **(env or {})}
        scratch = Path(tempfile.mkdtemp(prefix=f"dask-{name}-"))
        scratch.chmod(0o777)  # a worker running as another user writes here too
        argv = [*prefix, DASK, "worker", self.address, "--name", name, "--nthreads", "1", "--no-nanny"]
        argv += ["--no-dashboard", "--host", "127.0.0.1", "--local-directory", str(scratch)]
        proc = subprocess.Popen(argv, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.workers[name] = proc
        return proc

    def names(self) -> set[str]:
        import distributed

        with distributed.Client(self.address, timeout=10) as client:
            info = client.scheduler_info(n_workers=-1)["workers"]
            return {w["name"] for w in info.values()}

    def wait_workers(self, *names: str) -> None:
        wait_for(lambda: set(names) <= self.names(), 60, f"workers {names}")

    def remove(self, name: str) -> None:
        proc = self.workers.pop(name)
        proc.kill()
        proc.wait()
        wait_for(lambda: name not in self.names(), 30, f"worker {name} to leave")


@contextmanager
def tcp_cluster(directory: Path, *names: str) -> Iterator[TcpCluster]:
    """A scheduler on a free port and one worker per name, all killed on the way out (skips without Dask)."""
    need("distributed")
    scheduler_file = directory / "scheduler.json"
    argv = [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"]
    scheduler = subprocess.Popen(
        [*argv, "--scheduler-file", str(scheduler_file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    cluster = TcpCluster("", scheduler)
    try:
        wait_for(scheduler_file.exists, 60, "the scheduler")
        time.sleep(0.2)
        cluster.address = json.loads(scheduler_file.read_text())["address"]
        for name in names:
            cluster.add_worker(name)
        cluster.wait_workers(*names)
        yield cluster
    finally:
        for proc in [*cluster.workers.values(), scheduler]:
            proc.kill()  # idle by now; a graceful close only costs time
            proc.wait()
