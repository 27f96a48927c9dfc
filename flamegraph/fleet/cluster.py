"""The Dask side of a fleet: connect (or start a LocalCluster), find the hosts, run one task per host.

Dask is imported here only, inside the functions, so the rest of flamegraph (and `flamegraph
--help`) never pays for it and works without it. `--scheduler local[:N]` starts a LocalCluster on
127.0.0.1 (no dashboard, its files in a private temporary directory, its workers out of the
terminal's process group) and then takes exactly the path a real scheduler address takes; an
address is first checked by scheduler.check_scheduler.

Hosts are found by asking every worker who it is (`Client.run(host_identity)`): workers on the same
host are grouped and only one of them records (two would record the same machine twice). Each
host's task is pinned to that worker, is never retried elsewhere, and is watched: a worker that
leaves the cluster, a task that fails, or one that has not answered `duration + grace` seconds
after it started is reported as missing, and the rest are merged. Ctrl-C sets a Dask `Event` every
task watches, so each host stops perf cleanly and still sends back what it recorded.
"""

from __future__ import annotations

import logging
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..io.diagnostics import ClusterUnavailable, StopSignal, stopping_on_signals
from .hosts import host_identity, installed_version
from .model import FAILED, MISSING, HostIdentity, HostRequest, HostResult
from .scheduler import Scheduler, check_scheduler, cores
from .tasks import record_host

CONNECT_TIMEOUT = 10.0  # seconds to reach a scheduler
SURVEY_TIMEOUT = 10.0  # seconds for the workers to say who they are
START_ALLOWANCE = 15.0  # seconds a task may take to start (worker busy, imports) before its clock runs
POLL = 0.5
INSTALL_HINT = "install it with `pip install 'flamegraph-perf[fleet]'`"
LOCAL_WORKER_SETUP = "flamegraph.fleet.local_worker"  # the Dask preload of the LocalCluster's workers
TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGHUP)  # what a terminal sends its whole foreground group

Note = Callable[[str], None]


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ClusterUnavailable(f"fleet commands need Dask (dask.distributed): {INSTALL_HINT}") from None
    return distributed


@contextmanager
def connect(scheduler: Scheduler) -> Iterator[Any]:
    """A `distributed.Client` for the scheduler, closed (and a LocalCluster stopped) on the way out.
    A scheduler address is checked first (scheduler.check_scheduler): Dask would wait for minutes on
    an address where something else listens."""
    distributed = _distributed()
    if scheduler.address is None:
        with _local_cluster(distributed, scheduler.workers or cores()) as cluster:
            with distributed.Client(cluster) as client:
                yield client
        return
    check_scheduler(scheduler.address)
    try:
        client = distributed.Client(scheduler.address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as err:
        raise ClusterUnavailable(f"cannot reach the Dask scheduler at {scheduler.describe()}: {err}") from None
    with client:
        yield client


@contextmanager
def _local_cluster(distributed: Any, workers: int) -> Iterator[Any]:
    """A LocalCluster on 127.0.0.1 (no dashboard) whose workers keep their files in a private temporary
    directory, removed with the cluster, and leave the terminal's process group (local_worker.py)."""
    scratch = tempfile.mkdtemp(prefix="flamegraph-fleet-dask-")  # 0700, ours: not a shared dask-scratch-space
    try:
        held = _TerminalSignalsHeld()
        try:
            cluster = _start_local_cluster(distributed, workers, scratch)
        except BaseException:
            held.release()
            raise
        try:
            held.release()  # a Ctrl-C typed while the cluster started is raised here: it is closed below
            yield cluster
        finally:
            cluster.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _start_local_cluster(distributed: Any, workers: int, scratch: str) -> Any:
    import dask

    # Dask's statistical profiler samples worker threads every 10 ms, holding the GIL the fold needs
    # (fold chunks ran ~1.5x slower with it): our workers do not need it. Dask's own temporary files
    # (workers, scheduler) go to our private directory too.
    settings = {
        "distributed.worker.profile.enabled": False,
        "temporary-directory": scratch,
        # Dask's scheduler and workers always start an HTTP server, `dashboard_address=None` or not (the
        # scheduler then tries 8787 and warns when another cluster holds it): serving their info pages,
        # a JSON API and a proxy to the workers to any local user. No routes: every request is a 404.
        "distributed.scheduler.http.routes": [],
        "distributed.worker.http.routes": [],
    }
    try:
        with dask.config.set(settings):
            return distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",  # nothing listens beyond this machine
                dashboard_address="127.0.0.1:0",  # its unavoidable HTTP server: a free port, no 8787 to fight over
                scheduler_kwargs={"dashboard": False},  # and no dashboard on it
                local_directory=scratch,
                preload=[LOCAL_WORKER_SETUP],
                silence_logs=logging.CRITICAL,  # shutdown races log "stream closed"; our errors are ours
            )
    except (OSError, TimeoutError) as err:
        raise ClusterUnavailable(f"cannot start a local Dask cluster: {err}") from None


class _TerminalSignalsHeld:
    """Ctrl-C (or a hangup) while a LocalCluster starts waits until it is up. Blocked in this thread,
    the terminal's signals are blocked in the IO-loop thread Dask starts from it, and in the worker
    processes that thread spawns (a signal mask survives fork and exec): the terminal's SIGINT to its
    whole foreground group stays pending in a starting worker until its preload has left that group
    and discarded it (local_worker.py), instead of killing it mid-import with a traceback. The client
    gets it when the mask is restored, once the cluster is up, and stops cleanly."""

    def __init__(self) -> None:
        from multiprocessing import resource_tracker

        # Dask's first semaphore starts multiprocessing's resource tracker, which blocks SIGINT around
        # its spawn and then unblocks it (not restores): started now, before the mask is set
        resource_tracker.ensure_running()
        self.previous: set[int | signal.Signals] | None = signal.pthread_sigmask(signal.SIG_BLOCK, TERMINAL_SIGNALS)

    def release(self) -> None:
        """Restore the mask (once); a signal held meanwhile is delivered now (Ctrl-C: KeyboardInterrupt)."""
        if self.previous is not None:
            previous, self.previous = self.previous, None
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def live_workers(client: Any) -> dict[str, int]:
    """worker address -> threads, asked of the scheduler now (not a cached view)."""
    return dict(client.nthreads())


Hosts = dict[str, list[tuple[str, HostIdentity]]]


def survey(client: Any, note: Note, timeout: float | None = None) -> tuple[Hosts, dict[str, str]]:
    """(host -> [(worker address, identity)], worker -> why it was left out): workers that cannot run
    flamegraph, or do not answer within `timeout` seconds (a frozen worker), are left out."""
    timeout = SURVEY_TIMEOUT if timeout is None else timeout
    try:
        answers = client.run(host_identity, on_error="return", callback_timeout=timeout)
    except TimeoutError:  # someone is not answering: ask each worker alone, to learn who
        answers = {}
        for worker in sorted(live_workers(client)):
            try:
                answers.update(client.run(host_identity, workers=[worker], on_error="return", callback_timeout=timeout))
            except TimeoutError:
                answers[worker] = TimeoutError(f"no answer within {timeout:g} s")
    if not answers:
        raise ClusterUnavailable("the Dask cluster has no workers")
    hosts: Hosts = {}
    left_out: dict[str, str] = {}
    mine = installed_version()
    for worker, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):
            left_out[worker] = (
                f"its worker did not say who it is within {timeout:g} s (frozen?)"
                if isinstance(answer, TimeoutError)
                else f"its worker cannot run flamegraph ({type(answer).__name__}: {answer})"
            )
            continue
        if answer.flamegraph != mine:
            note(f"flamegraph: worker {worker} ({answer.host}) has flamegraph {answer.flamegraph}, this client {mine}")
        hosts.setdefault(answer.host, []).append((worker, answer))
    if not hosts:
        why = "; ".join(f"{worker}: {reason}" for worker, reason in left_out.items())
        raise ClusterUnavailable(f"no worker of the Dask cluster can run flamegraph ({why}): {INSTALL_HINT} there")
    return hosts, left_out


def run_host_task(request: HostRequest, identity: HostIdentity, worker: str, stop_event: str) -> HostResult:
    """The task on a host's worker: `record_host` watching the client's stop Event."""
    from distributed import Event, get_worker

    event = Event(stop_event)
    scratch = Path(get_worker().local_directory)  # Dask removes it with the worker, should we be killed

    def stop(seconds: float) -> bool:
        return bool(event.wait(seconds)) if seconds > 0 else bool(event.is_set())

    return record_host(request, identity, worker, stop, scratch)


class _Watch:
    """The client's view of the running tasks: one per host, each with its worker and its deadline."""

    def __init__(self, hosts: Hosts, grace: float, start_allowance: float) -> None:
        self.hosts = hosts
        self.grace = grace
        self.start_allowance = start_allowance
        self.results: dict[str, HostResult] = {}
        self.pending: dict[str, Any] = {}  # host -> future
        self.started: dict[str, float] = {}

    def missing(self, host: str, reason: str) -> None:
        worker, identity = self.hosts[host][0]
        self.results[host] = HostResult(
            host, MISSING, worker=worker, workers=len(self.hosts[host]), simulated=identity.simulated, reason=reason
        )
        future = self.pending.pop(host, None)
        if future is not None:
            future.cancel()


@dataclass
class FleetRecording:
    results: list[HostResult]  # one per host, sorted by host
    stop_signal: int | None = None  # SIGINT (Ctrl-C), SIGTERM or SIGHUP if one stopped the hosts early


def record_fleet(
    client: Any, request: HostRequest, grace: float, note: Note, start_allowance: float = START_ALLOWANCE
) -> FleetRecording:
    """Record every host of the cluster once; one result per host, whatever happened. A worker that could
    not say who it is stands for a missing host under its address."""
    distributed = _distributed()
    hosts, left_out = survey(client, note)
    run = uuid.uuid4().hex[:12]
    event = distributed.Event(f"flamegraph-fleet-stop-{run}", client=client)
    watch = _Watch(hosts, grace, start_allowance)
    for host, members in hosts.items():
        worker, identity = members[0]
        watch.pending[host] = client.submit(
            run_host_task,
            request,
            identity,
            worker,
            event.name,
            key=f"flamegraph-fleet-record-{host}-{run}",
            workers=[worker],
            allow_other_workers=False,
            pure=False,
            retries=0,
        )
        watch.started[host] = time.monotonic()
    note(f"flamegraph: recording {len(hosts)} host{'s' * (len(hosts) != 1)} for {request.duration:g} s")
    try:
        signum = _watch(client, distributed, watch, request.duration, event, note)
    finally:
        event.set()  # whatever happened here, no host keeps recording
        for future in watch.pending.values():
            future.cancel()
    for result in watch.results.values():
        result.workers = len(hosts[result.host])
    for worker, reason in left_out.items():
        watch.results[worker] = HostResult(worker, MISSING, worker=worker, reason=reason)
    return FleetRecording([watch.results[host] for host in sorted(watch.results)], signum)


def _watch(client: Any, distributed: Any, watch: _Watch, duration: float, event: Any, note: Note) -> int | None:
    """Polls until every host answered or is missing; returns the signal that stopped them early, if any."""
    stopping_since: float | None = None
    signum: int | None = None
    with stopping_on_signals():  # the one path: SIGTERM and SIGHUP stop the hosts as Ctrl-C does
        while watch.pending:
            try:
                _poll(client, distributed, watch, duration, stopping_since)
            except (KeyboardInterrupt, StopSignal) as stop:
                name = "Ctrl-C" if not isinstance(stop, StopSignal) else signal.Signals(stop.signum).name
                if stopping_since is not None:
                    for host in list(watch.pending):
                        watch.missing(host, f"abandoned by a second {name} while it was still recording or folding")
                    break
                signum = stop.signum if isinstance(stop, StopSignal) else signal.SIGINT
                stopping_since = time.monotonic()
                event.set()
                note(f"flamegraph: {name}: stopping every host's recording ({name} again abandons those still folding)")
    return signum


def _poll(client: Any, distributed: Any, watch: _Watch, duration: float, stopping_since: float | None) -> None:
    futures = list(watch.pending.values())
    try:
        distributed.wait(futures, timeout=POLL, return_when="FIRST_COMPLETED")
    except TimeoutError:
        pass  # none finished in this poll
    for host, future in list(watch.pending.items()):
        if future.done():
            watch.pending.pop(host)
            watch.results[host] = _outcome(watch, host, future)
    if not watch.pending:
        return
    alive = live_workers(client)
    now = time.monotonic()
    for host in list(watch.pending):
        worker = watch.hosts[host][0][0]
        limit = duration + watch.grace + watch.start_allowance
        if worker not in alive:
            watch.missing(host, f"its worker {worker} left the cluster during the recording (died or was stopped)")
        elif now - watch.started[host] > limit:
            watch.missing(host, f"no answer {limit:g} s after it started (--duration + --grace + start-up): hung")
        elif stopping_since is not None and now - stopping_since > watch.grace:
            watch.missing(host, f"no answer {watch.grace:g} s after Ctrl-C stopped it (--grace)")


def _outcome(watch: _Watch, host: str, future: Any) -> HostResult:
    """A finished task's HostResult; a task that raised is that host's failure (a bug shows its type)."""
    worker, identity = watch.hosts[host][0]
    try:
        return future.result()  # type: ignore[no-any-return]
    except Exception as err:  # noqa: BLE001 - one host's failure must not lose the others' profiles
        kind = type(err).__name__
        reason = f"its worker died while recording ({kind})" if kind == "KilledWorker" else f"{kind}: {err}"
        return HostResult(host, FAILED, worker=worker, simulated=identity.simulated, reason=reason)
