"""`flamegraph fleet record`, `fleet diff` and `fold --scheduler` on real Dask clusters on this machine.

Hosts are simulated honestly: each `dask worker` process gets FLAMEGRAPH_FLEET_HOST=<its --name>,
the documented override of the host name (the header then says the names were simulated). The
simulated hosts share one machine, so one process table: a `--match` pattern would find every
host's workload on each of them. Per-host workloads are therefore launched (`-- CMD`), each picking
its function by its host's name; `--match` is tested where one machine is one host (LocalCluster).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.children import interruptible
from helpers.extras import need
from helpers.fleet import FLAMEGRAPH, TcpCluster, fleet_perfs, has_events, tcp_cluster, wait_for

from flamegraph.fleet.fold import ChunkFold, merge_folds, plan_chunks
from flamegraph.fleet.hosts import command_line, matching_processes
from flamegraph.fleet.merge import fleet_metadata, merge_hosts, root_frame
from flamegraph.fleet.model import FAILED, MISSING, OK, HostRequest, HostResult, Target
from flamegraph.fleet.outlier import find_outlier, split_by_root
from flamegraph.io.diagnostics import (
    EXIT_NO_CLUSTER,
    EXIT_NO_PERF,
    EXIT_NO_PROCESS,
    EXIT_NOT_PERMITTED,
    EXIT_PARTIAL,
    Diagnostics,
    Problem,
)
from flamegraph.io.folded import read_folded
from flamegraph.model import FoldedProfile

pytestmark = pytest.mark.fleet

# alpha compresses (zlib: deflate), every other host hashes (libcrypto: SHA256_Update), for argv[1] seconds.
WORKLOAD = """
import os, sys, time
data = bytes(range(256)) * 4096
if os.environ.get("FLAMEGRAPH_FLEET_HOST") == "alpha":
    import zlib  # (each host loads only its own library: importing hashlib runs libcrypto's set-up)
    work = lambda: zlib.compress(data, 6)
else:
    import hashlib
    work = lambda: hashlib.sha256(data).digest()
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    work()
"""
FAST = ["-F", "199", "--call-graph", "fp"]  # the graph's names do not need DWARF here; folding stays quick


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FLAMEGRAPH, *args], capture_output=True, text=True, timeout=timeout)


def load(path: Path) -> FoldedProfile:
    with open(path, "rb") as f:
        return read_folded(f, str(path), Diagnostics())


def share(profile: FoldedProfile, *needles: str) -> float:
    """The share of samples whose stack holds any of `needles`."""
    return sum(w for s, w in profile.counts.items() if any(n in s for n in needles)) / profile.total


# -- a real `dask scheduler` and `dask worker`s over TCP on 127.0.0.1 ------------------------------------


@pytest.fixture(scope="module")
def tcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TcpCluster]:
    with tcp_cluster(tmp_path_factory.mktemp("dask"), "alpha", "beta") as cluster:
        yield cluster


# -- pure parts: no cluster --------------------------------------------------------------------------


def result(host: str, counts: dict[str, float], **kw: object) -> HostResult:
    meta = {"event": "cpu-clock", "perf": "6.1", "kernel": "6.1.0"}
    return HostResult(host, OK, profile=FoldedProfile(dict(counts), event="cpu-clock", metadata=meta), **kw)  # type: ignore[arg-type]


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
def test_merge_sums_hosts_or_roots_them_per_host() -> None:
    results = [result("a", {"p;f": 3}), result("b b", {"p;f": 1, "p;g": 2}), HostResult("c", MISSING, reason="x")]
    assert merge_hosts(results).counts == {"p;f": 4, "p;g": 2}
    assert merge_hosts(results, per_host=True).counts == {"a;p;f": 3, "b_b;p;f": 1, "b_b;p;g": 2}
    assert root_frame("x;y z") == "x_y_z"
    meta = fleet_metadata(results, "the whole machine", "tcp://s:8786", 5)
    assert meta["fleet"] == "2 of 3 hosts answered (tcp://s:8786)"
    assert meta["host a"].startswith("3 samples (50.0 %)") and "perf 6.1, kernel 6.1.0" in meta["host a"]
    assert meta["host c"] == "missing: x" and meta["missing"] == "c (x)"
    assert meta["event"] == "cpu-clock"


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
def test_outlier_is_the_host_unlike_the_others() -> None:
    same = {"p;main;work": 90, "p;main;io": 10}
    profiles = {f"h{i}": FoldedProfile(dict(same)) for i in range(4)}
    profiles["h2"] = FoldedProfile({"p;main;work": 40, "p;main;lock": 60})
    found = find_outlier(profiles)
    assert found.host == "h2" and found.distance == pytest.approx(0.6)
    assert [host for host, _ in found.ranking][0] == "h2" and found.ranking[1][1] < 0.2
    assert found.mean.counts == pytest.approx({"p;main;work": 0.9, "p;main;io": 0.1})  # the others' mean
    assert split_by_root(FoldedProfile({"h1;p;f": 2, "h2;p;g": 1}))["h2"].counts == {"p;g": 1}


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
def test_matching_skips_this_process_and_its_ancestors() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "fleet-match-marker"])
    try:
        wait_for(lambda: command_line(child.pid), 10, "the child's command line")  # empty until it first runs
        found = matching_processes("fleet-match-marker")
        assert list(found) == [child.pid]
        assert os.getpid() not in matching_processes("python|pytest")  # this process asks: never recorded
    finally:
        child.kill()
        child.wait()


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
def test_fold_merge_shifts_line_numbers_in_file_order() -> None:
    def part(lines: int, line: int) -> ChunkFold:
        problem = Problem("f.txt", line, "bad-header", "x")
        return ChunkFold({"a": 1}, problems=[(0, problem)], lines={0: lines})

    merged = merge_folds([merge_folds([part(10, 3), part(7, 2)]), part(5, 1)])
    assert [p.line for _, p in merged.problems] == [3, 12, 18] and merged.counts == {"a": 3}


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
def test_fold_refuses_what_workers_cannot_read(tmp_path: Path) -> None:
    data = tmp_path / "perf.data"
    data.write_bytes(b"PERFILE2" + bytes(100))
    for inputs, needle in ((["-"], "stdin"), ([str(data)], "where it was recorded")):
        with pytest.raises(Exception, match=needle):
            plan_chunks(inputs, 2)


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
def test_fleet_diff_draws_the_straggler_from_folded_files(tmp_path: Path) -> None:
    per_host = tmp_path / "fleet.folded"
    lines = [f"h{i};p;main;work 90\nh{i};p;main;io 10\n" for i in (1, 2, 4)]
    lines.append("h3;p;main;work 30\nh3;p;main;lock 70\n")
    per_host.write_text("".join(lines))
    svg = tmp_path / "out.svg"
    proc = run_cli("fleet", "diff", str(per_host), "-o", str(svg))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0].startswith("h3: 70.0 %") and "h3 differs most" in proc.stderr
    text = svg.read_text()
    assert "h3 against the rest of the fleet" in text and "lock" in text
    for name, body in (("a.folded", "p;f 5\n"), ("b.folded", "p;g 5\n")):
        (tmp_path / name).write_text(body)
    proc = run_cli("fleet", "diff", str(tmp_path / "a.folded"), str(tmp_path / "b.folded"), "-o", str(svg))
    assert proc.returncode == 0 and "a: 100.0 %" in proc.stderr  # two hosts: equally far, the first by name
    proc = run_cli("fleet", "diff", str(tmp_path / "a.folded"), "-o", str(svg))
    assert proc.returncode == 2 and "at least two hosts" in proc.stderr


# -- fold --scheduler ----------------------------------------------------------------------------------


def test_fold_on_cluster_equals_local_fold(tcp: TcpCluster, shared: Path, tmp_path: Path) -> None:
    """Several record-aligned chunks per text file, a .gz as one, the same file twice, malformed records
    in more than one chunk: the folded bytes and stderr are a local fold's."""
    import gzip

    text = gzip.decompress((shared / "peer-tests/flamegraph-pl/example-perf-stacks.txt.gz").read_bytes())
    broken = text.replace(b"\n\n", b"\n\nnot a header\n\n", 30)  # bad records in the first chunk
    big = tmp_path / "big.txt"
    big.write_bytes(broken + text * 3 + broken[-400_000:].partition(b"\n\n")[2])  # ~12 MB, bad ones late too
    small_gz = tmp_path / "small.txt.gz"
    small_gz.write_bytes(gzip.compress(text[:200_000].rpartition(b"\n\n")[0] + b"\n\n"))
    inputs = [str(big), str(small_gz), str(big)]
    chunks = plan_chunks(inputs, 2)
    assert len([c for c in chunks if c.index == 0]) >= 2 and len([c for c in chunks if c.index == 1]) == 1
    local = run_cli("fold", *inputs, "-o", str(tmp_path / "local.folded"))
    remote = run_cli("fold", "--scheduler", tcp.address, *inputs, "-o", str(tmp_path / "remote.folded"))
    assert local.returncode == remote.returncode == 0, remote.stderr
    assert (tmp_path / "local.folded").read_bytes() == (tmp_path / "remote.folded").read_bytes()
    assert local.stderr == remote.stderr and "bad-header" in remote.stderr and "skipped" in remote.stderr


# -- fleet record on the TCP cluster -------------------------------------------------------------------


@pytest.mark.perf
def test_each_host_records_its_own_workload(tcp: TcpCluster, tmp_path: Path) -> None:
    svg, folded, outlier = tmp_path / "fleet.svg", tmp_path / "fleet.folded", tmp_path / "outlier.svg"
    args = ["--scheduler", tcp.address, "--duration", "2", "--per-host", "-F", "199"]  # DWARF: names in libz too
    proc = run_cli(
        "fleet", "record", *args, "-o", str(svg), "--folded", str(folded), "--outlier", str(outlier),
        "--", sys.executable, "-c", WORKLOAD, "4",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    profile = load(folded)
    hosts = split_by_root(profile)
    assert set(hosts) == {"alpha", "beta"}
    work = {"alpha": ("deflate", "libz"), "beta": ("SHA256_Update", "libcrypto")}  # function, its library
    for host, other in (("alpha", "beta"), ("beta", "alpha")):
        function, library = work[host]
        # Its function, by name, under its root, and none of the other host's. (How much of a host's time
        # its loop gets depends on how fast Python started under perf: on a loaded machine, most of 2 s.)
        assert share(hosts[host], function) > 0, (host, function)
        assert share(hosts[host], *work[other]) == 0, (host, work[other])
        assert 0.15 < hosts[host].total / profile.total < 0.85  # both busy for the same time: similar shares
    text = svg.read_text()
    for fact in ("2 of 2 hosts answered", "simulated hosts", "roots ", "perf CPU"):
        assert fact in text, fact
    for host in hosts:  # the per-host table gives each host's samples and share of the merged graph
        row = f"host {host}: {hosts[host].total:,.0f} samples ({100 * hosts[host].total / profile.total:.1f} %)"
        assert row in text, row
    assert "differs most" in proc.stderr and "against the rest of the fleet" in outlier.read_text()


@pytest.mark.perf
def test_ctrl_c_stops_every_host_and_still_merges(tcp: TcpCluster, tmp_path: Path) -> None:
    svg = tmp_path / "fleet.svg"
    argv = [*FLAMEGRAPH, "fleet", "record", "--scheduler", tcp.address, "--duration", "60", *FAST, "--per-host"]
    client = subprocess.Popen(
        [*argv, "--folded", str(tmp_path / "f"), "-o", str(svg), "--", sys.executable, "-c", WORKLOAD, "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    try:
        # perf processes alone are not enough on a loaded machine: wait until both hold their events open
        wait_for(lambda: sum(map(has_events, fleet_perfs())) >= 2, 60, "both hosts recording")
        time.sleep(2.0)
        client.send_signal(signal.SIGINT)
        out, err = client.communicate(timeout=60)
    finally:
        client.kill()
    assert client.returncode == 0, err
    assert "stopping every host's recording" in err
    assert set(split_by_root(load(tmp_path / "f"))) == {"alpha", "beta"}
    assert "2 of 2 hosts answered" in svg.read_text()
    wait_for(lambda: not fleet_perfs(), 10, "no perf left")


@pytest.mark.perf
def test_killed_worker_gives_a_partial_graph(tcp: TcpCluster, tmp_path: Path) -> None:
    gamma = tcp.add_worker("gamma")
    tcp.wait_workers("gamma")
    folded, svg = tmp_path / "f", tmp_path / "fleet.svg"
    argv = [*FLAMEGRAPH, "fleet", "record", "--scheduler", tcp.address, "--duration", "3", "--per-host", *FAST]
    client = subprocess.Popen(
        [*argv, "--folded", str(folded), "-o", str(svg), "--", sys.executable, "-c", WORKLOAD, "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: _perf_under(gamma.pid), 60, "gamma recording")
        gamma.kill()  # the worker dies mid-recording
        tcp.workers.pop("gamma")
        out, err = client.communicate(timeout=90)
    finally:
        client.kill()
    assert client.returncode == EXIT_PARTIAL, err
    assert "gamma" in err and "left the cluster" in err
    assert set(split_by_root(load(folded))) == {"alpha", "beta"}
    text = svg.read_text()
    assert "2 of 3 hosts answered" in text and "host gamma: missing: its worker" in text
    wait_for(lambda: not fleet_perfs(), 15, "no perf left (the killed host's included)")


def _perf_under(pid: int) -> bool:
    from flamegraph.fleet.hosts import children

    return any(child in fleet_perfs() for child in children(pid))


@pytest.mark.perf
def test_faulty_hosts_are_named_with_their_reason(tcp: TcpCluster, tmp_path: Path) -> None:
    """No perf on one host, perf refused on another (its worker runs as nobody: perf_event_paranoid
    refuses --all-cpus), a third frozen: the others still draw; each missing host says why."""
    if Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip() in ("-1", "0"):
        pytest.skip("perf_event_paranoid lets every user record the whole machine: nothing refuses")
    tcp.add_worker("noperf", {"PATH": str(tmp_path / "empty")})
    tcp.add_worker("refused", prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"))
    frozen = tcp.add_worker("frozen")
    tcp.wait_workers("noperf", "refused", "frozen")
    marker = f"fleet-faults-{os.getpid()}"
    workload = subprocess.Popen([sys.executable, "-c", WORKLOAD, "60", marker])
    request = HostRequest(Target(match=marker), 1.0, freq=99, call_graph="fp")
    notes: list[str] = []
    from flamegraph.fleet.cluster import record_fleet

    outcome: list[object] = []
    try:
        with need("distributed").Client(tcp.address, timeout=10) as client:
            thread = threading.Thread(
                target=lambda: outcome.append(record_fleet(client, request, 8.0, notes.append, start_allowance=2.0))
            )
            thread.start()
            wait_for(lambda: _perf_under(frozen.pid), 60, "frozen recording")
            os.kill(frozen.pid, signal.SIGSTOP)  # hangs past --duration + --grace
            thread.join(timeout=60)
    finally:
        workload.kill()
        os.kill(frozen.pid, signal.SIGKILL)
        tcp.workers.pop("frozen").wait()
        for name in ("noperf", "refused"):
            tcp.remove(name)
    results = {r.host: r for r in outcome[0].results}  # type: ignore[attr-defined]
    assert results["alpha"].state == results["beta"].state == OK, [(r.host, r.reason) for r in results.values()]
    assert results["noperf"].state == FAILED and results["noperf"].exit_code == EXIT_NO_PERF
    assert "perf is not installed" in results["noperf"].reason
    assert results["refused"].state == FAILED and results["refused"].exit_code == EXIT_NOT_PERMITTED
    assert results["frozen"].state == MISSING and "hung" in results["frozen"].reason
    meta = fleet_metadata(list(results.values()), "t", "s", 1.0)
    assert meta["fleet"].startswith("2 of 5 hosts answered") and "noperf (perf is not installed" in meta["missing"]


@pytest.mark.perf
def test_no_matching_process_anywhere(tcp: TcpCluster, tmp_path: Path) -> None:
    proc = run_cli(
        "fleet", "record", "--scheduler", tcp.address, "--match", "no-such-process-[0-9]{9}", "--duration", "1",
        "-o", str(tmp_path / "x.svg"),
    )  # fmt: skip
    assert proc.returncode == EXIT_NO_PROCESS, proc.stderr
    assert "alpha: failed: no process matches" in proc.stderr and not (tmp_path / "x.svg").exists()


# -- LocalCluster: one machine, two workers, one host ---------------------------------------------------


@pytest.mark.perf
def test_local_cluster_records_a_host_once(tmp_path: Path) -> None:
    need("distributed")
    marker = f"fleet-local-{os.getpid()}"
    workload = subprocess.Popen([sys.executable, "-c", WORKLOAD, "40", marker])
    try:
        folded, svg = tmp_path / "f", tmp_path / "fleet.svg"
        proc = run_cli(
            "fleet", "record", "--scheduler", "local:2", "--match", marker, "--duration", "1.5", "-F", "199",
            "--folded", str(folded), "-o", str(svg),
        )  # fmt: skip
    finally:
        workload.kill()
        workload.wait()
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("samples in") == 1  # one host, one recording
    text = svg.read_text()
    assert "2 workers on this host, recorded once" in text and "1 process" in text
    assert share(load(folded), "SHA256") > 0.5  # this host is not "alpha": it hashes


@pytest.mark.parametrize(
    ("script", "status", "said"),
    [("exit 9", 9, "the command exited with status 9"), ("kill -SEGV $$", 139, "the command was killed by SIGSEGV"),
     ("exit 0", 0, None)],
    ids=["status", "signal", "success"],
)  # fmt: skip
def test_fleet_record_passes_the_commands_status_on_as_record_does(
    tmp_path: Path, script: str, status: int, said: str | None
) -> None:
    """`fleet record -- pytest` must fail when the tests fail (newcomer10 b-10: exit 0, the status only in a
    host's notes): the graph is drawn, one line names the status and the host, and it is the exit status."""
    need("distributed")
    busy = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; "
    proc = run_cli("fleet", "record", "--scheduler", "local:1", "--duration", "30", "-F", "199",
                   "-o", str(tmp_path / "fleet.svg"), "--", "sh", "-c", busy + script)  # fmt: skip
    assert proc.returncode == status, proc.stderr
    assert (tmp_path / "fleet.svg").exists()
    last = proc.stderr.strip().splitlines()[-1]
    if said is None:
        assert "flamegraph: exit" not in proc.stderr
    else:
        assert re.fullmatch(rf"flamegraph: exit {status}: {said} on \S+ \(the graph was drawn\)", last), last


# Start the LocalCluster of `--scheduler local:1` while 8787 (Dask's dashboard port) is taken; ask every HTTP
# server it opened for the pages Dask serves by default. A script: its workers re-import __main__.
HTTP_PROBE = """
import json, socket, sys, urllib.error, urllib.request, warnings
def status(host, port, path):
    try:
        return urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=10).status
    except urllib.error.HTTPError as err:
        return err.code
def main():
    held = socket.socket()
    try:
        held.bind(("127.0.0.1", 8787)); held.listen(1)
    except OSError:
        pass  # held by someone else: taken either way
    import distributed
    from flamegraph.fleet.cluster import _local_cluster
    found = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _local_cluster(distributed, 1) as cluster, distributed.Client(cluster) as client:
            servers = {"scheduler": [s.getsockname() for s in cluster.scheduler.http_server._sockets.values()]}
            for addrs in client.run(lambda dask_worker: [s.getsockname() for s in
                                                         dask_worker.http_server._sockets.values()]).values():
                servers["worker"] = addrs
            for who, addrs in servers.items():
                found[who] = [[host, {path: status(host, port, path) for path in ("/health", "/metrics",
                              "/info/main/workers.html", "/json/counts.json", "/status")}] for host, port in addrs]
    print(json.dumps({"servers": found, "warnings": [str(w.message) for w in caught if "8787" in str(w.message)]}))
if __name__ == "__main__":
    main()
"""


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
def test_the_local_cluster_serves_no_dashboard_and_fights_no_one_for_8787(tmp_path: Path) -> None:
    """newcomer10 b-25: `dashboard_address=None` still started Dask's HTTP servers, the scheduler's on 8787
    or, that port taken, on another with Dask's warning on stderr, serving its info pages, JSON and
    metrics to any local user. Now on free ports of 127.0.0.1, serving nothing, without a warning."""
    need("distributed")
    script = tmp_path / "probe.py"
    script.write_text(HTTP_PROBE)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["warnings"] == [] and "8787" not in done.stderr
    assert set(said["servers"]) == {"scheduler", "worker"}, said
    for who, servers in said["servers"].items():
        for host, pages in servers:
            assert host == "127.0.0.1" and set(pages.values()) == {404}, (who, host, pages)


# -- without Dask ----------------------------------------------------------------------------------------

NO_DASK = "import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None; "


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
def test_library_and_other_commands_run_without_dask(tmp_path: Path) -> None:
    """Dask is the fleet extra's: `flamegraph --help` and every other command never import it, and a
    fleet command without it says how to install it (exit 11), without a traceback."""
    code = NO_DASK + (
        "import flamegraph, flamegraph.fleet.cluster, flamegraph.fleet.fold, flamegraph.cli as c; "
        "c.register_commands([]); print('ok')"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert ran.stdout.strip() == "ok", ran.stderr
    code = "import sys, flamegraph.cli as c; c.register_commands([]); "
    code += "print(sorted({'dask', 'distributed'} & {*sys.modules}))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"
    code = NO_DASK + "from flamegraph.cli import main; sys.argv = ['flamegraph'] + sys.argv[1:]; main()"
    args = ["fleet", "record", "--all-cpus", "--duration", "1", "-o", str(tmp_path / "x.svg")]
    ran = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    assert ran.returncode == EXIT_NO_CLUSTER and "pip install 'flamegraph-perf[fleet]'" in ran.stderr
    assert "Traceback" not in ran.stderr
    args = ["fold", "--scheduler", "local", str(tmp_path / "x")]
    ran = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    assert ran.returncode == 4 and "no such file" in ran.stderr  # input checks come before the cluster


@pytest.mark.parallel  # no perf, no shared cluster, no tight bound: passes beside two busy loops
def test_a_python_312_command_is_said_to_get_no_python_frames(tmp_path: Path) -> None:
    """fleet records no Python frames (flamegraph record does): one line for a 3.12+ command, none for 3.11
    (record's own note says that one) nor for a program that is no Python."""
    from flamegraph.fleet.tasks import python_frames_note

    for release in ("3.12", "3.11"):
        interpreter = tmp_path / f"python{release}"
        interpreter.write_text("#!/bin/sh\n")
        interpreter.chmod(0o755)
        said = python_frames_note((str(interpreter), "train.py"))
        if release == "3.12":
            assert said == (f"{interpreter} is Python 3.12: fleet records no Python frames, only the interpreter's C "
                            "functions (flamegraph record -- COMMAND draws its Python functions)")  # fmt: skip
        else:
            assert said is None
    assert python_frames_note(("/bin/sleep", "1")) is None
